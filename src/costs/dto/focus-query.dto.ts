import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsOptional, IsString } from 'class-validator';
import { IsIdentifier, QueryDate, QueryInteger } from '../../common/validation/query-decorators';

export const DEFAULT_FOCUS_PAGE_SIZE = 100;
export const MAX_FOCUS_PAGE_SIZE = 1000;

export class FocusQueryDto {
  @ApiProperty({
    type: String,
    description: 'Inclusive start of the charge periods (ISO 8601 with offset, or YYYY-MM-DD = 00:00 UTC)',
  })
  @IsDefined({ message: 'is required' })
  @QueryDate()
  start_date: Date;

  @ApiProperty({
    type: String,
    description: 'Exclusive end of the charge periods; at most 366 days after start_date',
  })
  @IsDefined({ message: 'is required' })
  @QueryDate()
  end_date: Date;

  @ApiPropertyOptional({ description: 'An initiative (team) in your access; 403 otherwise' })
  @IsOptional()
  @IsIdentifier()
  initiative_id?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_FOCUS_PAGE_SIZE,
    default: DEFAULT_FOCUS_PAGE_SIZE,
    description:
      'Workloads per JSON page (each gives a row per UTC day and price it ran in); CSV streams all',
  })
  @IsOptional()
  @QueryInteger(1, MAX_FOCUS_PAGE_SIZE)
  limit?: number;

  @ApiPropertyOptional({ description: 'metadata.next_token of the previous page, with the same parameters' })
  @IsOptional()
  @IsString({ message: 'must be a single string' })
  next_token?: string;
}
