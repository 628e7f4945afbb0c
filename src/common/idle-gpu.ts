import { gpuHoursOfUnitSeconds } from './gpu-sharing';
import { round4 } from './http/decimal';

/**
 * Sums over workloads with samples: their GPU-seconds, and the busy part (× average utilization / 100),
 * in GPU share units (src/common/gpu-sharing.ts) as the rollups keep them.
 */
export interface IdleGpuSums {
  sampled_gpu_seconds: number;
  busy_gpu_seconds: number;
}

export interface IdleGpuJson {
  /** GPU-hours of the workloads that have samples: what the two figures below cover. */
  sampled_gpu_hours: number;
  idle_gpu_hours: number;
  /** Busy ÷ sampled GPU-hours: the GPU-hour-weighted average utilization as a fraction; null without samples. */
  gpu_efficiency: number | null;
}

/** Idle GPU-hours and efficiency of a set of workloads, over their sampled time only. */
export function idleGpuFigures(sums: IdleGpuSums): IdleGpuJson {
  return {
    sampled_gpu_hours: round4(gpuHoursOfUnitSeconds(sums.sampled_gpu_seconds)),
    idle_gpu_hours: round4(gpuHoursOfUnitSeconds(sums.sampled_gpu_seconds - sums.busy_gpu_seconds)),
    gpu_efficiency:
      sums.sampled_gpu_seconds === 0 ? null : round4(sums.busy_gpu_seconds / sums.sampled_gpu_seconds),
  };
}
