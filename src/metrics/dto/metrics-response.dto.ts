import type { GpuSharing } from '../../common/gpu-sharing';
import { GpuSharingDto } from '../../workloads/dto/workload-response.dto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AsOfMetadataDto } from '../../common/http/as-of-metadata.dto';

const NULLABLE_NUMBER = { type: Number, nullable: true } as const;

export class MetricSummaryDto {
  @ApiProperty({ ...NULLABLE_NUMBER, description: 'null when the window holds no sample' })
  avg: number | null;

  @ApiProperty(NULLABLE_NUMBER)
  min: number | null;

  @ApiProperty(NULLABLE_NUMBER)
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

  @ApiProperty(NULLABLE_NUMBER)
  min: number | null;

  @ApiProperty(NULLABLE_NUMBER)
  max: number | null;
}

/** One step bucket; the requested metrics are keys beside `timestamp` and `sample_count`. */
export class SeriesPointDto {
  @ApiProperty({ format: 'date-time', description: 'start of the bucket' })
  timestamp: string;

  @ApiProperty({ type: 'integer' })
  sample_count: number;

  @ApiPropertyOptional({ type: SeriesValueDto })
  gpu_utilization?: SeriesValueDto;

  @ApiPropertyOptional({ type: SeriesValueDto })
  memory_utilization?: SeriesValueDto;

  @ApiPropertyOptional({ type: SeriesValueDto })
  temperature?: SeriesValueDto;

  @ApiPropertyOptional({ type: SeriesValueDto })
  power_usage?: SeriesValueDto;

  @ApiPropertyOptional({ type: SeriesValueDto })
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
  @ApiProperty()
  workload_id: string;

  @ApiProperty({ enum: ['last_1h', 'last_6h', 'last_24h', 'job_lifetime'] })
  time_range: string;

  @ApiProperty({ type: MetricSummariesDto })
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
  @ApiProperty({ type: WorkloadMetricsDto })
  data: WorkloadMetricsDto;

  @ApiProperty({ type: AsOfMetadataDto })
  metadata: AsOfMetadataDto;

  @ApiProperty()
  request_id: string;
}

export class RankValueDto {
  @ApiProperty({ description: 'lifetime average (gpu_hours: gpu_hours_used)' })
  avg: number;

  @ApiProperty({ description: 'latest sample (gpu_hours: gpu_hours_used)' })
  current: number;
}

/** Carries one object named after `sort_by`. */
export class RankedWorkloadDto {
  @ApiProperty()
  workload_id: string;

  @ApiProperty()
  name: string;

  @ApiProperty()
  initiative_id: string;

  @ApiProperty({ type: 'integer', description: 'Devices given: whole GPUs, MIG instances or replicas' })
  gpu_count: number;

  @ApiProperty({ description: 'Physical GPUs held (as on the workload)' })
  gpu_share: number;

  @ApiProperty({ type: GpuSharingDto, nullable: true, description: 'null for whole GPUs' })
  gpu_sharing: GpuSharing | null;

  @ApiPropertyOptional({ type: RankValueDto })
  gpu_utilization?: RankValueDto;

  @ApiPropertyOptional({ type: RankValueDto })
  memory_utilization?: RankValueDto;

  @ApiPropertyOptional({ type: RankValueDto })
  power_usage?: RankValueDto;

  @ApiPropertyOptional({ type: RankValueDto })
  gpu_hours?: RankValueDto;

  @ApiPropertyOptional({ type: RankValueDto, description: 'both: gpu_hours_used × (1 − gpu_efficiency)' })
  idle_gpu_hours?: RankValueDto;

  @ApiPropertyOptional({
    type: RankValueDto,
    description: 'avg: lifetime utilization ÷ 100; current: latest ÷ 100',
  })
  gpu_efficiency?: RankValueDto;
}

/** Keyed by `sort_by`: the mean of `avg` over every ranked workload (null when none is ranked). */
export class ScopeAverageDto {
  @ApiPropertyOptional(NULLABLE_NUMBER)
  gpu_utilization?: number | null;

  @ApiPropertyOptional(NULLABLE_NUMBER)
  memory_utilization?: number | null;

  @ApiPropertyOptional(NULLABLE_NUMBER)
  power_usage?: number | null;

  @ApiPropertyOptional(NULLABLE_NUMBER)
  gpu_hours?: number | null;

  @ApiPropertyOptional(NULLABLE_NUMBER)
  idle_gpu_hours?: number | null;

  @ApiPropertyOptional(NULLABLE_NUMBER)
  gpu_efficiency?: number | null;
}

export class RankedMetricsDto {
  @ApiProperty({ type: [RankedWorkloadDto] })
  workloads: RankedWorkloadDto[];

  @ApiProperty({ type: ScopeAverageDto })
  scope_average: ScopeAverageDto;
}

export class TotalCountMetadataDto extends AsOfMetadataDto {
  @ApiProperty({ type: 'integer', description: 'every ranked workload, not only this page' })
  total_count: number;
}

export class RankedMetricsEnvelopeDto {
  @ApiProperty({ type: RankedMetricsDto })
  data: RankedMetricsDto;

  @ApiProperty({ type: TotalCountMetadataDto })
  metadata: TotalCountMetadataDto;

  @ApiProperty()
  request_id: string;
}
