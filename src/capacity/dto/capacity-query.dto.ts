import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsIdentifier } from '../../common/validation/query-decorators';

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
}
