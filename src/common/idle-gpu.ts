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

/** What the readers take of a workload's metric aggregate: the idle parts and the ranked average. */
const AGGREGATE_COLUMNS = 'm.sample_count, m.gpu_utilization_sum, m.gpu_utilization_avg';

/**
 * Joins each row of workload `workload` (a table alias) to its metric aggregate as `alias`
 * (AGGREGATE_COLUMNS; nulls without one): one primary-key lookup per row.
 * OFFSET 0 keeps the planner from flattening it into a hash join over every aggregate of the
 * organization for the few edge and raw rows that need one.
 */
export function aggregateLookupSql(workload: string, alias: string): string {
  return `LEFT JOIN LATERAL (
    SELECT ${AGGREGATE_COLUMNS} FROM metric_aggregates m
    WHERE m.organization_id = ${workload}.organization_id AND m.workload_id = ${workload}.workload_id OFFSET 0
  ) AS ${alias} ON true`;
}

/**
 * aggregateLookupSql for rows of running workloads only: the same columns, joined from the running
 * aggregates as one set (migration …21000's partial index) rather than looked up one by one. A
 * running workload's aggregate carries status 'running', copied by the triggers in the writer's
 * transaction, so the join finds every aggregate the lookup would.
 */
export function runningAggregateJoinSql(workload: string, alias: string): string {
  // Join keys renamed: the caller's unqualified workloads columns must stay unambiguous.
  return `LEFT JOIN (
    SELECT m.organization_id AS aggregate_organization_id, m.workload_id AS aggregate_workload_id,
           ${AGGREGATE_COLUMNS}
    FROM metric_aggregates m WHERE m.status = 'running'
  ) AS ${alias} ON ${alias}.aggregate_organization_id = ${workload}.organization_id
    AND ${alias}.aggregate_workload_id = ${workload}.workload_id`;
}

/**
 * The sampled and busy parts of `amount` (numeric GPU-time) for aggregate `alias`, by the same
 * functions the rollup triggers use (migration …15000), so request-time parts match rollup rows.
 */
export function idleSharesSql(amount: string, alias: string): [sampled: string, busy: string] {
  return [
    `gpucap_sampled_share(${amount}, ${alias}.sample_count)`,
    `gpucap_busy_share(${amount}, ${alias}.gpu_utilization_sum, ${alias}.sample_count)`,
  ];
}
