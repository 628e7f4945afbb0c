import { round4 } from './http/decimal';

/**
 * GPU shares: the physical GPUs a workload holds when its devices are MIG instances or time-sliced
 * or MPS replicas. Shares are kept as integers in units of 1/GPU_SHARE_UNITS of a GPU, so the
 * rollups stay exact integer sums: 5040 = 7! divides by every MIG slice count (7 and 4) and by
 * every replica count from 1 to 10 and 12, 14, 15, 16 — seven 1g instances add up to exactly one
 * GPU, sixteen replicas too.
 */
export const GPU_SHARE_UNITS = 5040;

export const GPU_SHARING_MODES = ['mig', 'time-slicing', 'mps'] as const;
export type GpuSharingMode = (typeof GPU_SHARING_MODES)[number];

export type GpuSharing =
  { mode: 'mig'; profile: string } | { mode: 'time-slicing' | 'mps'; replicas: number };

/** A MIG instance profile: the memory it holds and its compute slices out of its GPU's. */
export interface MigProfile {
  profile: string;
  memory_gib: number;
  compute_slices: number;
}

/** NVIDIA's profile names say both: `3g.40gb` is 3 compute slices and 40 GB of memory. */
function profilesOf(names: string[]): MigProfile[] {
  return names.map((profile) => {
    const [, slices, memory] = /^(\d+)g\.(\d+)gb$/.exec(profile) as RegExpExecArray;
    return { profile, memory_gib: Number(memory), compute_slices: Number(slices) };
  });
}

/**
 * The MIG profiles of each GPU that can be sliced, as NVIDIA's MIG user guide lists them (a `+me` /
 * `+gfx` suffix, media extensions, keeps its profile's slices and memory). A100, H100, H200, GH200 and
 * B200 split into seven compute slices, A30 into four: the largest profile is the whole GPU.
 */
export const MIG_PROFILES_BY_GPU: Readonly<Record<string, readonly MigProfile[]>> = {
  'A100 40GB': profilesOf(['1g.5gb', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']),
  'A100 80GB': profilesOf(['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb']),
  'H100 80GB': profilesOf(['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb']),
  'H100 94GB': profilesOf(['1g.12gb', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb', '7g.94gb']),
  'GH200 96GB': profilesOf(['1g.12gb', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb', '7g.96gb']),
  'H200 141GB': profilesOf(['1g.18gb', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb']),
  'B200 180GB': profilesOf(['1g.23gb', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb', '7g.180gb']),
  'A30 24GB': profilesOf(['1g.6gb', '2g.12gb', '4g.24gb']),
};

/** The compute slices of a whole GPU: those of its largest profile. */
export function gpuComputeSlices(profiles: readonly MigProfile[]): number {
  return Math.max(...profiles.map((profile) => profile.compute_slices));
}

const KNOWN_PROFILES = new Map<string, number>(
  Object.values(MIG_PROFILES_BY_GPU).flatMap((profiles) =>
    profiles.map((mig) => [mig.profile, mig.compute_slices / gpuComputeSlices(profiles)] as const),
  ),
);

/** A MIG profile name without its media-extension suffix. */
export function baseMigProfile(profile: string): string {
  return profile.toLowerCase().replace(/(\+(me|gfx))+$/, '');
}

/** The share of one GPU that one instance of a MIG profile holds, or null for a profile not built in. */
export function knownMigProfileShare(profile: string): number | null {
  return KNOWN_PROFILES.get(baseMigProfile(profile)) ?? null;
}

/** A share in GPUs as integer units (nearest unit). */
export function gpuShareUnits(share: number): number {
  return Math.round(share * GPU_SHARE_UNITS);
}

/**
 * The share of `gpuCount` devices shared as `sharing` when the source names no explicit share; null
 * when it cannot be derived (a MIG profile not built in).
 */
export function derivedGpuShare(gpuCount: number, sharing: GpuSharing | null): number | null {
  if (sharing === null) return gpuCount;
  if (sharing.mode === 'mig') {
    const perInstance = knownMigProfileShare(sharing.profile);
    return perInstance === null ? null : gpuCount * perInstance;
  }
  return gpuCount / sharing.replicas;
}

/** The workload columns that carry its share, as read by the API's queries. */
export const GPU_SHARE_COLUMNS =
  'gpu_share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas';

export interface GpuShareColumns {
  gpu_share_units: number;
  gpu_sharing_mode: GpuSharingMode | null;
  gpu_sharing_profile: string | null;
  gpu_sharing_replicas: number | null;
}

/** GPUs from share units: exact for whole GPUs (units / 5040 is then an integer). */
export function gpusOfUnits(units: number): number {
  return units / GPU_SHARE_UNITS;
}

/** GPU-seconds in share units (as the rollups sum them) as GPU-hours, unrounded. */
export function gpuHoursOfUnitSeconds(unitSeconds: number): number {
  return gpusOfUnits(unitSeconds) / 3600;
}

/** A workload's `gpu_share` and `gpu_sharing`, as every answer that names a workload carries them. */
export function shareFieldsOf(row: GpuShareColumns): { gpu_share: number; gpu_sharing: GpuSharing | null } {
  return { gpu_share: round4(gpusOfUnits(row.gpu_share_units)), gpu_sharing: gpuSharingOf(row) };
}

export function gpuSharingOf(row: GpuShareColumns): GpuSharing | null {
  if (row.gpu_sharing_mode === null) return null;
  return row.gpu_sharing_mode === 'mig'
    ? { mode: 'mig', profile: row.gpu_sharing_profile ?? '' }
    : { mode: row.gpu_sharing_mode, replicas: row.gpu_sharing_replicas ?? 1 };
}

/** gpu_sharing as its three columns (the table's and the CSV's), the same whether or not a workload shares. */
export function gpuSharingColumns(sharing: GpuSharing | null) {
  return {
    gpu_sharing_mode: sharing?.mode ?? null,
    gpu_sharing_profile: sharing?.mode === 'mig' ? sharing.profile : null,
    gpu_sharing_replicas: sharing !== null && sharing.mode !== 'mig' ? sharing.replicas : null,
  };
}
