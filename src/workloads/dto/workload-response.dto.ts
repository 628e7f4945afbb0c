import { ApiRequestIdProperty } from '../../common/http/envelope-properties';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { type GpuSharing } from '../../common/gpu-sharing';
import { GpuSharingDto } from '../../common/gpu-sharing.dto';
import { WORKLOAD_STATUSES, WorkloadStatus } from '../../core/workload-status';
import { EnergyFiguresDto } from '../../common/energy.dto';
import { IdleGpuFiguresDto } from '../../common/idle-gpu.dto';
import { CostFiguresDto, CurrencyMetadataDto } from '../../common/cost.dto';

export class WorkloadSummaryDto {
  @ApiProperty({ example: 'wl-0001', description: 'the workload id, unique in the organization' })
  workload_id: string;
  @ApiProperty({ example: 'resnet-sweep-3', description: "the workload's name as submitted" }) name: string;
  @ApiProperty({
    enum: WORKLOAD_STATUSES,
    description: 'pending (not started), running, or the terminal completed, failed, cancelled',
  })
  status: WorkloadStatus;
  @ApiProperty({ example: 'alice@example.com', description: 'who submitted it' }) submitted_by: string;
  @ApiProperty({ example: 'vision', description: 'the initiative (team) it belongs to' })
  initiative_id: string;
  @ApiProperty({
    example: 'p5.48xlarge',
    description: 'the instance type it ran on; the pool owning this type is the budget it draws on',
  })
  instance_type: string;
  @ApiProperty({
    type: 'integer',
    description: 'Devices the workload was given: whole GPUs, MIG instances or time-sliced/MPS replicas',
  })
  gpu_count: number;
  @ApiProperty({ description: 'The cluster the workload ran in' }) cluster_id: string;
  @ApiProperty({
    description:
      'Physical GPUs the workload holds: gpu_count for whole GPUs, gpu_count × the MIG profile share, or gpu_count ÷ replicas (kept to 1/5040 of a GPU, shown with 4 decimals). Every GPU-hour figure is gpu_share × hours',
    example: 0.2857,
  })
  gpu_share: number;
  @ApiProperty({
    type: GpuSharingDto,
    nullable: true,
    description: 'null for whole GPUs; how the devices are shared otherwise',
  })
  gpu_sharing: GpuSharing | null;
  @ApiProperty({
    format: 'date-time',
    example: '2026-11-20T10:15:00.000Z',
    description: 'when it was submitted',
  })
  submitted_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'null while pending' })
  started_at: string | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 95,
    description:
      'Additive: whole seconds from submitted_at to started_at; while pending, to metadata.as_of (the wait so far); null for a workload cancelled before it started',
  })
  wait_seconds: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    example: '42.17',
    description:
      'Additive: gpu_share × hours × price per GPU-hour of its instance type, each part of the run at the price of its period (running: up to as_of), in metadata.currency, exact, rounded to the currency’s minor units; null when part of the run has no price (never 0 for unknown)',
  })
  cost: string | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    example: 0.3,
    description:
      'Additive: energy the workload drew, kWh (4 decimals): each sample’s power_usage held until the next sample, for at most the organization’s max_sample_gap_seconds (default 120); a finished workload’s last sample holds until completed_at within the same bound, a running one’s holds nothing yet. null without samples',
  })
  energy_kwh: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    example: 0.1459,
    description:
      'Additive: kg CO2e (4 decimals): each sample’s held energy × pue × grams_co2e_per_kwh ÷ 1000 of the carbon intensity period of the workload’s cluster covering the sample’s time; null without samples, or when some of the energy falls where no period covers it',
  })
  carbon_kg: number | null;
}

export class WorkloadDetailDto extends WorkloadSummaryDto {
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'when it finished; null while pending or running',
  })
  completed_at: string | null;
  @ApiProperty({ type: 'integer', description: 'started_at to completed_at, or to now while running' })
  duration_seconds: number;
  @ApiProperty({ description: 'gpu_share × duration_seconds / 3600 (gpu_count × … for whole GPUs)' })
  gpu_hours_used: number;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'the exit code once finished; null before, and may stay null for a cancelled workload',
  })
  exit_code: number | null;
  @ApiProperty({
    description: 'whether the platform manages the workload, as imported or set by the sync source',
  })
  is_managed: boolean;
  @ApiProperty({ example: 'vision', description: 'the cluster namespace it ran in' }) namespace: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'gpu_hours_used × (1 − gpu_efficiency): GPU-hours held but not used; null without samples',
  })
  idle_gpu_hours: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Additive: cost × (1 − gpu_efficiency), the money of idle_gpu_hours; null without cost or samples',
  })
  idle_cost: string | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'average gpu_utilization over all samples ÷ 100 (0..1); null without samples',
  })
  gpu_efficiency: number | null;
}

export class WorkloadListDto {
  @ApiProperty({ type: [WorkloadSummaryDto], description: 'this page, newest submitted first' })
  workloads: WorkloadSummaryDto[];
}

export class PageMetadataDto extends CurrencyMetadataDto {
  @ApiProperty({ type: String, nullable: true, description: 'null on the page holding the last item' })
  next_token: string | null;
  @ApiProperty({ type: 'integer', description: 'every matching workload across all pages' })
  total_count: number;
}

export class WorkloadListEnvelopeDto {
  @ApiProperty({ type: WorkloadListDto, description: 'the page of workloads' }) data: WorkloadListDto;
  @ApiProperty({ type: PageMetadataDto, description: 'paging and the instant the answer describes' })
  metadata: PageMetadataDto;
  @ApiRequestIdProperty()
  request_id: string;
}

export class WorkloadDetailEnvelopeDto {
  @ApiProperty({ type: WorkloadDetailDto, description: 'the workload' }) data: WorkloadDetailDto;
  @ApiProperty({
    type: CurrencyMetadataDto,
    description: 'the instant the answer describes and its currency',
  })
  metadata: CurrencyMetadataDto;
  @ApiRequestIdProperty()
  request_id: string;
}

export class QueueWaitDto {
  @ApiProperty({ type: 'integer', description: 'workloads of the set that started (their wait is known)' })
  started: number;
  @ApiProperty({ type: Number, nullable: true, description: 'mean wait_seconds of those; null when none' })
  avg_seconds: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      "median wait_seconds, within 1 % of PostgreSQL's percentile_cont(0.5) (from wait histograms); null when none started",
  })
  p50_seconds: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      '95th percentile of wait_seconds, within 1 % of percentile_cont(0.95) (from wait histograms); null when none started',
  })
  p95_seconds: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'the longest wait; null when none started' })
  max_seconds: number | null;
}

export class PendingDemandDto {
  @ApiProperty({ type: 'integer', description: 'workloads of the set still pending' }) count: number;
  @ApiProperty({ type: 'integer', description: 'their gpu_count summed (devices asked for)' }) gpus: number;
  @ApiProperty({ description: 'their gpu_share summed (physical GPUs asked for)' }) gpu_share: number;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'submitted_at of the one waiting longest; null when none is pending',
  })
  oldest_submitted_at: string | null;
}

const QUEUE_WAIT_DESCRIPTION =
  'Additive: the queue waits (started_at − submitted_at, whole seconds) of the workloads of the set that started';
const PENDING_DESCRIPTION = 'Additive: the workloads of the set still pending, and what they ask for';

/** The idle figures, the money and the energy beside a set's GPU-hours: the statistics' summary, groups and buckets. */
class StatsMoneyFiguresDto extends IdleGpuFiguresDto {
  @ApiProperty({ type: String, nullable: true, description: CostFiguresDto.TOTAL_COST })
  total_cost: string | null;
  @ApiProperty({ description: CostFiguresDto.UNPRICED })
  unpriced_gpu_hours: number;
  @ApiProperty({ type: String, nullable: true, description: CostFiguresDto.IDLE_COST })
  idle_cost: string | null;
  @ApiProperty({ description: EnergyFiguresDto.TOTAL_ENERGY }) total_energy_kwh: number;
  @ApiProperty({ description: EnergyFiguresDto.TOTAL_CARBON }) total_carbon_kg: number;
  @ApiProperty({ description: EnergyFiguresDto.UNCOVERED }) uncovered_energy_kwh: number;
}

export class WorkloadStatsSummaryDto extends StatsMoneyFiguresDto {
  @ApiProperty({ type: 'integer', description: 'workloads submitted in the range' }) total_workloads: number;
  @ApiProperty({ description: 'their gpu_hours_used (gpu_share × hours; running ones up to now)' })
  total_gpu_hours: number;
  @ApiProperty({ type: Number, nullable: true, description: 'finished workloads only; null when none' })
  average_duration_seconds: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'completed / (completed + failed)' })
  success_rate: number | null;
  @ApiProperty({ type: QueueWaitDto, description: QUEUE_WAIT_DESCRIPTION }) queue_wait: QueueWaitDto;
  @ApiProperty({ type: PendingDemandDto, description: PENDING_DESCRIPTION }) pending: PendingDemandDto;
}

export class WorkloadStatsGroupDto extends StatsMoneyFiguresDto {
  @ApiPropertyOptional({ description: 'the group key with group_by=submitted_by' }) submitted_by?: string;
  @ApiPropertyOptional({ description: 'the group key with group_by=initiative_id' }) initiative_id?: string;
  @ApiPropertyOptional({ description: 'the group key with group_by=instance_type' }) instance_type?: string;
  @ApiPropertyOptional({ description: 'the group key with group_by=cluster_id' }) cluster_id?: string;
  @ApiProperty({ type: 'integer', description: "the group's workloads submitted in the range (or bucket)" })
  workload_count: number;
  @ApiProperty({ description: 'their gpu_hours_used, all of each run counted where it was submitted' })
  gpu_hours: number;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'completed / (completed + failed); null when neither happened',
  })
  success_rate: number | null;
  @ApiProperty({ type: QueueWaitDto, description: QUEUE_WAIT_DESCRIPTION }) queue_wait: QueueWaitDto;
  @ApiProperty({ type: PendingDemandDto, description: PENDING_DESCRIPTION }) pending: PendingDemandDto;
}

export class WorkloadStatsRangeDto {
  @ApiProperty({ description: 'The range used (custom when dates were given)' }) time_range: string;
  @ApiProperty({ format: 'date-time', description: 'Inclusive start' }) start: string;
  @ApiProperty({ format: 'date-time', description: 'Exclusive end' }) end: string;
}

export class WorkloadStatsBucketDto extends StatsMoneyFiguresDto {
  @ApiProperty({ format: 'date-time', description: 'Inclusive start (a local midnight for day and week)' })
  bucket_start: string;
  @ApiProperty({ format: 'date-time', description: 'Exclusive end' }) bucket_end: string;
  @ApiProperty({ type: 'integer', description: 'workloads submitted in the bucket (and the range)' })
  total_workloads: number;
  @ApiProperty({ description: 'their whole gpu_hours_used, counted in the bucket of submission' })
  total_gpu_hours: number;
  @ApiProperty({ type: Number, nullable: true, description: 'completed / (completed + failed)' })
  success_rate: number | null;
  @ApiProperty({ type: QueueWaitDto, description: QUEUE_WAIT_DESCRIPTION }) queue_wait: QueueWaitDto;
  @ApiProperty({ type: PendingDemandDto, description: PENDING_DESCRIPTION }) pending: PendingDemandDto;
  @ApiPropertyOptional({
    type: [WorkloadStatsGroupDto],
    description: 'with group_by: the groups of this bucket',
  })
  grouped?: WorkloadStatsGroupDto[];
}

export class WorkloadStatsDto {
  @ApiProperty({ type: WorkloadStatsSummaryDto, description: 'every workload submitted in the range' })
  summary: WorkloadStatsSummaryDto;
  @ApiProperty({
    type: [WorkloadStatsGroupDto],
    description: 'with group_by: per key, by workload_count descending then key; empty without',
  })
  grouped: WorkloadStatsGroupDto[];
  @ApiProperty({ type: WorkloadStatsRangeDto, description: 'Additive: the resolved range' })
  range: WorkloadStatsRangeDto;
  @ApiPropertyOptional({
    type: [WorkloadStatsBucketDto],
    description:
      'with interval: every bucket overlapping the range; a workload counts where it was submitted',
  })
  timeline?: WorkloadStatsBucketDto[];
}

export class WorkloadStatsEnvelopeDto {
  @ApiProperty({ type: WorkloadStatsDto, description: 'the statistics' }) data: WorkloadStatsDto;
  @ApiProperty({
    type: CurrencyMetadataDto,
    description: 'the instant the answer describes and its currency',
  })
  metadata: CurrencyMetadataDto;
  @ApiRequestIdProperty()
  request_id: string;
}
