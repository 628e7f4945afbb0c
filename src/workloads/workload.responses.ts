import { gpusOfUnits, type GpuSharing, shareFieldsOf } from '../common/gpu-sharing';
import { round4 } from '../common/http/decimal';
import type { WorkloadDetailRow, WorkloadSummaryRow } from './workloads.queries';

/** Rows of workloads.queries.ts shaped into the list's and the detail's JSON. */

/** The columns a response carries as the database returns them. */
type WorkloadAttributes = Pick<
  WorkloadSummaryRow,
  | 'workload_id'
  | 'name'
  | 'status'
  | 'submitted_by'
  | 'initiative_id'
  | 'instance_type'
  | 'gpu_count'
  | 'cluster_id'
>;

export interface WorkloadSummaryJson extends WorkloadAttributes {
  /** Physical GPUs held: gpu_count for whole GPUs, less for MIG instances and shared replicas. */
  gpu_share: number;
  gpu_sharing: GpuSharing | null;
  submitted_at: string;
  started_at: string | null;
  /** Seconds from submission to start; for a pending workload, to the answer's as_of; null if cancelled unstarted. */
  wait_seconds: number | null;
  /** In metadata.currency, exact, with its minor units ("12.34"); null when part of the run has no price. */
  cost: string | null;
  /** Each reading's power held until the next, within the organization's sample gap; null without samples. */
  energy_kwh: number | null;
  /** energy_kwh × PUE × the carbon intensity of each reading's time; null while part of it has none. */
  carbon_kg: number | null;
}

export interface WorkloadDetailJson extends WorkloadSummaryJson {
  completed_at: string | null;
  duration_seconds: number;
  gpu_hours_used: number;
  exit_code: number | null;
  is_managed: boolean;
  namespace: string;
  idle_gpu_hours: number | null;
  idle_cost: string | null;
  gpu_efficiency: number | null;
}

export function toWorkloadSummary(row: WorkloadSummaryRow | WorkloadDetailRow): WorkloadSummaryJson {
  return {
    workload_id: row.workload_id,
    name: row.name,
    status: row.status,
    submitted_by: row.submitted_by,
    initiative_id: row.initiative_id,
    instance_type: row.instance_type,
    gpu_count: row.gpu_count,
    cluster_id: row.cluster_id,
    ...shareFieldsOf(row),
    submitted_at: row.submitted_at.toISOString(),
    started_at: row.started_at === null ? null : row.started_at.toISOString(),
    wait_seconds: row.wait_seconds,
    cost: row.cost,
    energy_kwh: row.energy_kwh,
    carbon_kg: row.carbon_kg,
  };
}

/** Finished: from the database (whole seconds); running: up to `now`; never started: 0. */
export function durationSeconds(row: WorkloadDetailRow, now: Date): number {
  if (row.finished_duration_seconds !== null) return row.finished_duration_seconds;
  if (row.started_at === null || row.completed_at !== null) return 0;
  return Math.max(0, Math.floor((now.getTime() - row.started_at.getTime()) / 1000));
}

export function toWorkloadDetail(row: WorkloadDetailRow, now: Date): WorkloadDetailJson {
  const duration = durationSeconds(row, now);
  const gpuHours = (gpusOfUnits(row.gpu_share_units) * duration) / 3600;
  const efficiency = row.average_gpu_utilization === null ? null : row.average_gpu_utilization / 100;
  return {
    ...toWorkloadSummary(row),
    completed_at: row.completed_at === null ? null : row.completed_at.toISOString(),
    duration_seconds: duration,
    gpu_hours_used: round4(gpuHours),
    exit_code: row.exit_code,
    is_managed: row.is_managed,
    namespace: row.namespace,
    idle_gpu_hours: efficiency === null ? null : round4(gpuHours * (1 - efficiency)),
    idle_cost: row.idle_cost,
    gpu_efficiency: efficiency === null ? null : round4(efficiency),
  };
}
