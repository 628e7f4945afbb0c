import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { configPath, readConfigFile, readSecret } from '../common/config-file';
import { validateRecord } from '../import/record-validator';
import {
  BasicAuthSection,
  ClusterSection,
  KubernetesSection,
  PrometheusSection,
  SlurmSection,
  SyncConfigFile,
  isSection,
} from './sync-config.dto';

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
  /** Price records in the import format, written (unchanged ones leave everything alone) every run. */
  prices: Record<string, unknown>[];
  /** Carbon intensity records per cluster in the import format, written the same way. */
  carbonIntensity: Record<string, unknown>[];
  /** GPU facts per instance type in the import format, written the same way. */
  instanceTypes: Record<string, unknown>[];
  unknownInitiatives: UnknownInitiatives;
  /** Further clusters, each synced on its own; the top-level sections stay one cluster of their own. */
  clusters: ClusterConfig[];
}

export const DEFAULT_SACCT_COMMAND = ['sacct', '--json', '--allusers'];

/** Reads a JSON or YAML sync config (YAML is a superset of JSON); relative paths are from its folder. */
export function loadSyncConfig(file: string): SyncConfig {
  const { document, base } = readConfigFile(file, SyncConfigError);
  return parseSyncConfig(document, base);
}

/**
 * The config of a parsed document, defaults filled in, paths resolved from `baseDirectory` and secret
 * files read; the first problem found stops it, naming the key.
 */
export function parseSyncConfig(document: unknown, baseDirectory: string): SyncConfig {
  if (!isSection(document)) throw new SyncConfigError('the config must be an object');
  const file = plainToInstance(SyncConfigFile, document);
  const errors = validateSync(file, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
  const issue = firstIssue(errors, (key) => key) ?? droppedKey(document, file, '');
  if (issue !== null) throw new SyncConfigError(issue);
  const config: SyncConfig = {
    organizationId: file.organization_id,
    prices: recordsConfig('prices', file.prices ?? [], file.organization_id),
    carbonIntensity: recordsConfig('carbon_intensity', file.carbon_intensity ?? [], file.organization_id),
    instanceTypes: recordsConfig('instance_types', file.instance_types ?? [], file.organization_id),
    unknownInitiatives: file.unknown_initiatives ?? 'refuse',
    ...clusterSources(file, '', baseDirectory),
    clusters: [],
  };
  config.clusters = clustersConfig(file.clusters ?? [], config, baseDirectory);
  if (!config.kubernetes && !config.prometheus && !config.slurm && config.clusters.length === 0) {
    throw new SyncConfigError(
      'the config names no source: add kubernetes, prometheus and/or slurm (or clusters)',
    );
  }
  return config;
}

/** Each record checked as `gpucap import` checks one, and in the config's organization. */
function recordsConfig(
  section: 'prices' | 'carbon_intensity' | 'instance_types',
  records: unknown[],
  organizationId: string,
): Record<string, unknown>[] {
  return records.map((value, index) => {
    const result = validateRecord(section, value);
    if (result.issues) throw new SyncConfigError(`${section}[${index}]: ${result.issues.join('; ')}`);
    if (result.row.organization_id !== organizationId) {
      throw new SyncConfigError(`${section}[${index}].organization_id must be the config's organization_id`);
    }
    return value as Record<string, unknown>;
  });
}

/**
 * class-transformer leaves `__proto__` and `constructor` keys out of a section (so that no prototype
 * can be polluted), where whitelisting cannot see them: they are unknown keys all the same. Looked for
 * once the config is valid, so sections and lists of them have the shape of their classes.
 */
function droppedKey(raw: Record<string, unknown>, section: object, at: string): string | null {
  for (const [key, value] of Object.entries(raw)) {
    if (key === '__proto__' || key === 'constructor') return `unknown key '${at}${key}'`;
    const parsed: unknown = (section as Record<string, unknown>)[key];
    const nested: [unknown, unknown, string][] =
      Array.isArray(value) && Array.isArray(parsed)
        ? value.map((entry, position) => [entry, parsed[position], `${at}${key}[${position}].`])
        : [[value, parsed, `${at}${key}.`]];
    for (const [entry, inner, path] of nested) {
      // Sections are instances of their classes; maps stay as written (plain objects).
      if (!isSection(entry) || !isSection(inner)) continue;
      if (Object.getPrototypeOf(inner) === Object.prototype) continue;
      const dropped = droppedKey(entry, inner, path);
      if (dropped !== null) return dropped;
    }
  }
  return null;
}

/**
 * The first problem of class-validator's errors, in the order of the keys in the config's classes,
 * as `<path> <rule>`; an object's unknown keys come first, together.
 */
function firstIssue(errors: ValidationError[], path: (key: string) => string): string | null {
  const unknown = errors
    .filter((error) => error.constraints?.whitelistValidation !== undefined)
    .map((error) => `'${path(error.property)}'`);
  if (unknown.length > 0) return `unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
  for (const error of errors) {
    const at = path(error.property);
    const [rule] = Object.values(error.constraints ?? {});
    if (rule !== undefined) return /^[.[]/.test(rule) ? `${at}${rule}` : `${at} ${rule}`;
    const inner = firstIssue(
      error.children ?? [],
      Array.isArray(error.value) ? (position) => `${at}[${position}]` : (key) => `${at}.${key}`,
    );
    if (inner !== null) return inner;
  }
  return null;
}

function clusterSources(file: ClusterSection | SyncConfigFile, at: string, base: string): ClusterSources {
  return {
    kubernetes: file.kubernetes == null ? null : kubernetesConfig(file.kubernetes, base),
    prometheus: file.prometheus == null ? null : prometheusConfig(file.prometheus, base, `${at}prometheus.`),
    slurm: file.slurm == null ? null : slurmConfig(file.slurm, base, `${at}slurm.`),
  };
}

/**
 * `clusters`: each entry names its cluster and at least one source. Its id becomes the `cluster_id` of
 * the workloads its Kubernetes and Slurm sources write (so a `cluster_id` inside them must agree), and
 * must not repeat, nor be the top-level sources' own `cluster_id`: two configs would then cancel each
 * other's pods and share watermarks.
 */
function clustersConfig(entries: ClusterSection[], root: ClusterSources, base: string): ClusterConfig[] {
  const taken = new Map<string, string>();
  for (const [key, source] of [
    ['kubernetes.cluster_id', root.kubernetes?.clusterId],
    ['slurm.cluster_id', root.slurm?.clusterId],
  ] as const) {
    if (source) taken.set(source, key);
  }
  return entries.map((entry, position) => {
    const at = `clusters[${position}].`;
    const clusterId = entry.cluster_id;
    const earlier = taken.get(clusterId);
    if (earlier) {
      throw new SyncConfigError(`${at}cluster_id '${clusterId}' is already used by ${earlier}`);
    }
    taken.set(clusterId, `${at}cluster_id`);
    const sources = clusterSources(entry, at, base);
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

function kubernetesConfig(section: KubernetesSection, base: string): KubernetesConfig {
  return {
    kubeconfig: section.kubeconfig == null ? null : configPath(base, section.kubeconfig),
    context: section.context ?? null,
    namespaces: section.namespaces ?? null,
    clusterId: section.cluster_id ?? null,
    initiativeLabel: section.initiative_label ?? 'gpucap.io/initiative',
    initiativeByNamespace: section.initiative_by_namespace ?? {},
    defaultInitiative: section.default_initiative ?? null,
    submitterLabel: section.submitter_label ?? 'gpucap.io/submitted-by',
    defaultSubmitter: section.default_submitter ?? null,
    instanceTypeLabel: section.instance_type_label ?? 'node.kubernetes.io/instance-type',
    gpuResource: section.gpu_resource ?? 'nvidia.com/gpu',
    migProfiles: section.mig_profiles ?? {},
    isManaged: section.is_managed ?? true,
    timeoutSeconds: section.timeout_seconds ?? 30,
  };
}

function prometheusConfig(section: PrometheusSection, base: string, at: string): PrometheusConfig {
  return {
    url: section.url.replace(/\/+$/, ''),
    stepSeconds: section.step_seconds ?? 60,
    basicAuth: section.basic_auth == null ? null : basicAuth(section.basic_auth, base, `${at}basic_auth.`),
    bearerToken: bearerToken(section, base, at),
    backfillHours: section.backfill_hours ?? 24,
    overlapSeconds: section.overlap_seconds ?? 600,
    lagSeconds: section.lag_seconds ?? 0,
    windowPoints: section.window_points ?? 60,
    timeoutSeconds: section.timeout_seconds ?? 60,
    grEngineActiveUnit: section.gr_engine_active_unit ?? 'auto',
  };
}

function slurmConfig(section: SlurmSection, base: string, at: string): SlurmConfig {
  if (section.sacct_json_file != null && section.sacct_command != null) {
    throw new SyncConfigError(`${at}sacct_json_file and ${at}sacct_command exclude each other: give one`);
  }
  return {
    sacctJsonFile: section.sacct_json_file == null ? null : configPath(base, section.sacct_json_file),
    sacctCommand: section.sacct_command ?? DEFAULT_SACCT_COMMAND,
    jobLabel: section.job_label ?? 'hpc_job',
    clusterId: section.cluster_id ?? null,
    initiativeByAccount: section.initiative_by_account ?? {},
    defaultInitiative: section.default_initiative ?? null,
    instanceTypeByPartition: section.instance_type_by_partition ?? {},
    gpuShareByType: section.gpu_share_by_type ?? {},
    isManaged: section.is_managed ?? true,
    timeoutSeconds: section.timeout_seconds ?? 120,
  };
}

function basicAuth(section: BasicAuthSection, base: string, at: string): PrometheusConfig['basicAuth'] {
  const password = readSecret(
    section.password,
    section.password_file,
    `${at}password`,
    base,
    SyncConfigError,
  );
  if (section.username == null || password === null) {
    throw new SyncConfigError(`${at}username and a password (or password_file) are required`);
  }
  return { username: section.username, password };
}

function bearerToken(section: PrometheusSection, base: string, at: string): string | null {
  return readSecret(
    section.bearer_token,
    section.bearer_token_file,
    `${at}bearer_token`,
    base,
    SyncConfigError,
  );
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
