import {
  GPU_SHARE_UNITS,
  GpuSharing,
  GpuSharingMode,
  gpuShareUnits,
  knownMigProfileShare,
} from '../common/gpu-sharing';

/** Devices of one kind a workload holds: whole GPUs, instances of a MIG profile, or replicas of either. */
export interface DeviceRequest {
  count: number;
  /** The MIG profile of the devices; null for whole GPUs. */
  profile: string | null;
  /** Replicas per device (time-slicing or MPS); 1 when the devices are not shared that way. */
  replicas: number;
  replicaMode: 'time-slicing' | 'mps';
}

/** The fields a source adds to a workload record, in the import format. */
export interface ShareFields {
  gpu_count: number;
  gpu_sharing?: GpuSharing;
  gpu_share?: number;
}

export type ShareMapping = ShareFields | { unknownProfile: string };

/**
 * The share of one GPU that one instance of `profile` holds: the configured one first (a site's own
 * profile, or an override), else the built-in table the importer uses; null when neither knows it.
 */
export function migInstanceShare(profile: string, configured: Record<string, number>): number | null {
  return configured[profile] ?? knownMigProfileShare(profile);
}

/**
 * `gpu_count`, `gpu_sharing` and, only where the importer could not derive the same value, an explicit
 * `gpu_share`:
 * - whole GPUs only: nothing but the count;
 * - whole GPUs as replicas of one mode: `{mode, replicas}` (the importer divides);
 * - one built-in MIG profile, not replicated: `{mode: 'mig', profile}` (the importer multiplies);
 * - anything else with MIG (a configured profile, several profiles, whole GPUs beside instances, or
 *   replicated instances): `{mode: 'mig', profile}` with the distinct profiles joined by `+` in name
 *   order, and the share summed here, each device counting its instance share over its replicas;
 * - replicas of several modes or counts at once: the share summed here, `gpu_sharing` of the largest.
 * A MIG profile known neither to the config nor to the table gives `unknownProfile`: no share can be
 * given, and the import would refuse the record.
 */
export function shareFields(requests: DeviceRequest[], configured: Record<string, number>): ShareMapping {
  const held = requests.filter((request) => request.count > 0);
  const gpuCount = held.reduce((sum, request) => sum + request.count, 0);
  let share = 0;
  for (const request of held) {
    const perDevice = request.profile === null ? 1 : migInstanceShare(request.profile, configured);
    if (perDevice === null) return { unknownProfile: request.profile as string };
    share += (request.count * perDevice) / request.replicas;
  }
  const profiles = [
    ...new Set(held.flatMap((request) => (request.profile === null ? [] : [request.profile]))),
  ];
  if (profiles.length > 0) {
    const derivable =
      held.length === 1 &&
      held[0].replicas === 1 &&
      configured[profiles[0]] === undefined &&
      knownMigProfileShare(profiles[0]) !== null;
    const gpu_sharing: GpuSharing = { mode: 'mig', profile: profiles.sort().join('+') };
    return derivable
      ? { gpu_count: gpuCount, gpu_sharing }
      : { gpu_count: gpuCount, gpu_sharing, gpu_share: share };
  }
  const replicated = held.filter((request) => request.replicas > 1);
  if (replicated.length === 0) return { gpu_count: gpuCount };
  const largest = replicated.reduce((a, b) => (b.count > a.count ? b : a));
  const gpu_sharing: GpuSharing = { mode: largest.replicaMode, replicas: largest.replicas };
  const uniform = held.every(
    (request) => request.replicas === largest.replicas && request.replicaMode === largest.replicaMode,
  );
  return uniform
    ? { gpu_count: gpuCount, gpu_sharing }
    : { gpu_count: gpuCount, gpu_sharing, gpu_share: share };
}

/** How a stored workload holds its GPUs, as the workloads table keeps it. */
export interface HeldGpus {
  gpu_count: number;
  gpu_share_units: number;
  gpu_sharing_mode: GpuSharingMode | null;
  gpu_sharing_replicas: number | null;
}

/**
 * The share of its physical GPU, in units of 1/GPU_SHARE_UNITS, that one DCGM series of a workload
 * stands for. A MIG instance (`migProfile`: its `GPU_I_PROFILE`, or '' when the series has none) holds
 * its profile's compute slices over the GPU's (the configured `mig_profiles` first, then the built-in
 * table; a profile known to neither, as an exporter may name a whole-GPU instance `7g.79gb`, holds the
 * workload's mean share per device). Any other series is a GPU: a replica's 1/replicas when the
 * workload's devices are time-sliced or MPS replicas, else the whole GPU.
 */
export function seriesShareUnits(
  migProfile: string | null,
  held: HeldGpus,
  configured: Record<string, number>,
): number {
  if (migProfile !== null) {
    const share = migProfile === '' ? null : migInstanceShare(migProfile, configured);
    return share === null
      ? Math.round(held.gpu_share_units / Math.max(1, held.gpu_count))
      : gpuShareUnits(share);
  }
  const replicated = held.gpu_sharing_mode === 'time-slicing' || held.gpu_sharing_mode === 'mps';
  return replicated ? gpuShareUnits(1 / (held.gpu_sharing_replicas ?? 1)) : GPU_SHARE_UNITS;
}
