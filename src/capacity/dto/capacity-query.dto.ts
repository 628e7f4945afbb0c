import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsClusterId, IsIdentifier, QueryEnum } from '../../common/validation/query-decorators';

export const CAPACITY_INTERVALS = ['day'] as const;
export const CAPACITY_CSV_LEVELS = ['summary', 'pools', 'initiatives'] as const;
export type CapacityCsvLevel = (typeof CAPACITY_CSV_LEVELS)[number];

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

  @ApiPropertyOptional({
    enum: CAPACITY_CSV_LEVELS,
    description:
      'Additive, for the CSV export (Accept: text/csv): one table of one level, with only the columns that ' +
      'level fills — `summary` (`organization_id` and the summary figures), `pools` (`pool_id`, `name`, the ' +
      'pool figures, `instance_types`) or `initiatives` (`initiative_id`, `name`, the initiative figures); ' +
      'with interval=day, that level’s burn-down rows (its id, `date` and the day’s figures). Omitted: the ' +
      'summary, every pool and every initiative in one table told apart by `kind` and `id`, as before. The ' +
      'JSON answer is the same with or without it',
  })
  @IsOptional()
  @QueryEnum(CAPACITY_CSV_LEVELS)
  level?: CapacityCsvLevel;
}
