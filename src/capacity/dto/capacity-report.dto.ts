import { ApiRequestIdProperty } from '../../common/http/envelope-properties';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IdleGpuFiguresDto } from '../../common/idle-gpu.dto';
import { CurrencyMetadataDto } from '../../common/cost.dto';

const BURN_RATE_DESCRIPTION = 'GPU hours used in the 7 × 24 hours up to now, divided by 7 (additive field)';
const EXHAUSTION_DESCRIPTION =
  'When remaining reaches 0 at the burn rate; now when already used up or overrun; ' +
  'null when nothing is allocated or nothing is burning (additive field)';

export const BUDGET_STATUSES = ['on_track', 'at_risk', 'exhausted'] as const;
export type BudgetStatus = (typeof BUDGET_STATUSES)[number];

const BUDGET_STATUS_DESCRIPTION =
  'exhausted: used ≥ allocated (or used with nothing allocated); at_risk: projected exhaustion before ' +
  'the period ends; otherwise on_track (additive field)';

export class BurnDownDayDto {
  @ApiProperty({ format: 'date', example: '2026-11-20', description: 'a day in the organization time zone' })
  date: string;

  @ApiProperty({ example: 42.5, description: 'GPU hours used that day (today: up to now)' })
  used_gpu_hours: number;

  @ApiProperty({
    example: 1234.5678,
    description: 'GPU hours used from the period start to the end of that day',
  })
  cumulative_used_gpu_hours: number;

  @ApiProperty({ example: 3765.4322, description: 'allocated − cumulative used at the end of that day' })
  remaining_gpu_hours: number;
}

export class ThresholdCrossingDto {
  @ApiProperty({ enum: [50, 75, 90], example: 75, description: 'percent of the allocation used' })
  percent: number;

  @ApiProperty({
    format: 'date-time',
    description: 'when cumulative use reached it, interpolated inside the day it happened',
  })
  crossed_at: string;
}

const USED_COST_DESCRIPTION =
  "Additive: what the priced part of the GPU-hours used inside the period cost, each instance type at the price in force as it was used (running workloads up to as_of), in metadata.currency, exact, rounded once to its minor units; null when the organization has no price. With cluster_id, the cost of that cluster's use, read from its runs";
const UNPRICED_DESCRIPTION =
  'Additive: GPU-hours used inside the period that no price covers (left out of the cost; all of them while the organization has no price)';

const IDLE_COST_DESCRIPTION =
  "Additive: the money of idle_gpu_hours' priced part: each part of sampled use × (1 − its workload's average GPU utilization / 100) × the price in force as it was used, exact, rounded once; idle time without a price is left out (it is within unpriced_gpu_hours); null when used_cost is";

const ALLOCATED_COST_DESCRIPTION =
  "Additive: allocated GPU-hours × the price of the pool's GPU-hour, where every allocation counted has one: all the pool's instance types priced over the whole budget period at the same price; exact, rounded once; null otherwise and while the organization has no price";

/** The idle figures and the energy of a budget's use (the summary, each pool and initiative). */
class UseFiguresDto extends IdleGpuFiguresDto {
  @ApiProperty({
    example: 412.5,
    description:
      'Additive: kWh of the used_gpu_hours (4 decimals): each workload’s energy_kwh spread over its GPU-time, the part inside the period counted (running ones: their samples so far over their time so far); 0 without samples',
  })
  total_energy_kwh: number;
}

class BudgetFiguresDto extends UseFiguresDto {
  @ApiProperty({ example: 5000, description: 'GPU-hours allocated (in scope) for the budget period' })
  allocated_gpu_hours: number;

  @ApiProperty({ example: 1234.5678, description: 'GPU hours accrued inside the current period' })
  used_gpu_hours: number;

  @ApiProperty({ example: 3765.4322, description: 'allocated − used; negative when overrun' })
  remaining_gpu_hours: number;

  @ApiProperty({ type: String, nullable: true, example: '3086.42', description: USED_COST_DESCRIPTION })
  used_cost: string | null;

  @ApiProperty({ type: String, nullable: true, example: '812.07', description: IDLE_COST_DESCRIPTION })
  idle_cost: string | null;

  @ApiProperty({ type: Number, nullable: true, example: 0, description: UNPRICED_DESCRIPTION })
  unpriced_gpu_hours: number | null;

  @ApiProperty({ type: String, nullable: true, example: '10250.00', description: ALLOCATED_COST_DESCRIPTION })
  allocated_cost: string | null;

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

  @ApiProperty({ enum: BUDGET_STATUSES, description: BUDGET_STATUS_DESCRIPTION })
  budget_status: BudgetStatus;

  @ApiPropertyOptional({ type: [BurnDownDayDto], description: 'with interval=day' })
  daily?: BurnDownDayDto[];

  @ApiPropertyOptional({ type: [ThresholdCrossingDto], description: 'with interval=day; ordered by percent' })
  thresholds_crossed?: ThresholdCrossingDto[];
}

export class CapacityPoolDto extends BudgetFiguresDto {
  @ApiProperty({ example: 'h100', description: 'the pool id' })
  pool_id: string;

  @ApiProperty({ example: 'H100 reserved', description: "the pool's display name" })
  name: string;

  @ApiProperty({
    example: 12.5,
    description:
      'Additive: physical GPUs (the sum of gpu_share) asked for by the pending workloads in scope on the instance types the pool owns, whenever they were submitted',
  })
  pending_gpu_share: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 840,
    description:
      'Additive: 95th percentile of the queue waits (within 1 % of percentile_cont, from wait histograms), whole seconds from submitted_at to started_at, of the workloads on its instance types submitted in the 7 × 24 hours up to now that started; null when none did',
  })
  queue_wait_p95_seconds: number | null;

  @ApiProperty({
    type: [String],
    example: ['p5.48xlarge'],
    description: 'the instance types the pool owns: workloads on them draw on its allocations',
  })
  instance_types: string[];
}

export class CapacityInitiativeDto extends BudgetFiguresDto {
  @ApiProperty({ example: 'vision', description: 'the initiative (team) id' })
  initiative_id: string;

  @ApiProperty({ example: 'Vision', description: "the initiative's display name" })
  name: string;
}

export class CapacitySummaryDto extends UseFiguresDto {
  @ApiProperty({ example: 5000, description: 'GPU-hours allocated in scope for the budget period' })
  total_allocated_gpu_hours: number;

  @ApiProperty({ example: 1234.5678, description: 'GPU-hours accrued inside the current period' })
  total_used_gpu_hours: number;

  @ApiProperty({ example: 3765.4322, description: 'negative when overrun' })
  total_remaining_gpu_hours: number;

  @ApiProperty({ type: String, nullable: true, example: '3086.42', description: USED_COST_DESCRIPTION })
  total_used_cost: string | null;

  @ApiProperty({ type: String, nullable: true, example: '812.07', description: IDLE_COST_DESCRIPTION })
  idle_cost: string | null;

  @ApiProperty({ type: Number, nullable: true, example: 0, description: UNPRICED_DESCRIPTION })
  unpriced_gpu_hours: number | null;

  @ApiProperty({ type: String, nullable: true, example: '10250.00', description: ALLOCATED_COST_DESCRIPTION })
  total_allocated_cost: string | null;

  @ApiProperty({ type: 'integer', example: 64, description: 'sum of gpu_count over running workloads' })
  current_active_gpus: number;

  @ApiProperty({
    example: 12.5714,
    description:
      'physical GPUs held by running workloads: the sum of their gpu_share (gpu_count for whole GPUs)',
  })
  current_active_gpu_share: number;

  @ApiProperty({ example: 96.25, description: BURN_RATE_DESCRIPTION })
  burn_rate_gpu_hours_per_day: number;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: EXHAUSTION_DESCRIPTION })
  projected_exhaustion_date: string | null;

  @ApiProperty({ enum: BUDGET_STATUSES, description: BUDGET_STATUS_DESCRIPTION })
  budget_status: BudgetStatus;

  @ApiPropertyOptional({ type: [BurnDownDayDto], description: 'with interval=day' })
  daily?: BurnDownDayDto[];

  @ApiPropertyOptional({ type: [ThresholdCrossingDto], description: 'with interval=day; ordered by percent' })
  thresholds_crossed?: ThresholdCrossingDto[];
}

export class CapacityPeriodDto {
  @ApiProperty({ format: 'date-time', example: '2026-10-01T00:00:00.000Z', description: 'inclusive start' })
  start: string;

  @ApiProperty({ format: 'date-time', example: '2027-01-01T00:00:00.000Z', description: 'exclusive end' })
  end: string;
}

export class CapacityReportDto {
  @ApiProperty({
    example: 'org-acme',
    description: 'the organization the report is about (the X-Organization-Id header)',
  })
  organization_id: string;

  @ApiProperty({
    example: 'Europe/Berlin',
    description:
      "the organization's IANA time zone: the burn-down's daily[].date are local days of this zone, so the " +
      'first one can fall before period.start in UTC (additive field)',
  })
  timezone: string;

  @ApiProperty({
    type: CapacitySummaryDto,
    description: 'the whole scope: every pool and initiative you may see',
  })
  summary: CapacitySummaryDto;

  @ApiProperty({ type: [CapacityPoolDto], description: 'ordered by pool_id' })
  pools: CapacityPoolDto[];

  @ApiProperty({ type: [CapacityInitiativeDto], description: 'ordered by initiative_id' })
  initiatives: CapacityInitiativeDto[];

  @ApiProperty({ type: CapacityPeriodDto, description: 'the current budget period (additive field)' })
  period: CapacityPeriodDto;
}

export class CapacityEnvelopeDto {
  @ApiProperty({ type: CapacityReportDto, description: 'the capacity report' })
  data: CapacityReportDto;

  @ApiProperty({
    type: CurrencyMetadataDto,
    description: 'the instant the answer describes and its currency',
  })
  metadata: CurrencyMetadataDto;

  @ApiRequestIdProperty()
  request_id: string;
}
