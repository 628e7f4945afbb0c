import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import {
  IsClusterId,
  IsIdentifier,
  QueryDate,
  QueryEnum,
  QueryInteger,
  QueryNumber,
} from '../../common/validation/query-decorators';
import { STATS_TIME_RANGES, type StatsTimeRange } from '../../common/time-range';

export const DEFAULT_RECOMMENDATIONS_PAGE_SIZE = 20;
export const MAX_RECOMMENDATIONS_PAGE_SIZE = 100;

export class RecommendationsQueryDto {
  @ApiPropertyOptional({
    enum: STATS_TIME_RANGES,
    description:
      'The range whose samples are read, as statistics take it: in the organization time zone; default last_30_days, or custom when dates are given',
  })
  @IsOptional()
  @QueryEnum(STATS_TIME_RANGES)
  time_range?: StatsTimeRange;

  @ApiPropertyOptional({
    type: String,
    description: 'Inclusive start of a custom range (ISO 8601 with offset, or YYYY-MM-DD = 00:00 UTC)',
  })
  @IsOptional()
  @QueryDate()
  start_date?: Date;

  @ApiPropertyOptional({ type: String, description: 'Exclusive end of a custom range' })
  @IsOptional()
  @QueryDate()
  end_date?: Date;

  @ApiPropertyOptional({ description: 'An initiative (team) in your access; 403 otherwise' })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({ description: 'Only the workloads of this cluster (their `cluster_id`)' })
  @IsOptional()
  @IsClusterId()
  cluster_id?: string;

  @ApiPropertyOptional({ example: 'p5.48xlarge', description: 'Only the workloads on this instance type' })
  @IsOptional()
  @IsIdentifier()
  instance_type?: string;

  @ApiPropertyOptional({
    type: Number,
    minimum: 0,
    default: 0,
    description: 'Only recommendations that save at least this many GPU-hours over the range',
  })
  @IsOptional()
  @QueryNumber(0)
  min_gpu_hours_saved?: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_RECOMMENDATIONS_PAGE_SIZE,
    default: DEFAULT_RECOMMENDATIONS_PAGE_SIZE,
  })
  @IsOptional()
  @QueryInteger(1, MAX_RECOMMENDATIONS_PAGE_SIZE)
  limit?: number;

  @ApiPropertyOptional({ description: 'metadata.next_token of the previous page, with the same filters' })
  @IsOptional()
  @IsString({ message: 'must be a single string' })
  next_token?: string;
}
