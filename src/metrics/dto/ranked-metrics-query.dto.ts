import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsClusterId, IsIdentifier, QueryEnum, QueryInteger } from '../../common/validation/query-decorators';
import { WORKLOAD_STATUSES, type WorkloadStatus } from '../../core/workload-status';
import { RANK_METRICS, SORT_ORDERS, type RankMetric, type SortOrder } from '../metric-names';

export class RankedMetricsQueryDto {
  @ApiPropertyOptional({ enum: RANK_METRICS, default: 'gpu_utilization' })
  @IsOptional()
  @QueryEnum(RANK_METRICS)
  sort_by?: RankMetric;

  @ApiPropertyOptional({ enum: SORT_ORDERS, default: 'desc' })
  @IsOptional()
  @QueryEnum(SORT_ORDERS)
  order?: SortOrder;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 10 })
  @IsOptional()
  @QueryInteger(1, 100)
  limit?: number;

  @ApiPropertyOptional({ description: 'only workloads of this initiative (403 when outside your access)' })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({
    description:
      "only workloads of this cluster (their `cluster_id`); ranked over the cluster's workloads read as a set",
  })
  @IsOptional()
  @IsClusterId()
  cluster_id?: string;

  @ApiPropertyOptional({ enum: WORKLOAD_STATUSES })
  @IsOptional()
  @QueryEnum(WORKLOAD_STATUSES)
  status?: WorkloadStatus;
}
