import { ApiProperty } from '@nestjs/swagger';
import { IsIdentifier } from './query-decorators';

export class WorkloadIdParams {
  @ApiProperty({ description: '1 to 128 characters from A-Z a-z 0-9 . _ : -', example: 'wl-0000001' })
  @IsIdentifier()
  workload_id: string;
}
