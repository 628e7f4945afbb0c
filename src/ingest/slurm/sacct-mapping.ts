import { IDENTIFIER_PATTERN } from '../../core/identifier';
import type { WorkloadStatus } from '../../core/workload-status';
import { knownMigProfileShare } from '../../common/gpu-sharing';
import { ShareFields } from '../gpu-shares';
import type { SlurmConfig } from '../sync-config';

/**
 * One job of `sacct --json` (Slurm's data_parser, v0.0.37 to v0.0.4x). Numbers may be plain or
 * wrapped as `{set, infinite, number}`; `state.current` is a string (older) or an array of flags
 * (newer); `exit_code.return_code` likewise.
 */
export interface SacctJob {
  job_id?: unknown;
  name?: unknown;
  user?: unknown;
  account?: unknown;
  partition?: unknown;
  cluster?: unknown;
  state?: { current?: unknown };
  time?: { submission?: unknown; start?: unknown; end?: unknown };
  tres?: { allocated?: unknown; requested?: unknown };
  exit_code?: unknown;
}

/**
 * Job state → workload status. PENDING-like states wait; RUNNING-like run; COMPLETED completes;
 * every state in which the job ended on an error fails; CANCELLED cancels. Requeued and resizing
 * jobs are between runs (pending); suspended and stopped ones still hold their allocation (running).
 */
export const STATUS_BY_SLURM_STATE: Record<string, WorkloadStatus> = {
  PENDING: 'pending',
  REQUEUED: 'pending',
  REQUEUE_FED: 'pending',
  REQUEUE_HOLD: 'pending',
  RESV_DEL_HOLD: 'pending',
  RESIZING: 'pending',
  CONFIGURING: 'running',
  RUNNING: 'running',
  COMPLETING: 'running',
  SUSPENDED: 'running',
  STOPPED: 'running',
  SIGNALING: 'running',
  STAGE_OUT: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  TIMEOUT: 'failed',
  NODE_FAIL: 'failed',
  OUT_OF_MEMORY: 'failed',
  BOOT_FAIL: 'failed',
  DEADLINE: 'failed',
  PREEMPTED: 'failed',
  REVOKED: 'cancelled',
  CANCELLED: 'cancelled',
};

/** Exit code of a job that failed without one (node failure, timeout, preemption). */
export const FAILED_WITHOUT_EXIT_CODE = 1;

export type JobMapping =
  { workload: Record<string, unknown>; initiativeId: string; jobId: string } | { skip: string };

/** `{set, infinite, number}` or a plain number; 0 and unset mean "no value". */
export function slurmNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'object' && value !== null) {
    const wrapped = value as { set?: unknown; infinite?: unknown; number?: unknown };
    if (wrapped.set === false || wrapped.infinite === true) return null;
    return typeof wrapped.number === 'number' ? wrapped.number : null;
  }
  return null;
}

function epochSeconds(value: unknown): string | null {
  const seconds = slurmNumber(value);
  return seconds && seconds > 0 ? new Date(seconds * 1000).toISOString() : null;
}

/** The first state of `state.current` that gpucap knows (the base state; flags such as RECONFIG_FAIL follow it). */
function jobStatus(state: unknown): { status?: WorkloadStatus; name: string } {
  const names = (Array.isArray(state) ? state : [state]).filter(
    (name): name is string => typeof name === 'string',
  );
  const known = names.find((name) => STATUS_BY_SLURM_STATE[name] !== undefined);
  return known
    ? { status: STATUS_BY_SLURM_STATE[known], name: known }
    : { name: names.join('+') || 'missing' };
}

interface GresEntry {
  name: string;
  count?: unknown;
}

/** The `gres/gpu` entries (`gpu`, `gpu:<type>`) of a TRES list with a positive count. */
function gpuEntries(list: unknown): { type: string | null; count: number }[] {
  if (!Array.isArray(list)) return [];
  return list
    .filter(
      (entry): entry is GresEntry =>
        typeof entry === 'object' &&
        entry !== null &&
        (entry as { type?: unknown }).type === 'gres' &&
        typeof (entry as { name?: unknown }).name === 'string' &&
        /^gpu(:|$)/.test((entry as { name: string }).name),
    )
    .map((entry) => ({
      type: entry.name === 'gpu' ? null : entry.name.slice('gpu:'.length),
      count: slurmNumber(entry.count) ?? 0,
    }))
    .filter((entry) => entry.count > 0);
}

/**
 * The GPU entries that count: allocated TRES (requested ones for a job not yet allocated); within
 * them the typed ones (`gres/gpu:<type>`, which Slurm records beside the plain `gres/gpu` total when
 * the type is tracked), else the plain total as untyped devices.
 */
export function gpuAllocation(job: SacctJob): { type: string | null; count: number }[] {
  const allocated = gpuEntries(job.tres?.allocated);
  const entries = allocated.length > 0 ? allocated : gpuEntries(job.tres?.requested);
  const plain = entries.find((entry) => entry.type === null);
  const typed = entries.filter((entry) => entry.type !== null);
  const typedCount = typed.reduce((sum, entry) => sum + entry.count, 0);
  if (typed.length === 0) return plain ? [plain] : [];
  // Types tracked for only some of the devices: the rest are untyped.
  if (plain && plain.count > typedCount) return [...typed, { type: null, count: plain.count - typedCount }];
  return typed;
}

/** `gres/gpu` count: the plain total, or the sum of the typed entries when there is no plain one. */
export function gpuCount(job: SacctJob): number {
  return gpuAllocation(job).reduce((sum, entry) => sum + entry.count, 0);
}

/**
 * The MIG profile a gres type names: the type itself (`1g.10gb`), or the end of an NVML-detected
 * type after its model (`a100_1g.5gb`); null when it names no profile the importer knows.
 */
export function migProfileOfType(type: string): string | null {
  const profile = type.slice(type.lastIndexOf('_') + 1);
  return knownMigProfileShare(profile) !== null ? profile : null;
}

/**
 * `gpu_count`, `gpu_sharing` and `gpu_share` of the job's GPUs by gres type:
 * - a type in `gpu_share_by_type`: that share per device, given explicitly; `gpu_sharing` is MIG with
 *   the type as its profile when the share is below one GPU (a site's name for a MIG slice, such as
 *   `a100l.2`), none when it is a whole GPU;
 * - a type that names a built-in MIG profile: `{mode: 'mig', profile}` (the importer derives the share);
 * - any other type (`a100`, `h100`), or none: whole GPUs.
 * Several types in one job sum their shares explicitly, `gpu_sharing` naming the MIG profiles joined by `+`.
 */
export function jobShares(job: SacctJob, config: SlurmConfig): ShareFields {
  const entries = gpuAllocation(job).map((entry) => {
    const configured = entry.type === null ? undefined : config.gpuShareByType[entry.type];
    const profile =
      entry.type === null
        ? null
        : configured !== undefined
          ? configured < 1
            ? entry.type
            : null
          : migProfileOfType(entry.type);
    const perDevice = configured ?? (profile === null ? 1 : (knownMigProfileShare(profile) as number));
    return { ...entry, configured: configured !== undefined, profile, perDevice };
  });
  const gpuCount = entries.reduce((sum, entry) => sum + entry.count, 0);
  const profiles = [...new Set(entries.flatMap((entry) => (entry.profile ? [entry.profile] : [])))].sort();
  const explicit = entries.length > 1 || entries.some((entry) => entry.configured);
  const share = entries.reduce((sum, entry) => sum + entry.count * entry.perDevice, 0);
  return {
    gpu_count: gpuCount,
    ...(profiles.length > 0 ? { gpu_sharing: { mode: 'mig' as const, profile: profiles.join('+') } } : {}),
    ...(explicit && (profiles.length > 0 || share !== gpuCount) ? { gpu_share: share } : {}),
  };
}

function returnCode(exitCode: unknown): number | null {
  if (typeof exitCode !== 'object' || exitCode === null) return null;
  const code = slurmNumber((exitCode as { return_code?: unknown }).return_code);
  return code !== null && Number.isInteger(code) ? code : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

/** The stable workload id of a job: cluster and job id (unique per cluster). */
export function slurmWorkloadId(clusterId: string, jobId: string): string {
  return `slurm:${clusterId}:${jobId}`;
}

export function mapSacctJob(job: SacctJob, config: SlurmConfig, organizationId: string): JobMapping {
  const jobId = slurmNumber(job.job_id);
  if (jobId === null) return { skip: 'job without job_id' };
  const shares = jobShares(job, config);
  if (shares.gpu_count === 0) return { skip: 'no gres/gpu' };
  const { status, name: stateName } = jobStatus(job.state?.current);
  if (!status) return { skip: `state ${stateName} (not mapped)` };
  const account = text(job.account);
  const initiativeId =
    (account && config.initiativeByAccount[account]) ??
    (account && IDENTIFIER_PATTERN.test(account) ? account : null) ??
    config.defaultInitiative;
  if (!initiativeId) return { skip: 'no account to map to an initiative' };
  const clusterId =
    config.clusterId ??
    (text(job.cluster) && IDENTIFIER_PATTERN.test(job.cluster as string) ? (job.cluster as string) : 'slurm');
  const times = jobTimes(job, status);
  if (!times) return { skip: 'job without submission time' };
  const partition = text(job.partition);
  const instanceType =
    (partition && config.instanceTypeByPartition[partition]) ??
    (partition && IDENTIFIER_PATTERN.test(partition) ? partition : 'unknown');
  const code = returnCode(job.exit_code);
  return {
    jobId: String(jobId),
    initiativeId,
    workload: {
      organization_id: organizationId,
      workload_id: slurmWorkloadId(clusterId, String(jobId)),
      initiative_id: initiativeId,
      name: (text(job.name) ?? `job ${jobId}`).slice(0, 256),
      status,
      submitted_by: (text(job.user) ?? 'unknown').slice(0, 256),
      instance_type: instanceType,
      ...shares,
      is_managed: config.isManaged,
      cluster_id: clusterId,
      namespace: account ?? 'default',
      ...times,
      exit_code:
        status === 'completed'
          ? (code ?? 0)
          : status === 'failed'
            ? code || FAILED_WITHOUT_EXIT_CODE
            : status === 'cancelled'
              ? code
              : null,
    },
  };
}

/** Epoch seconds → ISO; clamped so that submitted ≤ started ≤ completed, and only the times the status allows. */
function jobTimes(job: SacctJob, status: WorkloadStatus) {
  const submitted = epochSeconds(job.time?.submission);
  if (!submitted) return null;
  if (status === 'pending') return { submitted_at: submitted, started_at: null, completed_at: null };
  const start = epochSeconds(job.time?.start);
  const started = start && start > submitted ? start : status === 'cancelled' && !start ? null : submitted;
  if (status === 'running') return { submitted_at: submitted, started_at: started, completed_at: null };
  const end = epochSeconds(job.time?.end);
  const floor = started ?? submitted;
  return { submitted_at: submitted, started_at: started, completed_at: end && end > floor ? end : floor };
}
