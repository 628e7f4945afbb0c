import { ApiProperty } from '@nestjs/swagger';

/** Idle figures of a set of workloads (src/common/idle-gpu.ts), documented once for every response. */
export class IdleGpuFiguresDto {
  @ApiProperty({
    description:
      'GPU-hours of the workloads with metric samples (finished ones, and running ones up to now): the time the two figures below cover',
  })
  sampled_gpu_hours: number;
  @ApiProperty({
    description:
      'Σ GPU-hours × (1 − the workload’s average GPU utilization / 100), over workloads with samples only',
  })
  idle_gpu_hours: number;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      '(sampled_gpu_hours − idle_gpu_hours) / sampled_gpu_hours, 0–1; null when no workload has samples',
  })
  gpu_efficiency: number | null;
}
