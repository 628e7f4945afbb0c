import { ApiProperty } from '@nestjs/swagger';

const BURN_RATE_DESCRIPTION = 'GPU hours used in the 7 × 24 hours up to now, divided by 7 (additive field)';
const EXHAUSTION_DESCRIPTION =
  'When remaining reaches 0 at the burn rate; now when already used up or overrun; ' +
  'null when nothing is allocated or nothing is burning (additive field)';

class BudgetFiguresDto {
  @ApiProperty({ example: 5000 })
  allocated_gpu_hours: number;

  @ApiProperty({ example: 1234.5678, description: 'GPU hours accrued inside the current period' })
  used_gpu_hours: number;

  @ApiProperty({ example: 3765.4322, description: 'allocated − used; negative when overrun' })
  remaining_gpu_hours: number;

  @ApiProperty({ example: 96.25, description: BURN_RATE_DESCRIPTION })
  burn_rate_gpu_hours_per_day: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2026-12-08T10:15:00.000Z',
    description: EXHAUSTION_DESCRIPTION,
  })
  projected_exhaustion_date: string | null;
}

export class CapacityPoolDto extends BudgetFiguresDto {
  @ApiProperty({ example: 'h100' })
  pool_id: string;

  @ApiProperty({ example: 'H100 reserved' })
  name: string;

  @ApiProperty({ type: [String], example: ['p5.48xlarge'] })
  instance_types: string[];
}

export class CapacityInitiativeDto extends BudgetFiguresDto {
  @ApiProperty({ example: 'vision' })
  initiative_id: string;

  @ApiProperty({ example: 'Vision' })
  name: string;
}

export class CapacitySummaryDto {
  @ApiProperty({ example: 5000 })
  total_allocated_gpu_hours: number;

  @ApiProperty({ example: 1234.5678 })
  total_used_gpu_hours: number;

  @ApiProperty({ example: 3765.4322, description: 'negative when overrun' })
  total_remaining_gpu_hours: number;

  @ApiProperty({ type: 'integer', example: 64, description: 'sum of gpu_count over running workloads' })
  current_active_gpus: number;

  @ApiProperty({ example: 96.25, description: BURN_RATE_DESCRIPTION })
  burn_rate_gpu_hours_per_day: number;

  @ApiProperty({ type: String, nullable: true, description: EXHAUSTION_DESCRIPTION })
  projected_exhaustion_date: string | null;
}

export class CapacityPeriodDto {
  @ApiProperty({ format: 'date-time', example: '2026-10-01T00:00:00.000Z' })
  start: string;

  @ApiProperty({ format: 'date-time', example: '2027-01-01T00:00:00.000Z' })
  end: string;
}

export class CapacityReportDto {
  @ApiProperty({ example: 'org-acme' })
  organization_id: string;

  @ApiProperty({ type: CapacitySummaryDto })
  summary: CapacitySummaryDto;

  @ApiProperty({ type: [CapacityPoolDto], description: 'ordered by pool_id' })
  pools: CapacityPoolDto[];

  @ApiProperty({ type: [CapacityInitiativeDto], description: 'ordered by initiative_id' })
  initiatives: CapacityInitiativeDto[];

  @ApiProperty({ type: CapacityPeriodDto, description: 'the current budget period (additive field)' })
  period: CapacityPeriodDto;
}

export class CapacityEnvelopeDto {
  @ApiProperty({ type: CapacityReportDto })
  data: CapacityReportDto;

  @ApiProperty()
  request_id: string;
}
