import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { GPU_SHARING_MODES, type GpuSharing, type GpuSharingMode } from '../../common/gpu-sharing';
import { WORKLOAD_STATUSES, WorkloadStatus } from '../entities/workload.entity';
import { IdleGpuFiguresDto } from '../../common/idle-gpu.dto';
import { AsOfMetadataDto } from '../../common/http/as-of-metadata.dto';

export class GpuSharingDto {
  @ApiProperty({ enum: GPU_SHARING_MODES, description: 'mig, time-slicing or mps' }) mode: GpuSharingMode;
  @ApiPropertyOptional({ description: 'MIG only: the instance profile, e.g. 1g.10gb', example: '1g.10gb' })
  profile?: string;
  @ApiPropertyOptional({
    type: 'integer',
    description: 'time-slicing and MPS only: replicas per physical GPU',
    example: 4,
  })
  replicas?: number;
}

export class WorkloadSummaryDto {
  @ApiProperty() workload_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: WORKLOAD_STATUSES }) status: WorkloadStatus;
  @ApiProperty() submitted_by: string;
  @ApiProperty() initiative_id: string;
  @ApiProperty() instance_type: string;
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
  @ApiProperty({ format: 'date-time', example: '2026-11-20T10:15:00.000Z' }) submitted_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'null while pending' })
  started_at: string | null;
}

export class WorkloadDetailDto extends WorkloadSummaryDto {
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) completed_at: string | null;
  @ApiProperty({ type: 'integer', description: 'started_at to completed_at, or to now while running' })
  duration_seconds: number;
  @ApiProperty({ description: 'gpu_share × duration_seconds / 3600 (gpu_count × … for whole GPUs)' })
  gpu_hours_used: number;
  @ApiProperty({ type: 'integer', nullable: true }) exit_code: number | null;
  @ApiProperty() is_managed: boolean;
  @ApiProperty() namespace: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'gpu_hours_used × (1 − gpu_efficiency): GPU-hours held but not used; null without samples',
  })
  idle_gpu_hours: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'average gpu_utilization over all samples ÷ 100 (0..1); null without samples',
  })
  gpu_efficiency: number | null;
}

export class WorkloadListDto {
  @ApiProperty({ type: [WorkloadSummaryDto] }) workloads: WorkloadSummaryDto[];
}

export class PageMetadataDto extends AsOfMetadataDto {
  @ApiProperty({ type: String, nullable: true, description: 'null on the page holding the last item' })
  next_token: string | null;
  @ApiProperty({ type: 'integer' }) total_count: number;
}

export class WorkloadListEnvelopeDto {
  @ApiProperty({ type: WorkloadListDto }) data: WorkloadListDto;
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
  @ApiProperty() request_id: string;
}

export class WorkloadDetailEnvelopeDto {
  @ApiProperty({ type: WorkloadDetailDto }) data: WorkloadDetailDto;
  @ApiProperty({ type: AsOfMetadataDto }) metadata: AsOfMetadataDto;
  @ApiProperty() request_id: string;
}

export class WorkloadStatsSummaryDto extends IdleGpuFiguresDto {
  @ApiProperty({ type: 'integer' }) total_workloads: number;
  @ApiProperty() total_gpu_hours: number;
  @ApiProperty({ type: Number, nullable: true, description: 'finished workloads only; null when none' })
  average_duration_seconds: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'completed / (completed + failed)' })
  success_rate: number | null;
}

export class WorkloadStatsGroupDto extends IdleGpuFiguresDto {
  @ApiPropertyOptional() submitted_by?: string;
  @ApiPropertyOptional() initiative_id?: string;
  @ApiPropertyOptional() instance_type?: string;
  @ApiPropertyOptional() cluster_id?: string;
  @ApiProperty({ type: 'integer' }) workload_count: number;
  @ApiProperty() gpu_hours: number;
  @ApiProperty({ type: Number, nullable: true }) success_rate: number | null;
}

export class WorkloadStatsRangeDto {
  @ApiProperty({ description: 'The range used (custom when dates were given)' }) time_range: string;
  @ApiProperty({ format: 'date-time', description: 'Inclusive start' }) start: string;
  @ApiProperty({ format: 'date-time', description: 'Exclusive end' }) end: string;
}

export class WorkloadStatsBucketDto extends IdleGpuFiguresDto {
  @ApiProperty({ format: 'date-time', description: 'Inclusive start (a local midnight for day and week)' })
  bucket_start: string;
  @ApiProperty({ format: 'date-time', description: 'Exclusive end' }) bucket_end: string;
  @ApiProperty({ type: 'integer' }) total_workloads: number;
  @ApiProperty() total_gpu_hours: number;
  @ApiProperty({ type: Number, nullable: true, description: 'completed / (completed + failed)' })
  success_rate: number | null;
  @ApiPropertyOptional({
    type: [WorkloadStatsGroupDto],
    description: 'with group_by: the groups of this bucket',
  })
  grouped?: WorkloadStatsGroupDto[];
}

export class WorkloadStatsDto {
  @ApiProperty({ type: WorkloadStatsSummaryDto }) summary: WorkloadStatsSummaryDto;
  @ApiProperty({ type: [WorkloadStatsGroupDto] }) grouped: WorkloadStatsGroupDto[];
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
  @ApiProperty({ type: WorkloadStatsDto }) data: WorkloadStatsDto;
  @ApiProperty({ type: AsOfMetadataDto }) metadata: AsOfMetadataDto;
  @ApiProperty() request_id: string;
}
