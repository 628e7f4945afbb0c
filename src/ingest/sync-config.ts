import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { IDENTIFIER_PATTERN } from '../common/validation/identifier';

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
  isManaged: boolean;
  timeoutSeconds: number;
}

export interface SyncConfig {
  organizationId: string;
  unknownInitiatives: UnknownInitiatives;
  kubernetes: KubernetesConfig | null;
  prometheus: PrometheusConfig | null;
  slurm: SlurmConfig | null;
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
  knownKeys(root, '', ['organization_id', 'unknown_initiatives', 'kubernetes', 'prometheus', 'slurm']);
  const config: SyncConfig = {
    organizationId: identifier(root, 'organization_id', ''),
    unknownInitiatives: oneOf(root, 'unknown_initiatives', '', ['create', 'refuse'], 'refuse'),
    kubernetes: root.kubernetes == null ? null : kubernetesConfig(root.kubernetes, baseDirectory),
    prometheus: root.prometheus == null ? null : prometheusConfig(root.prometheus, baseDirectory),
    slurm: root.slurm == null ? null : slurmConfig(root.slurm, baseDirectory),
  };
  if (!config.kubernetes && !config.prometheus && !config.slurm) {
    throw new SyncConfigError('the config names no source: add kubernetes, prometheus and/or slurm');
  }
  return config;
}

function kubernetesConfig(value: unknown, base: string): KubernetesConfig {
  const at = 'kubernetes.';
  const input = section(value, 'kubernetes');
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
    isManaged: optionalBoolean(input, 'is_managed', at) ?? true,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 30),
  };
}

function prometheusConfig(value: unknown, base: string): PrometheusConfig {
  const at = 'prometheus.';
  const input = section(value, 'prometheus');
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
    basicAuth: basicAuth(input.basic_auth, base),
    bearerToken: bearerToken(input, base),
    backfillHours: positiveNumber(input, 'backfill_hours', at, 24),
    overlapSeconds: nonNegativeNumber(input, 'overlap_seconds', at, 600),
    lagSeconds: nonNegativeNumber(input, 'lag_seconds', at, 0),
    windowPoints,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 60),
    grEngineActiveUnit: oneOf(input, 'gr_engine_active_unit', at, ['auto', 'ratio', 'percent'], 'auto'),
  };
}

function slurmConfig(value: unknown, base: string): SlurmConfig {
  const at = 'slurm.';
  const input = section(value, 'slurm');
  knownKeys(input, at, [
    'sacct_json_file',
    'sacct_command',
    'job_label',
    'cluster_id',
    'initiative_by_account',
    'default_initiative',
    'instance_type_by_partition',
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
    isManaged: optionalBoolean(input, 'is_managed', at) ?? true,
    timeoutSeconds: positiveNumber(input, 'timeout_seconds', at, 120),
  };
}

function basicAuth(value: unknown, base: string): PrometheusConfig['basicAuth'] {
  if (value == null) return null;
  const at = 'prometheus.basic_auth.';
  const input = section(value, 'prometheus.basic_auth');
  knownKeys(input, at, ['username', 'password', 'password_file']);
  const username = optionalText(input, 'username', at);
  const password = secret(input, 'password', at, base);
  if (username === null || password === null) {
    throw new SyncConfigError(`${at}username and a password (or password_file) are required`);
  }
  return { username, password };
}

function bearerToken(input: Json, base: string): string | null {
  if (input.bearer_token != null && input.bearer_token_file != null) {
    throw new SyncConfigError('prometheus.bearer_token and prometheus.bearer_token_file exclude each other');
  }
  return secret(input, 'bearer_token', 'prometheus.', base);
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
