import { ApiProperty } from '@nestjs/swagger';
import { CurrencyMetadataDto } from '../../common/cost.dto';
import type { GpuSharing } from '../../common/gpu-sharing';
import { GpuSharingDto } from '../../common/gpu-sharing.dto';
import { ApiRequestIdProperty } from '../../common/http/envelope-properties';
import { STATS_TIME_RANGES } from '../../common/time-range';
import { WORKLOAD_STATUSES, type WorkloadStatus } from '../../core/workload-status';

export class GpuHoldingDto {
  @ApiProperty({ type: 'integer', description: 'Devices: whole GPUs, or MIG instances of the profile' })
  gpu_count: number;
  @ApiProperty({ example: 0.1429, description: 'Physical GPUs held (1/7 for one 1g instance of an H100)' })
  gpu_share: number;
  @ApiProperty({
    type: GpuSharingDto,
    nullable: true,
    description: 'null for whole GPUs; {"mode": "mig", "profile": …} for MIG instances',
  })
  gpu_sharing: GpuSharing | null;
  @ApiProperty({ example: 10, description: 'GPU memory held, GiB: the profile’s, or the GPUs’' })
  memory_gib: number;
}

export class RecommendationEvidenceDto {
  @ApiProperty({ type: 'integer', description: 'Samples of the run inside the range (at least 30)' })
  samples: number;
  @ApiProperty({
    example: 0.98,
    description: 'From the first to the last of them, over the run time inside the range (at least 0.5)',
  })
  coverage: number;
  @ApiProperty({ example: 8, description: '95th percentile of gpu_utilization, percent' })
  p95_gpu_utilization: number;
  @ApiProperty({
    example: 6,
    description: '99th percentile of the memory used, GiB: memory_utilization × the memory held',
  })
  p99_memory_used_gib: number;
  @ApiProperty({ example: 7.2, description: 'p99_memory_used_gib × 1.2' })
  memory_need_gib: number;
  @ApiProperty({
    example: 0.096,
    description: 'p95_gpu_utilization ÷ 100 × the compute held (GPUs) × 1.2',
  })
  compute_need_gpus: number;
}

export class RecommendationDto {
  @ApiProperty({ example: 'wl-0001', description: 'the workload id' }) workload_id: string;
  @ApiProperty({ description: "the workload's name" }) name: string;
  @ApiProperty({ description: 'the initiative (team) it belongs to' }) initiative_id: string;
  @ApiProperty({ description: 'who submitted it' }) submitted_by: string;
  @ApiProperty({ enum: WORKLOAD_STATUSES, description: 'its status now' }) status: WorkloadStatus;
  @ApiProperty({ example: 'p5.48xlarge', description: 'the instance type it runs on' }) instance_type: string;
  @ApiProperty({ description: 'the cluster it runs in' }) cluster_id: string;
  @ApiProperty({ example: 'H100 80GB', description: 'the GPU of the instance type (built in or imported)' })
  gpu_model: string;
  @ApiProperty({ type: GpuHoldingDto, description: 'what the workload holds' }) current: GpuHoldingDto;
  @ApiProperty({ type: GpuHoldingDto, description: 'what would have covered its needs' })
  recommended: GpuHoldingDto;
  @ApiProperty({ type: RecommendationEvidenceDto, description: 'what the advice rests on' })
  evidence: RecommendationEvidenceDto;
  @ApiProperty({
    example: 0.005,
    description:
      'Share of the samples whose used memory exceeds the recommendation’s memory (never above 0.01)',
  })
  risk: number;
  @ApiProperty({
    example: 8.5714,
    description: '(current − recommended gpu_share) × hours of the run inside the range',
  })
  gpu_hours_saved: number;
  @ApiProperty({
    type: String,
    nullable: true,
    example: '107.14',
    description:
      'gpu_hours_saved at the price of each period the run fell in, in metadata.currency, exact, rounded once; null where a price does not cover the run inside the range',
  })
  cost_saved: string | null;
}

export class RecommendationsRangeDto {
  @ApiProperty({ enum: STATS_TIME_RANGES, description: 'The range used (custom when dates were given)' })
  time_range: string;
  @ApiProperty({ format: 'date-time', description: 'Inclusive start' }) start: string;
  @ApiProperty({ format: 'date-time', description: 'Exclusive end' }) end: string;
}

export class RecommendationsDto {
  @ApiProperty({ type: RecommendationsRangeDto, description: 'the resolved range' })
  range: RecommendationsRangeDto;
  @ApiProperty({
    type: [RecommendationDto],
    description: 'this page, most GPU-hours saved first (then workload_id)',
  })
  recommendations: RecommendationDto[];
}

export class InitiativeSavingsDto {
  @ApiProperty({ description: 'the initiative (team)' }) initiative_id: string;
  @ApiProperty({ type: 'integer', description: 'its recommendations, across all pages' })
  recommendations: number;
  @ApiProperty({ description: 'their gpu_hours_saved, added' }) gpu_hours_saved: number;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'their priced cost_saved, added exactly and rounded once; null without a currency',
  })
  cost_saved: string | null;
  @ApiProperty({ description: 'gpu_hours_saved of its recommendations without a cost_saved' })
  unpriced_gpu_hours_saved: number;
}

export class WithoutAdviceDto {
  @ApiProperty({ type: 'integer', description: 'instance type known neither built in nor imported' })
  unknown_instance_type: number;
  @ApiProperty({ type: 'integer', description: 'time-sliced or MPS replicas: they already share a GPU' })
  shared_gpu: number;
  @ApiProperty({ type: 'integer', description: 'a MIG profile the instance type’s GPU does not have' })
  unknown_mig_profile: number;
  @ApiProperty({ type: 'integer', description: 'fewer than 30 samples inside the range' })
  too_few_samples: number;
  @ApiProperty({ type: 'integer', description: 'samples covering less than half the run inside the range' })
  low_coverage: number;
  @ApiProperty({ type: 'integer', description: 'what covers the needs is not smaller than what it holds' })
  not_smaller: number;
  @ApiProperty({ type: 'integer', description: 'more than 1 % of the samples would not have fitted' })
  risk_above_limit: number;
}

export class RecommendationsMetadataDto extends CurrencyMetadataDto {
  @ApiProperty({ type: String, nullable: true, description: 'null on the page holding the last item' })
  next_token: string | null;
  @ApiProperty({ type: 'integer', description: 'every recommendation across all pages' })
  total_count: number;
  @ApiProperty({
    type: [InitiativeSavingsDto],
    description: 'Totals per team of every recommendation across all pages, by initiative_id',
  })
  totals_by_initiative: InitiativeSavingsDto[];
  @ApiProperty({
    type: WithoutAdviceDto,
    description: 'The other workloads of the request, counted by why they got no advice',
  })
  without_advice: WithoutAdviceDto;
  @ApiProperty({
    type: [String],
    description: 'The instance types of those counted in unknown_instance_type: import their GPU facts',
  })
  unknown_instance_types: string[];
}

export class RecommendationsEnvelopeDto {
  @ApiProperty({ type: RecommendationsDto, description: 'the page of recommendations' })
  data: RecommendationsDto;
  @ApiProperty({
    type: RecommendationsMetadataDto,
    description: 'paging, totals, the instant the answer describes and its currency',
  })
  metadata: RecommendationsMetadataDto;
  @ApiRequestIdProperty()
  request_id: string;
}
