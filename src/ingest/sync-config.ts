import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { IDENTIFIER_PATTERN } from '../core/identifier';

/** A config file that cannot be used: the message names the key and the rule. */
export class SyncConfigError extends Error {}

export type UnknownInitiatives = 'create' | 'refuse';

export interface KubernetesConfig {
  kubeconfig: string | null;
  context: string | null;
  namespaces: string[] | null;
  clusterId: string | null;
  initiativeLabel: string;
  initiativeByNamespace: Record<string, string>;
  defaultInitiative: string | null;
  submitterLabel: string;
  defaultSubmitter: string | null;
  instanceTypeLabel: string;
  gpuResource: string;
  /** Share of one GPU per instance of MIG profiles not built in (or overriding a built-in one). */
  migProfiles: Record<string, number>;
  isManaged: boolean;
  timeoutSeconds: number;
}

export type RatioUnit = 'auto' | 'ratio' | 'percent';

export interface PrometheusConfig {
  url: string;
  stepSeconds: number;
  basicAuth: { username: string; password: string } | null;
  bearerToken: string | null;
  backfillHours: number;
  overlapSeconds: number;
  lagSeconds: number;
  windowPoints: number;
  timeoutSeconds: number;
  grEngineActiveUnit: RatioUnit;
}

export interface SlurmConfig {
  sacctJsonFile: string | null;
  sacctCommand: string[];
  jobLabel: string;
  clusterId: string | null;
  initiativeByAccount: Record<string, string>;
  defaultInitiative: string | null;
  instanceTypeByPartition: Record<string, string>;
  /** Share of one GPU per device of a gres type (`gpu:<type>`), for site-named MIG-like types. */
  gpuShareByType: Record<string, number>;
  isManaged: boolean;
  timeoutSeconds: number;
}

/** The sources of one cluster: a `clusters[]` entry, or the top-level sections. */
export interface ClusterSources {
  kubernetes: KubernetesConfig | null;
  prometheus: PrometheusConfig | null;
  slurm: SlurmConfig | null;
}

/** A `clusters[]` entry: its id names its workloads (`cluster_id`) and keys its watermarks. */
export interface ClusterConfig extends ClusterSources {
  clusterId: string;
}

export interface SyncConfig extends ClusterSources {
  organizationId: string;
  unknownInitiatives: UnknownInitiatives;
  /** Further clusters, each synced on its own; the top-level sections stay one cluster of their own. */
  clusters: ClusterConfig[];
}

/** Prometheus refuses a range query of more than 11,000 points per series. */
export const PROMETHEUS_MAX_POINTS = 11_000;
export const DEFAULT_SACCT_COMMAND = ['sacct', '--json', '--allusers'];

type Json = Record<string, unknown>;

/** Reads a JSON or YAML sync config (YAML is a superset of JSON); relative paths are from its folder. */
export function loadSyncConfig(file: string): SyncConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new SyncConfigError(`cannot read the config file '${file}'`);
  }
  let document: unknown;
  try {
    document = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new SyncConfigError(`'${file}' is not valid JSON or YAML: ${(error as Error).message}`);
  }
  return parseSyncConfig(document, dirname(resolve(file)));
}

export function parseSyncConfig(document: unknown, baseDirectory: string): SyncConfig {
  const root = section(document, 'the config');
  knownKeys(root, '', [
    'organization_id',
    'unknown_initiatives',
    'kubernetes',
    'prometheus',
    'slurm',
    'clusters',
  ]);
  const config: SyncConfig = {
    organizationId: identifier(root, 'organization_id', ''),
    unknownInitiatives: oneOf(root, 'unknown_initiatives', '', ['create', 'refuse'], 'refuse'),
    ...clusterSources(root, '', baseDirectory),
    clusters: [],
  };
  config.clusters = clustersConfig(root.clusters, config, baseDirectory);
  if (!config.kubernetes && !config.prometheus && !config.slurm && config.clusters.length === 0) {
    throw new SyncConfigError(
      'the config names no source: add kubernetes, prometheus and/or slurm (or clusters)',
    );
  }
  return config;
}

function clusterSources(input: Json, at: string, base: string): ClusterSources {
  return {
    kubernetes: input.kubernetes == null ? null : kubernetesConfig(input.kubernetes, base, `${at}kubernetes`),
    prometheus: input.prometheus == null ? null : prometheusConfig(input.prometheus, base, `${at}prometheus`),
    slurm: input.slurm == null ? null : slurmConfig(input.slurm, base, `${at}slurm`),
  };
}

/**
 * `clusters`: each entry names its cluster and at least one source. Its id becomes the `cluster_id` of
 * the workloads its Kubernetes and Slurm sources write (so a `cluster_id` inside them must agree), and
 * must not repeat, nor be the top-level sources' own `cluster_id`: two configs would then cancel each
 * other's pods and share watermarks.
 */
function clustersConfig(value: unknown, root: ClusterSources, base: string): ClusterConfig[] {
  if (value == null) return [];
  if (!Array.isArray(value)) throw new SyncConfigError('clusters must be an array of objects');
  const taken = new Map<string, string>();
  for (const [key, source] of [
    ['kubernetes.cluster_id', root.kubernetes?.clusterId],
    ['slurm.cluster_id', root.slurm?.clusterId],
  ] as const) {
    if (source) taken.set(source, key);
  }
  return value.map((entry, position) => {
    const at = `clusters[${position}].`;
    const input = section(entry, `clusters[${position}]`);
    knownKeys(input, at, ['cluster_id', 'kubernetes', 'prometheus', 'slurm']);
    const clusterId = identifier(input, 'cluster_id', at);
    const earlier = taken.get(clusterId);
    if (earlier) {
      throw new SyncConfigError(`${at}cluster_id '${clusterId}' is already used by ${earlier}`);
    }
    taken.set(clusterId, `${at}cluster_id`);
    const sources = clusterSources(input, at, base);
    if (!sources.kubernetes && !sources.prometheus && !sources.slurm) {
      throw new SyncConfigError(
        `${at.slice(0, -1)} names no source: add kubernetes, prometheus and/or slurm`,
      );
    }
    for (const name of ['kubernetes', 'slurm'] as const) {
      const own = sources[name];
      if (!own) continue;
      if (own.clusterId !== null && own.clusterId !== clusterId) {
        throw new SyncConfigError(
          `${at}${name}.cluster_id must be left out or equal ${at}cluster_id ('${clusterId}')`,
        );
      }
      own.clusterId = clusterId;
    }
    return { clusterId, ...sources };
  });
}

function kubernetesConfig(value: unknown, base: string, name: string): KubernetesConfig {
  const at = `${name}.`;
  const input = section(value, name);
  knownKeys(input, at, [
    'kubeconfig',
    'context',
    'namespaces',
    'cluster_id',
    'initiative_label',
    'initiative_by_namespace',
    'default_initiative',
    'submitter_label',
    'default_submitter',
    'instance_type_label',
    'gpu_resource',
    'mig_profiles',
    'is_managed',
    'timeout_seconds',
  ]);
  const kubeconfig = optionalText(input, 'kubeconfig', at);
  return {
    kubeconfig: kubeconfig === null ? null : pathFrom(base, kubeconfig),
    context: optionalText(input, 'context', at),
    namespaces: input.namespaces == null ? null : textList(input, 'namespaces', at),
    clusterId: optionalText(input, 'cluster_id', at),
    initiativeLabel: optionalText(input, 'initiative_label', at) ?? 'gpucap.io/initiative',
    initiativeByNamespace: identifierMap(input, 'initiative_by_namespace', at),
    defaultInitiative: optionalIdentifier(input, 'default_initiative', at),
    submitterLabel: optionalText(input, 'submitter_label', at) ?? 'gpucap.io/submitted-by',
    defaultSubmitter: optionalText(input, 'default_submitter', at),
    instanceTypeLabel: optionalText(input, 'instance_type_label', at) ?? 'node.kubernetes.io/instance-type',
    gpuResource: optionalText(input, 'gpu_resource', at) ?? 'nvidia.com/gpu',
    migProfiles: shareMap(input, 'mig_profiles', at),
    isManaged: optionalBoolean(input, 'is_managed', at) ?? true,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 30),
  };
}

function prometheusConfig(value: unknown, base: string, name: string): PrometheusConfig {
  const at = `${name}.`;
  const input = section(value, name);
  knownKeys(input, at, [
    'url',
    'step_seconds',
    'basic_auth',
    'bearer_token',
    'bearer_token_file',
    'backfill_hours',
    'overlap_seconds',
    'lag_seconds',
    'window_points',
    'timeout_seconds',
    'gr_engine_active_unit',
  ]);
  const url = optionalText(input, 'url', at);
  if (!url || !/^https?:\/\/[^\s]+$/.test(url)) {
    throw new SyncConfigError(`${at}url is required: an http(s) URL such as http://127.0.0.1:9090`);
  }
  const stepSeconds = positiveInteger(input, 'step_seconds', at, 60);
  const windowPoints = positiveInteger(input, 'window_points', at, 60);
  if (windowPoints > PROMETHEUS_MAX_POINTS) {
    throw new SyncConfigError(
      `${at}window_points must be at most ${PROMETHEUS_MAX_POINTS} (Prometheus' limit)`,
    );
  }
  return {
    url: url.replace(/\/+$/, ''),
    stepSeconds,
    basicAuth: basicAuth(input.basic_auth, base, at),
    bearerToken: bearerToken(input, base, at),
    backfillHours: positiveNumber(input, 'backfill_hours', at, 24),
    overlapSeconds: nonNegativeNumber(input, 'overlap_seconds', at, 600),
    lagSeconds: nonNegativeNumber(input, 'lag_seconds', at, 0),
    windowPoints,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 60),
    grEngineActiveUnit: oneOf(input, 'gr_engine_active_unit', at, ['auto', 'ratio', 'percent'], 'auto'),
  };
}

function slurmConfig(value: unknown, base: string, name: string): SlurmConfig {
  const at = `${name}.`;
  const input = section(value, name);
  knownKeys(input, at, [
    'sacct_json_file',
    'sacct_command',
    'job_label',
    'cluster_id',
    'initiative_by_account',
    'default_initiative',
    'instance_type_by_partition',
    'gpu_share_by_type',
    'is_managed',
    'timeout_seconds',
  ]);
  const file = optionalText(input, 'sacct_json_file', at);
  if (file !== null && input.sacct_command != null) {
    throw new SyncConfigError(`${at}sacct_json_file and ${at}sacct_command exclude each other: give one`);
  }
  const command = input.sacct_command == null ? DEFAULT_SACCT_COMMAND : textList(input, 'sacct_command', at);
  if (command.length === 0) throw new SyncConfigError(`${at}sacct_command must name a program`);
  return {
    sacctJsonFile: file === null ? null : pathFrom(base, file),
    sacctCommand: command,
    jobLabel: optionalText(input, 'job_label', at) ?? 'hpc_job',
    clusterId: optionalIdentifier(input, 'cluster_id', at),
    initiativeByAccount: identifierMap(input, 'initiative_by_account', at),
    defaultInitiative: optionalIdentifier(input, 'default_initiative', at),
    instanceTypeByPartition: identifierMap(input, 'instance_type_by_partition', at),
    gpuShareByType: shareMap(input, 'gpu_share_by_type', at),
    isManaged: optionalBoolean(input, 'is_managed', at) ?? true,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 120),
  };
}

function basicAuth(value: unknown, base: string, parent: string): PrometheusConfig['basicAuth'] {
  if (value == null) return null;
  const at = `${parent}basic_auth.`;
  const input = section(value, `${parent}basic_auth`);
  knownKeys(input, at, ['username', 'password', 'password_file']);
  const username = optionalText(input, 'username', at);
  const password = secret(input, 'password', at, base);
  if (username === null || password === null) {
    throw new SyncConfigError(`${at}username and a password (or password_file) are required`);
  }
  return { username, password };
}

function bearerToken(input: Json, base: string, at: string): string | null {
  if (input.bearer_token != null && input.bearer_token_file != null) {
    throw new SyncConfigError(`${at}bearer_token and ${at}bearer_token_file exclude each other`);
  }
  return secret(input, 'bearer_token', at, base);
}

/** A secret given inline or as `<key>_file` (read once, trailing newline dropped). */
function secret(input: Json, key: string, at: string, base: string): string | null {
  const inline = optionalText(input, key, at);
  const file = optionalText(input, `${key}_file`, at);
  if (file === null) return inline;
  try {
    return readFileSync(pathFrom(base, file), 'utf8').replace(/\r?\n$/, '');
  } catch {
    throw new SyncConfigError(`${at}${key}_file: cannot read '${file}'`);
  }
}

function pathFrom(base: string, path: string): string {
  return isAbsolute(path) ? path : resolve(base, path);
}

function section(value: unknown, name: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SyncConfigError(`${name} must be an object`);
  }
  return value as Json;
}

function knownKeys(input: Json, at: string, keys: string[]): void {
  const unknown = Object.keys(input).filter((key) => !keys.includes(key));
  if (unknown.length > 0) {
    throw new SyncConfigError(
      `unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `'${at}${key}'`).join(', ')}`,
    );
  }
}

function optionalText(input: Json, key: string, at: string): string | null {
  const value = input[key];
  if (value == null) return null;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new SyncConfigError(`${at}${key} must be a non-empty string`);
  }
  return value;
}

function identifier(input: Json, key: string, at: string): string {
  const value = optionalIdentifier(input, key, at);
  if (value === null) throw new SyncConfigError(`${at}${key} is required`);
  return value;
}

function optionalIdentifier(input: Json, key: string, at: string): string | null {
  const value = input[key];
  if (value == null) return null;
  if (typeof value !== 'string' || !IDENTIFIER_PATTERN.test(value)) {
    throw new SyncConfigError(
      `${at}${key} must be an identifier: 1 to 128 characters from A-Z a-z 0-9 . _ : -`,
    );
  }
  return value;
}

function identifierMap(input: Json, key: string, at: string): Record<string, string> {
  const value = input[key];
  if (value == null) return {};
  const map = section(value, `${at}${key}`);
  const result: Record<string, string> = {};
  for (const [from, to] of Object.entries(map)) {
    if (typeof to !== 'string' || !IDENTIFIER_PATTERN.test(to)) {
      throw new SyncConfigError(
        `${at}${key}.${from} must be an identifier (A-Z a-z 0-9 . _ : -, at most 128)`,
      );
    }
    result[from] = to;
  }
  return result;
}

/** Name → share of one GPU (greater than 0, at most 1), e.g. a MIG profile's 1/7. */
function shareMap(input: Json, key: string, at: string): Record<string, number> {
  const value = input[key];
  if (value == null) return {};
  const map = section(value, `${at}${key}`);
  const result: Record<string, number> = {};
  for (const [name, share] of Object.entries(map)) {
    if (name.trim() === '') throw new SyncConfigError(`${at}${key} has an empty name`);
    if (typeof share !== 'number' || !Number.isFinite(share) || share <= 0 || share > 1) {
      throw new SyncConfigError(
        `${at}${key}.${name} must be a number greater than 0 and at most 1 (the share of one GPU)`,
      );
    }
    result[name] = share;
  }
  return result;
}

function textList(input: Json, key: string, at: string): string[] {
  const value = input[key];
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item !== '')) {
    throw new SyncConfigError(`${at}${key} must be an array of non-empty strings`);
  }
  return value as string[];
}

function optionalBoolean(input: Json, key: string, at: string): boolean | null {
  const value = input[key];
  if (value == null) return null;
  if (typeof value !== 'boolean') throw new SyncConfigError(`${at}${key} must be true or false`);
  return value;
}

function positiveNumber(input: Json, key: string, at: string, fallback: number): number {
  const value = input[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SyncConfigError(`${at}${key} must be a number greater than 0`);
  }
  return value;
}

function nonNegativeNumber(input: Json, key: string, at: string, fallback: number): number {
  const value = input[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new SyncConfigError(`${at}${key} must be a number greater than or equal to 0`);
  }
  return value;
}

function positiveInteger(input: Json, key: string, at: string, fallback: number): number {
  const value = positiveNumber(input, key, at, fallback);
  if (!Number.isInteger(value)) throw new SyncConfigError(`${at}${key} must be a whole number`);
  return value;
}

function oneOf<T extends string>(input: Json, key: string, at: string, values: T[], fallback: T): T {
  const value = input[key] ?? fallback;
  if (!values.includes(value as T)) {
    throw new SyncConfigError(`${at}${key} must be one of ${values.join(', ')}`);
  }
  return value as T;
}

/** One cluster's sources as a run sees them. */
export interface SyncTarget extends ClusterSources {
  /** `''` for the top-level sources, else the `clusters[]` entry's `cluster_id`: it keys the watermarks. */
  cluster: string;
  /**
   * The workloads this cluster's DCGM series may join (pod and job names repeat across clusters): an
   * entry's own `cluster_id`; for the top-level sources every workload but the entries' (their
   * `cluster_id` comes from the kubeconfig or the jobs, so it cannot be named beforehand).
   */
  joinScope: { only: string } | { except: string[] };
}

/** The clusters a run syncs, in order: the top-level sources (when the config has any), then `clusters[]`. */
export function syncTargets(config: SyncConfig): SyncTarget[] {
  const entries = config.clusters.map((entry) => entry.clusterId);
  const targets: SyncTarget[] = [];
  if (config.kubernetes || config.prometheus || config.slurm) {
    targets.push({
      cluster: '',
      kubernetes: config.kubernetes,
      prometheus: config.prometheus,
      slurm: config.slurm,
      joinScope: { except: entries },
    });
  }
  for (const entry of config.clusters) {
    targets.push({
      cluster: entry.clusterId,
      kubernetes: entry.kubernetes,
      prometheus: entry.prometheus,
      slurm: entry.slurm,
      joinScope: { only: entry.clusterId },
    });
  }
  return targets;
}
