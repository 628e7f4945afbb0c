import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsClusterId, IsIdentifier, QueryDate, QueryEnum } from '../../common/validation/query-decorators';
import { STATS_GROUP_BY, StatsGroupBy } from '../workload-stats.queries';
import { STATS_TIME_RANGES, type StatsTimeRange } from '../../common/time-range';
import { TIMELINE_INTERVALS, type TimelineInterval } from '../../common/calendar-boundaries.queries';

export class WorkloadStatsQueryDto {
  @ApiPropertyOptional({
    enum: STATS_TIME_RANGES,
    description: 'In the organization time zone; default last_30_days, or custom when dates are given',
  })
  @IsOptional()
  @QueryEnum(STATS_TIME_RANGES)
  time_range?: StatsTimeRange;

  @ApiPropertyOptional({ type: String, description: 'Inclusive start of a custom range' })
  @IsOptional()
  @QueryDate()
  start_date?: Date;

  @ApiPropertyOptional({ type: String, description: 'Exclusive end of a custom range' })
  @IsOptional()
  @QueryDate()
  end_date?: Date;

  @ApiPropertyOptional({ enum: STATS_GROUP_BY })
  @IsOptional()
  @QueryEnum(STATS_GROUP_BY)
  group_by?: StatsGroupBy;

  @ApiPropertyOptional({ description: 'An initiative (team) in your access; 403 otherwise' })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({
    description:
      'Only the workloads of this cluster (their `cluster_id`); read from raw rows, not the rollups',
  })
  @IsOptional()
  @IsClusterId()
  cluster_id?: string;

  @ApiPropertyOptional({
    enum: TIMELINE_INTERVALS,
    description: 'Adds `timeline`: buckets of this size in the organization time zone (at most 11,000)',
  })
  @IsOptional()
  @QueryEnum(TIMELINE_INTERVALS)
  interval?: TimelineInterval;
}
