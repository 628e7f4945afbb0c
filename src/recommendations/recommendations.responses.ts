import type { CsvRow } from '../common/http/csv/csv-table';
import { flattenRow } from '../common/http/csv/csv-table';
import { round4 } from '../common/http/decimal';
import { GPU_SHARE_UNITS, type GpuSharing, gpuSharingColumns } from '../common/gpu-sharing';
import type { Advice, Holding, NoAdviceReason } from './rightsizing';
import type { WorkloadEvidenceRow } from './rightsizing.queries';
import type { WorkloadStatus } from '../core/workload-status';

export interface HoldingJson {
  gpu_count: number;
  gpu_share: number;
  gpu_sharing: GpuSharing | null;
  memory_gib: number;
}

export interface RecommendationJson {
  workload_id: string;
  name: string;
  initiative_id: string;
  submitted_by: string;
  status: WorkloadStatus;
  instance_type: string;
  cluster_id: string;
  gpu_model: string;
  current: HoldingJson;
  recommended: HoldingJson;
  evidence: {
    samples: number;
    coverage: number;
    p95_gpu_utilization: number;
    p99_memory_used_gib: number;
    memory_need_gib: number;
    compute_need_gpus: number;
  };
  risk: number;
  gpu_hours_saved: number;
  cost_saved: string | null;
}

export interface InitiativeTotalsJson {
  initiative_id: string;
  recommendations: number;
  gpu_hours_saved: number;
  cost_saved: string | null;
  unpriced_gpu_hours_saved: number;
}

export type WithoutAdviceJson = Record<NoAdviceReason, number>;

function holdingJson(holding: Holding): HoldingJson {
  return {
    gpu_count: holding.gpu_count,
    gpu_share: round4(holding.units / GPU_SHARE_UNITS),
    gpu_sharing: holding.gpu_sharing,
    memory_gib: round4(holding.memory_gib),
  };
}

export function toRecommendation(
  row: WorkloadEvidenceRow,
  advice: Advice,
  costSaved: string | null,
): RecommendationJson {
  return {
    workload_id: row.workload_id,
    name: row.name,
    initiative_id: row.initiative_id,
    submitted_by: row.submitted_by,
    status: row.status,
    instance_type: row.instance_type,
    cluster_id: row.cluster_id,
    gpu_model: advice.gpus.gpu_model,
    current: holdingJson(advice.current),
    recommended: holdingJson(advice.recommended),
    evidence: {
      samples: advice.samples,
      coverage: round4(advice.coverage),
      p95_gpu_utilization: round4(advice.p95_gpu_utilization),
      p99_memory_used_gib: round4(advice.p99_memory_used_gib),
      memory_need_gib: round4(advice.memory_need_gib),
      compute_need_gpus: round4(advice.compute_need_gpus),
    },
    risk: round4(advice.risk),
    gpu_hours_saved: round4(advice.gpu_hours_saved),
    cost_saved: costSaved,
  };
}

export const RECOMMENDATION_CSV_COLUMNS = [
  'workload_id',
  'name',
  'initiative_id',
  'submitted_by',
  'status',
  'instance_type',
  'cluster_id',
  'gpu_model',
  ...['current', 'recommended'].flatMap((holding) => [
    `${holding}_gpu_count`,
    `${holding}_gpu_share`,
    `${holding}_gpu_sharing_mode`,
    `${holding}_gpu_sharing_profile`,
    `${holding}_memory_gib`,
  ]),
  'evidence_samples',
  'evidence_coverage',
  'evidence_p95_gpu_utilization',
  'evidence_p99_memory_used_gib',
  'evidence_memory_need_gib',
  'evidence_compute_need_gpus',
  'risk',
  'gpu_hours_saved',
  'cost_saved',
];

/** One CSV row: nested objects as `parent_child` columns, `gpu_sharing` as its mode and profile. */
export function recommendationCsvRow(item: RecommendationJson): CsvRow {
  const holding = ({ gpu_sharing: sharing, ...rest }: HoldingJson) => {
    const { gpu_sharing_mode, gpu_sharing_profile } = gpuSharingColumns(sharing);
    return { ...rest, gpu_sharing_mode, gpu_sharing_profile };
  };
  return flattenRow({ ...item, current: holding(item.current), recommended: holding(item.recommended) });
}
