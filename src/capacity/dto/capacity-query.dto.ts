import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsClusterId, IsIdentifier, QueryEnum } from '../../common/validation/query-decorators';

export const CAPACITY_INTERVALS = ['day'] as const;

export class CapacityQueryDto {
  @ApiPropertyOptional({
    description: 'Only this initiative (403 when outside your access)',
    example: 'vision',
  })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({ description: 'Only this capacity pool', example: 'h100-reserved' })
  @IsOptional()
  @IsIdentifier()
  pool_id?: string;

  @ApiPropertyOptional({
    description:
      'Only the usage of workloads of this cluster (their `cluster_id`); allocations are per pool and stay whole. Summed from raw rows, not the rollups',
    example: 'eks-use1',
  })
  @IsOptional()
  @IsClusterId()
  cluster_id?: string;

  @ApiPropertyOptional({
    enum: CAPACITY_INTERVALS,
    description:
      'Adds `daily` (the burn-down: use per day of the period so far, in the organization time zone) ' +
      'and `thresholds_crossed` to the summary, every pool and every initiative',
  })
  @IsOptional()
  @QueryEnum(CAPACITY_INTERVALS)
  interval?: 'day';
}
