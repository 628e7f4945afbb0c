import { ApiAsOfMetadataProperty, ApiRequestIdProperty } from '../../common/http/envelope-properties';
import type { GpuSharing } from '../../common/gpu-sharing';
import { GpuSharingDto } from '../../common/gpu-sharing.dto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AsOfMetadataDto } from '../../common/http/as-of-metadata.dto';

const NULLABLE_NUMBER = { type: Number, nullable: true } as const;

export class MetricSummaryDto {
  @ApiProperty({ ...NULLABLE_NUMBER, description: 'null when the window holds no sample' })
  avg: number | null;

  @ApiProperty({ ...NULLABLE_NUMBER, description: 'lowest sample in the window; null when it holds none' })
  min: number | null;

  @ApiProperty({ ...NULLABLE_NUMBER, description: 'highest sample in the window; null when it holds none' })
  max: number | null;

  @ApiProperty({ ...NULLABLE_NUMBER, description: 'the latest sample in the window' })
  current: number | null;

  @ApiPropertyOptional({ ...NULLABLE_NUMBER, description: 'median over the window (only with `step`)' })
  p50?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description: '95th percentile over the window (only with `step`)',
  })
  p95?: number | null;
}

export class SeriesValueDto {
  @ApiProperty({ ...NULLABLE_NUMBER, description: 'null when the bucket holds no sample' })
  avg: number | null;

  @ApiProperty({ ...NULLABLE_NUMBER, description: 'lowest sample in the bucket; null when it holds none' })
  min: number | null;

  @ApiProperty({ ...NULLABLE_NUMBER, description: 'highest sample in the bucket; null when it holds none' })
  max: number | null;
}

/** One step bucket; the requested metrics are keys beside `timestamp` and `sample_count`. */
export class SeriesPointDto {
  @ApiProperty({ format: 'date-time', description: 'start of the bucket' })
  timestamp: string;

  @ApiProperty({ type: 'integer', description: 'samples inside the bucket (0 for an empty bucket)' })
  sample_count: number;

  @ApiPropertyOptional({
    type: SeriesValueDto,
    description: 'percent over the bucket, when requested in metrics',
  })
  gpu_utilization?: SeriesValueDto;

  @ApiPropertyOptional({
    type: SeriesValueDto,
    description: 'percent over the bucket, when requested in metrics',
  })
  memory_utilization?: SeriesValueDto;

  @ApiPropertyOptional({
    type: SeriesValueDto,
    description: 'degrees Celsius (hottest GPU) over the bucket, when requested in metrics',
  })
  temperature?: SeriesValueDto;

  @ApiPropertyOptional({
    type: SeriesValueDto,
    description: 'watts (all GPUs together) over the bucket, when requested in metrics',
  })
  power_usage?: SeriesValueDto;

  @ApiPropertyOptional({
    type: SeriesValueDto,
    description:
      'GPUs of work done: gpu_share × gpu_utilization / 100 over the bucket, when requested in metrics',
  })
  gpu_usage?: SeriesValueDto;
}

/** Only the requested metrics are present (all five when `metrics` is omitted). */
export class MetricSummariesDto {
  @ApiPropertyOptional({ type: MetricSummaryDto, description: 'percent' })
  gpu_utilization?: MetricSummaryDto;

  @ApiPropertyOptional({ type: MetricSummaryDto, description: 'percent' })
  memory_utilization?: MetricSummaryDto;

  @ApiPropertyOptional({ type: MetricSummaryDto, description: 'degrees Celsius (hottest GPU)' })
  temperature?: MetricSummaryDto;

  @ApiPropertyOptional({ type: MetricSummaryDto, description: 'watts (all GPUs together)' })
  power_usage?: MetricSummaryDto;

  @ApiPropertyOptional({
    type: MetricSummaryDto,
    description: 'gpu_share × gpu_utilization / 100, per sample (gpu_share = gpu_count for whole GPUs)',
  })
  gpu_usage?: MetricSummaryDto;
}

export class WorkloadMetricsDto {
  @ApiProperty({ example: 'wl-0001', description: 'the workload the metrics are about' })
  workload_id: string;

  @ApiProperty({
    enum: ['last_1h', 'last_6h', 'last_24h', 'job_lifetime'],
    description: 'the window: back from completed_at (or now while running), or from started_at',
  })
  time_range: string;

  @ApiProperty({ type: MetricSummariesDto, description: 'one summary per requested metric over the window' })
  metrics: MetricSummariesDto;

  @ApiPropertyOptional({ type: 'integer', description: 'only with `step`' })
  step_seconds?: number;

  @ApiPropertyOptional({
    type: [SeriesPointDto],
    description: 'only with `step`; empty when the window has no start',
  })
  series?: SeriesPointDto[];
}

export class WorkloadMetricsEnvelopeDto {
  @ApiProperty({ type: WorkloadMetricsDto, description: "the workload's metrics" })
  data: WorkloadMetricsDto;

  @ApiAsOfMetadataProperty()
  metadata: AsOfMetadataDto;

  @ApiRequestIdProperty()
  request_id: string;
}

export class RankValueDto {
  @ApiProperty({ description: 'lifetime average (gpu_hours: gpu_hours_used)' })
  avg: number;

  @ApiProperty({ description: 'latest sample (gpu_hours: gpu_hours_used)' })
  current: number;
}

export class CostRankValueDto {
  @ApiProperty({
    example: '42.17',
    description: "the workload's cost (see docs/api.md, Cost): an exact decimal string in metadata.currency",
  })
  avg: string;

  @ApiProperty({ example: '42.17', description: 'the same amount as avg' })
  current: string;
}

/** Carries one object named after `sort_by`. */
export class RankedWorkloadDto {
  @ApiProperty({ example: 'wl-0001', description: 'the ranked workload' })
  workload_id: string;

  @ApiProperty({ example: 'resnet-sweep-3', description: "the workload's name" })
  name: string;

  @ApiProperty({ example: 'vision', description: 'the initiative (team) the workload belongs to' })
  initiative_id: string;

  @ApiProperty({ type: 'integer', description: 'Devices given: whole GPUs, MIG instances or replicas' })
  gpu_count: number;

  @ApiProperty({ description: 'Physical GPUs held (as on the workload)' })
  gpu_share: number;

  @ApiProperty({ type: GpuSharingDto, nullable: true, description: 'null for whole GPUs' })
  gpu_sharing: GpuSharing | null;

  @ApiPropertyOptional({
    type: RankValueDto,
    description: 'with sort_by=gpu_utilization; percent: avg over the lifetime, current the latest sample',
  })
  gpu_utilization?: RankValueDto;

  @ApiPropertyOptional({
    type: RankValueDto,
    description: 'with sort_by=memory_utilization; percent: avg over the lifetime, current the latest sample',
  })
  memory_utilization?: RankValueDto;

  @ApiPropertyOptional({
    type: RankValueDto,
    description: 'with sort_by=power_usage; watts: avg over the lifetime, current the latest sample',
  })
  power_usage?: RankValueDto;

  @ApiPropertyOptional({
    type: RankValueDto,
    description:
      'with sort_by=gpu_hours; GPU-hours used: both are gpu_hours_used (running workloads up to now)',
  })
  gpu_hours?: RankValueDto;

  @ApiPropertyOptional({ type: RankValueDto, description: 'both: gpu_hours_used × (1 − gpu_efficiency)' })
  idle_gpu_hours?: RankValueDto;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: '19.13',
    description:
      'Additive, with sort_by=idle_gpu_hours: the money of idle_gpu_hours, cost × (1 − gpu_efficiency) in metadata.currency (running: up to as_of), exact, rounded once; null when the workload has no cost (no price, or part of its run unpriced)',
  })
  idle_cost?: string | null;

  @ApiPropertyOptional({
    type: RankValueDto,
    description: 'avg: lifetime utilization ÷ 100; current: latest ÷ 100',
  })
  gpu_efficiency?: RankValueDto;

  @ApiPropertyOptional({
    type: CostRankValueDto,
    description:
      'Additive, with sort_by=cost: the cost of the whole run (running: up to as_of); only fully priced workloads are ranked',
  })
  cost?: CostRankValueDto;

  @ApiPropertyOptional({
    type: RankValueDto,
    description:
      'Additive, with sort_by=energy_kwh: both are the workload’s energy_kwh (running: its samples so far); only workloads with samples are ranked',
  })
  energy_kwh?: RankValueDto;
}

/** Keyed by `sort_by`: the mean of `avg` over every ranked workload (null when none is ranked). */
export class ScopeAverageDto {
  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=gpu_utilization: mean of avg over every ranked workload (percent); null when none is ranked',
  })
  gpu_utilization?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=memory_utilization: mean of avg over every ranked workload (percent); null when none is ranked',
  })
  memory_utilization?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=power_usage: mean of avg over every ranked workload (watts); null when none is ranked',
  })
  power_usage?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=gpu_hours: mean of avg over every ranked workload (GPU-hours); null when none is ranked',
  })
  gpu_hours?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=idle_gpu_hours: mean of avg over every ranked workload (GPU-hours); null when none is ranked',
  })
  idle_gpu_hours?: number | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'with sort_by=gpu_efficiency: mean of avg over every ranked workload (0 to 1); null when none is ranked',
  })
  gpu_efficiency?: number | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description:
      'Additive, with sort_by=cost: the exact mean cost of the ranked workloads, rounded once to the minor units; null when none is ranked',
  })
  cost?: string | null;

  @ApiPropertyOptional({
    ...NULLABLE_NUMBER,
    description:
      'Additive, with sort_by=energy_kwh: the exact mean energy of the ranked workloads (kWh), rounded once to 4 decimals; null when none is ranked',
  })
  energy_kwh?: number | null;
}

export class RankedMetricsDto {
  @ApiProperty({ type: [RankedWorkloadDto], description: 'this page of the ranking, in rank order' })
  workloads: RankedWorkloadDto[];

  @ApiProperty({
    type: ScopeAverageDto,
    description: 'the mean of avg over every ranked workload, keyed by sort_by',
  })
  scope_average: ScopeAverageDto;
}

export class TotalCountMetadataDto extends AsOfMetadataDto {
  @ApiProperty({ type: 'integer', description: 'every ranked workload, not only this page' })
  total_count: number;
}

export class RankedMetricsEnvelopeDto {
  @ApiProperty({ type: RankedMetricsDto, description: 'the ranking' })
  data: RankedMetricsDto;

  @ApiProperty({
    type: TotalCountMetadataDto,
    description: 'the ranked count and the instant the answer describes',
  })
  metadata: TotalCountMetadataDto;

  @ApiRequestIdProperty()
  request_id: string;
}
