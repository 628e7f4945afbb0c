import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { GPU_SHARING_MODES, type GpuSharingMode } from './gpu-sharing';

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
