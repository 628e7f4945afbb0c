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

/**
 * MIG profiles of the GPUs whose compute splits into seven slices (A100, H100, H200, GH200, B200),
 * by memory size as NVIDIA names them; a `+me` / `+gfx` suffix (media extensions) keeps the slice
 * count. A30 splits into four.
 */
const SEVEN_SLICE_PROFILES = [
  '1g.5gb', '1g.10gb', '1g.12gb', '1g.18gb', '1g.20gb', '1g.23gb', '1g.24gb', '1g.35gb', '1g.45gb',
  '2g.10gb', '2g.20gb', '2g.24gb', '2g.35gb', '2g.45gb',
  '3g.20gb', '3g.40gb', '3g.47gb', '3g.48gb', '3g.71gb', '3g.90gb',
  '4g.20gb', '4g.40gb', '4g.47gb', '4g.48gb', '4g.71gb', '4g.90gb',
  '7g.40gb', '7g.80gb', '7g.94gb', '7g.96gb', '7g.141gb', '7g.180gb',
]; // prettier-ignore

const FOUR_SLICE_PROFILES = ['1g.6gb', '2g.12gb', '4g.24gb'];

const KNOWN_PROFILES = new Map<string, number>([
  ...SEVEN_SLICE_PROFILES.map((profile) => [profile, slicesOf(profile) / 7] as const),
  ...FOUR_SLICE_PROFILES.map((profile) => [profile, slicesOf(profile) / 4] as const),
]);

function slicesOf(profile: string): number {
  return Number(profile.slice(0, profile.indexOf('g')));
}

/** The share of one GPU that one instance of a MIG profile holds, or null for a profile not built in. */
export function knownMigProfileShare(profile: string): number | null {
  const base = profile.toLowerCase().replace(/(\+(me|gfx))+$/, '');
  return KNOWN_PROFILES.get(base) ?? null;
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
