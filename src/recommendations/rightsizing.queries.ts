import { type AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import { overlapMicrosecondsSql } from '../core/price-overlap';
import {
  initiativeScopeSql,
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { GPU_SHARE_COLUMNS, type GpuShareColumns, type MigProfile } from '../common/gpu-sharing';
import type { WorkloadStatus } from '../core/workload-status';
import { sampleEvidenceSql } from '../rollups/workload-summaries/workload-summaries.queries';

/** The workloads whose samples the advice reads (docs/api.md, "Could run smaller"). */
export interface EvidenceRequest {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  /** A running workload runs up to here. */
  now: Date;
  initiativeId?: string;
  clusterId?: string;
  instanceType?: string;
  runningOnly?: boolean;
  /** Instance types with GPU facts: only their workloads' samples are read. */
  knownInstanceTypes: string[];
}

export interface WorkloadEvidenceRow extends GpuShareColumns {
  workload_id: string;
  name: string;
  initiative_id: string;
  submitted_by: string;
  status: WorkloadStatus;
  instance_type: string;
  cluster_id: string;
  gpu_count: number;
  /** The run inside the range, seconds (microseconds exact). */
  run_seconds: number;
  /** Samples of the run inside the range; 0 when none was read (unknown instance type, shared GPU). */
  sample_count: number;
  /** From the first to the last of them; null without samples. */
  sampled_seconds: number | null;
  p95_gpu_utilization: number | null;
  p99_memory_utilization: number | null;
  /** The largest ⌊samples / 100⌋ + 1 memory utilizations, largest first: what the risk can reach. */
  top_memory_utilization: number[] | null;
  /** Σ price × microseconds of the run inside the range (numeric text): a cost before × share ÷ hour. */
  price_us: string;
  /** Whether a price covers every microsecond of that run. */
  priced: boolean;
}

/**
 * Every workload in scope whose run overlaps [from, to) and that holds GPUs, with its run inside the
 * range and the statistics of its samples there, from both sample stores: count, span, the
 * percentiles the rule takes (percentile_cont), and the top 1 % of memory readings (and one more)
 * from which the risk of any recommendation is counted; a finished run wholly inside the range from
 * its stored summary (sampleEvidenceSql). Samples are read only for whole GPUs and MIG slices of a
 * known instance type; the others are listed so the answer can say why they got none.
 */
export function workloadEvidenceQuery(scope: AuthScope, request: EvidenceRequest): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const from = `${params.add(request.from)}::timestamptz`;
  const to = `${params.add(request.to)}::timestamptz`;
  const now = `${params.add(request.now)}::timestamptz`;
  const known = params.add(request.knownInstanceTypes);
  const conditions = [
    `w.organization_id = ${organization}`,
    `w.started_at < ${to}`,
    `coalesce(w.completed_at, ${now}) > ${from}`,
    'w.gpu_count > 0',
  ];
  const initiatives = scopedInitiativeIds(scope);
  if (initiatives !== null) conditions.push(initiativeScopeSql('w.initiative_id', params.add(initiatives)));
  if (request.initiativeId !== undefined)
    conditions.push(`w.initiative_id = ${params.add(request.initiativeId)}`);
  if (request.clusterId !== undefined) conditions.push(`w.cluster_id = ${params.add(request.clusterId)}`);
  if (request.instanceType !== undefined)
    conditions.push(`w.instance_type = ${params.add(request.instanceType)}`);
  if (request.runningOnly) conditions.push(`w.status = 'running'`);
  const overlap = overlapMicrosecondsSql('p', 'r.run_from', 'r.run_to');
  return scopedStatement(
    scope,
    `SELECT w.workload_id, w.name, w.initiative_id, w.submitted_by, w.status, w.instance_type, w.cluster_id,
       w.gpu_count, ${GPU_SHARE_COLUMNS.split(', ')
         .map((column) => `w.${column}`)
         .join(', ')},
       date_part('epoch', r.run_to - r.run_from)::float8 AS run_seconds,
       e.sample_count, e.sampled_seconds, e.p95_gpu_utilization, e.p99_memory_utilization,
       e.top_memory_utilization, c.price_us::text AS price_us,
       (c.price_count > 0 AND c.priced_us >= round(date_part('epoch', r.run_to - r.run_from) * 1e6)) AS priced
     FROM workloads w
     CROSS JOIN LATERAL (
       SELECT greatest(w.started_at, ${from}) AS run_from, least(coalesce(w.completed_at, ${now}), ${to}) AS run_to
     ) r
     ${sampleEvidenceSql({
       workload: 'w',
       from,
       to,
       runFrom: 'r.run_from',
       runTo: 'r.run_to',
       read: `w.instance_type = ANY (${known}::text[]) AND (w.gpu_sharing_mode IS NULL OR w.gpu_sharing_mode = 'mig')`,
       alias: 'e',
     })}
     LEFT JOIN LATERAL (
       SELECT count(*) AS price_count, coalesce(sum(p.price_per_gpu_hour * ${overlap}), 0) AS price_us,
              coalesce(sum(${overlap}), 0) AS priced_us
       FROM gpu_prices p
       WHERE p.organization_id = w.organization_id AND p.instance_type = w.instance_type
     ) c ON true
     WHERE ${conditions.join(' AND ')}
     ORDER BY w.workload_id COLLATE "C"`,
    params.values,
  );
}

export interface InstanceTypeGpusRow {
  instance_type: string;
  gpu_model: string;
  gpu_memory_gib: number;
  mig_capable: boolean;
  mig_profiles: MigProfile[];
}

/** The organization's imported GPU facts per instance type (organization rows any member may read). */
export function instanceTypeGpusQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  return organizationStatement(
    scope,
    `SELECT instance_type, gpu_model, gpu_memory_gib, mig_capable, mig_profiles
     FROM instance_type_gpus WHERE organization_id = ${params.organization}
     ORDER BY instance_type COLLATE "C"`,
    params.values,
  );
}
