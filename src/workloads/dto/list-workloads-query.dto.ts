import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Length } from 'class-validator';
import {
  IsClusterId,
  IsIdentifier,
  QueryBoolean,
  QueryDate,
  QueryEnum,
  QueryInteger,
} from '../../common/validation/query-decorators';
import { WORKLOAD_STATUSES, WorkloadStatus } from '../../core/workload-status';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export class ListWorkloadsQueryDto {
  @ApiPropertyOptional({ description: 'Must equal X-Organization-Id (403 otherwise)' })
  @IsOptional()
  @IsIdentifier()
  organization_id?: string;

  @ApiPropertyOptional({ description: 'An initiative (team) in your access; 403 otherwise' })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({ enum: WORKLOAD_STATUSES })
  @IsOptional()
  @QueryEnum(WORKLOAD_STATUSES)
  status?: WorkloadStatus;

  @ApiPropertyOptional({ description: 'The submitting user (subject)' })
  @IsOptional()
  @IsString({ message: 'must be a single string' })
  @Length(1, 320, { message: 'must be 1 to 320 characters' })
  submitted_by?: string;

  @ApiPropertyOptional({ description: 'Only the workloads of this cluster (their `cluster_id`)' })
  @IsOptional()
  @IsClusterId()
  cluster_id?: string;

  @ApiPropertyOptional({ type: Boolean, description: '`true` or `false`' })
  @IsOptional()
  @QueryBoolean()
  is_managed?: boolean;

  @ApiPropertyOptional({
    type: String,
    description: 'Inclusive lower bound of submitted_at (ISO 8601 with offset, or YYYY-MM-DD = 00:00 UTC)',
  })
  @IsOptional()
  @QueryDate()
  start_date?: Date;

  @ApiPropertyOptional({ type: String, description: 'Exclusive upper bound of submitted_at' })
  @IsOptional()
  @QueryDate()
  end_date?: Date;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  @QueryInteger(1, MAX_PAGE_SIZE)
  limit?: number;

  @ApiPropertyOptional({ description: 'metadata.next_token of the previous page, with the same filters' })
  @IsOptional()
  @IsString({ message: 'must be a single string' })
  next_token?: string;
}
