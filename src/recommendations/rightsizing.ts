import type { AuthScope } from '../common/auth/auth-scope';
import type { ScopedDatabase } from '../common/database/scoped-database';
import { GpuCatalogue, type InstanceTypeGpus } from '../common/gpu-catalogue';
import {
  baseMigProfile,
  GPU_SHARE_UNITS,
  gpuComputeSlices,
  type GpuSharing,
  gpuSharingOf,
  type MigProfile,
} from '../common/gpu-sharing';
import { scaledDecimal } from '../common/money';
import {
  type EvidenceRequest,
  instanceTypeGpusQuery,
  type InstanceTypeGpusRow,
  workloadEvidenceQuery,
  type WorkloadEvidenceRow,
} from './rightsizing.queries';

/**
 * Which workloads could run smaller (docs/api.md, "Could run smaller"): from a workload's samples
 * inside a range, what it needs (memory: the 99th percentile of used memory, compute: the 95th of
 * utilization, each × 1.2), the smallest MIG profile of its GPU or the fewest whole GPUs that cover
 * both, and the share of its samples that would not have fitted. Advice only shrinks.
 */
const MIN_SAMPLES = 30;
const MIN_COVERAGE = 0.5;
const HEADROOM = 1.2;

/** Float noise must not round a need that is exactly a whole number of GPUs up to the next one. */
const TOLERANCE = 1e-9;

export const NO_ADVICE_REASONS = [
  'unknown_instance_type',
  'shared_gpu',
  'unknown_mig_profile',
  'too_few_samples',
  'low_coverage',
  'not_smaller',
  'risk_above_limit',
] as const;
export type NoAdviceReason = (typeof NO_ADVICE_REASONS)[number];

/** GPUs held: whole GPUs or MIG instances of one profile. */
export interface Holding {
  gpu_count: number;
  /** The share in units of 1/GPU_SHARE_UNITS of a GPU. */
  units: number;
  gpu_sharing: GpuSharing | null;
  memory_gib: number;
  /** Compute held in GPUs (3/7 for a 3g slice of a seven-slice GPU). */
  compute_gpus: number;
}

export interface Advice {
  gpus: InstanceTypeGpus;
  current: Holding;
  recommended: Holding;
  samples: number;
  /** Sampled span ÷ run time inside the range, at most 1. */
  coverage: number;
  p95_gpu_utilization: number;
  p99_memory_used_gib: number;
  memory_need_gib: number;
  compute_need_gpus: number;
  /** Share of the samples whose used memory exceeds the recommendation's. */
  risk: number;
  saved_units: number;
  gpu_hours_saved: number;
}

export type AdviceOutcome = { advice: Advice } | { reason: NoAdviceReason };

/** The rule, applied to one workload's evidence; `gpus` null: its instance type is known nowhere. */
export function adviseWorkload(row: WorkloadEvidenceRow, gpus: InstanceTypeGpus | null): AdviceOutcome {
  if (gpus === null) return { reason: 'unknown_instance_type' };
  if (row.gpu_sharing_mode !== null && row.gpu_sharing_mode !== 'mig') return { reason: 'shared_gpu' };
  const current = currentHolding(row, gpus);
  if (current === null) return { reason: 'unknown_mig_profile' };
  if (row.sample_count < MIN_SAMPLES) return { reason: 'too_few_samples' };
  const coverage = row.run_seconds > 0 ? Math.min(1, (row.sampled_seconds ?? 0) / row.run_seconds) : 0;
  if (coverage < MIN_COVERAGE) return { reason: 'low_coverage' };
  const p95 = row.p95_gpu_utilization as number;
  const p99Memory = row.p99_memory_utilization as number;
  const usedGib = (memoryUtilization: number) => (memoryUtilization * current.memory_gib) / 100;
  const memoryNeed = usedGib(p99Memory) * HEADROOM;
  const computeNeed = (p95 / 100) * current.compute_gpus * HEADROOM;
  const recommended = smallestCovering(gpus, memoryNeed, computeNeed);
  if (recommended.units >= current.units) return { reason: 'not_smaller' };
  const top = row.top_memory_utilization as number[];
  const over = top.filter((value) => usedGib(value) > recommended.memory_gib).length;
  // The top 1 % of the readings and one more: all of them over is more than 1 % of the samples.
  if (over === top.length) return { reason: 'risk_above_limit' };
  const savedUnits = current.units - recommended.units;
  return {
    advice: {
      gpus,
      current,
      recommended,
      samples: row.sample_count,
      coverage,
      p95_gpu_utilization: p95,
      p99_memory_used_gib: usedGib(p99Memory),
      memory_need_gib: memoryNeed,
      compute_need_gpus: computeNeed,
      risk: over / row.sample_count,
      saved_units: savedUnits,
      gpu_hours_saved: (savedUnits / GPU_SHARE_UNITS) * (row.run_seconds / 3600),
    },
  };
}

/** What the workload holds: its whole GPUs, or its MIG instances of a profile its GPU has; null otherwise. */
function currentHolding(row: WorkloadEvidenceRow, gpus: InstanceTypeGpus): Holding | null {
  const sharing = gpuSharingOf(row);
  if (sharing === null) {
    return {
      gpu_count: row.gpu_count,
      units: row.gpu_share_units,
      gpu_sharing: null,
      memory_gib: row.gpu_count * gpus.gpu_memory_gib,
      compute_gpus: row.gpu_count,
    };
  }
  if (sharing.mode !== 'mig') return null;
  const base = baseMigProfile(sharing.profile);
  const profile = gpus.mig_profiles.find((mig) => baseMigProfile(mig.profile) === base);
  if (profile === undefined) return null;
  return {
    gpu_count: row.gpu_count,
    units: row.gpu_share_units,
    gpu_sharing: sharing,
    memory_gib: row.gpu_count * profile.memory_gib,
    compute_gpus: (row.gpu_count * profile.compute_slices) / gpuComputeSlices(gpus.mig_profiles),
  };
}

/**
 * The smallest MIG profile short of the whole GPU that covers both needs (fewest slices, then least
 * memory), else the fewest whole GPUs: max(1, ⌈max(compute, memory ÷ memory per GPU)⌉).
 */
function smallestCovering(gpus: InstanceTypeGpus, memoryNeed: number, computeNeed: number): Holding {
  if (gpus.mig_capable) {
    const slices = gpuComputeSlices(gpus.mig_profiles);
    const covering = [...gpus.mig_profiles]
      .filter((mig) => mig.compute_slices < slices)
      .sort(bySize)
      .find(
        (mig) =>
          mig.memory_gib >= memoryNeed - TOLERANCE && mig.compute_slices / slices >= computeNeed - TOLERANCE,
      );
    if (covering) {
      return {
        gpu_count: 1,
        units: Math.round((covering.compute_slices * GPU_SHARE_UNITS) / slices),
        gpu_sharing: { mode: 'mig', profile: covering.profile },
        memory_gib: covering.memory_gib,
        compute_gpus: covering.compute_slices / slices,
      };
    }
  }
  const count = Math.max(1, Math.ceil(Math.max(computeNeed, memoryNeed / gpus.gpu_memory_gib) - TOLERANCE));
  return {
    gpu_count: count,
    units: count * GPU_SHARE_UNITS,
    gpu_sharing: null,
    memory_gib: count * gpus.gpu_memory_gib,
    compute_gpus: count,
  };
}

function bySize(a: MigProfile, b: MigProfile): number {
  return a.compute_slices - b.compute_slices || a.memory_gib - b.memory_gib;
}

/**
 * The money a recommendation saves before its one rounding: saved units × Σ price × microseconds of
 * the run (`price_us`), as exact decimal text for ExactSum; divide by UNIT_MICROSECONDS_PER_GPU_HOUR.
 */
export function savedAmountText(priceUs: string, savedUnits: number): string {
  const scale = priceUs.split('.')[1]?.length ?? 0;
  const digits = (scaledDecimal(priceUs, scale) * BigInt(savedUnits)).toString().padStart(scale + 1, '0');
  return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The organization's GPU facts and the evidence of the request's workloads, as the rule reads them. */
export async function readWorkloadEvidence(
  database: ScopedDatabase,
  scope: AuthScope,
  request: Omit<EvidenceRequest, 'knownInstanceTypes'>,
): Promise<{ catalogue: GpuCatalogue; rows: WorkloadEvidenceRow[] }> {
  const imported = await database.run<InstanceTypeGpusRow>(instanceTypeGpusQuery(scope));
  const catalogue = new GpuCatalogue(imported);
  const rows = await database.run<WorkloadEvidenceRow>(
    workloadEvidenceQuery(scope, { ...request, knownInstanceTypes: catalogue.instanceTypes() }),
  );
  return { catalogue, rows };
}
