import { round4 } from '../common/http/decimal';
import type { BudgetPeriod } from './capacity.queries';
import type { BudgetStatus } from './dto/capacity-report.dto';
import { DAY_MS } from '../rollups/capacity-usage/usage-window';

/** Burn rates are measured over the 7 × 24 hours up to now. */
export const BURN_WINDOW_DAYS = 7;

/** ISO 8601 with a four-digit year ends here; a projection beyond it means "not in any useful future". */
const LATEST_PROJECTION_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** GPU-hour figures of one pool, initiative or the summary, already rounded for the response. */
export interface BudgetFigures {
  allocated_gpu_hours: number;
  used_gpu_hours: number;
  remaining_gpu_hours: number;
  burn_rate_gpu_hours_per_day: number;
  projected_exhaustion_date: string | null;
}

export function budgetFigures(
  allocated: number,
  used: number,
  usedInBurnWindow: number,
  now: Date,
  period: BudgetPeriod,
) {
  const figures = {
    allocated_gpu_hours: round4(allocated),
    used_gpu_hours: round4(used),
    remaining_gpu_hours: round4(allocated - used),
    burn_rate_gpu_hours_per_day: round4(usedInBurnWindow / BURN_WINDOW_DAYS),
  };
  const projectedExhaustion = projectExhaustion(figures, now, period);
  return {
    ...figures,
    projected_exhaustion_date: projectedExhaustion,
    budget_status: budgetStatus(figures, projectedExhaustion, period.end),
  };
}

/**
 * From the figures as shown: exhausted once nothing remains of an allocation (or anything is used
 * without one); at risk when the burn rate runs the allocation out before the period ends.
 */
export function budgetStatus(
  figures: Pick<BudgetFigures, 'allocated_gpu_hours' | 'used_gpu_hours' | 'remaining_gpu_hours'>,
  projectedExhaustion: string | null,
  periodEnd: Date,
): BudgetStatus {
  const { allocated_gpu_hours: allocated, used_gpu_hours: used, remaining_gpu_hours: remaining } = figures;
  if (allocated > 0 ? remaining <= 0 : used > 0) return 'exhausted';
  if (projectedExhaustion !== null && new Date(projectedExhaustion) < periodEnd) return 'at_risk';
  return 'on_track';
}

/**
 * When `remaining` reaches 0 at the current burn rate, from the figures as shown (so a reader can
 * redo the arithmetic): null when nothing is allocated or nothing is burning; now when the budget is
 * already used up or overrun; null when the date would lie beyond year 9999. A period still ahead
 * burns from its start (last week's pace, applied from the day its budget opens); a period that has
 * ended has nothing left to burn down (null).
 */
export function projectExhaustion(
  figures: Omit<BudgetFigures, 'projected_exhaustion_date'>,
  now: Date,
  period: BudgetPeriod,
): string | null {
  const { allocated_gpu_hours: allocated, remaining_gpu_hours: remaining } = figures;
  const burnRate = figures.burn_rate_gpu_hours_per_day;
  if (allocated <= 0 || burnRate <= 0 || now >= period.end) return null;
  if (remaining <= 0) return now.toISOString();
  const burningFrom = Math.max(now.getTime(), period.start.getTime());
  const exhaustedAt = burningFrom + (remaining / burnRate) * DAY_MS;
  return exhaustedAt > LATEST_PROJECTION_MS ? null : new Date(Math.round(exhaustedAt)).toISOString();
}
