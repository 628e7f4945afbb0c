import { round4 } from '../common/http/decimal';
import type { BurnDownDayDto, ThresholdCrossingDto } from './dto/capacity-report.dto';
import type { UsageWindow } from '../rollups/capacity-usage/usage-window';

/** The shares of an allocation whose crossing a budget owner wants to hear about. */
export const BUDGET_THRESHOLDS = [50, 75, 90] as const;

/** One day of the period so far: its local date and the part of it inside the period (today: up to now). */
export interface BurnDownDay {
  date: string;
  window: UsageWindow;
}

/** Day-by-day use, what is left after each day, and when 50/75/90 % of the allocation was reached. */
export function burnDown(
  days: BurnDownDay[],
  usedPerDay: number[],
  allocated: number,
): { daily: BurnDownDayDto[]; thresholds_crossed: ThresholdCrossingDto[] } {
  let cumulative = 0;
  const cumulativeAfter = usedPerDay.map((used) => (cumulative += used));
  const daily = days.map((day, index) => ({
    date: day.date,
    used_gpu_hours: round4(usedPerDay[index]),
    cumulative_used_gpu_hours: round4(cumulativeAfter[index]),
    remaining_gpu_hours: round4(allocated - cumulativeAfter[index]),
  }));
  const thresholds_crossed: ThresholdCrossingDto[] = [];
  if (allocated <= 0) return { daily, thresholds_crossed };
  for (const percent of BUDGET_THRESHOLDS) {
    const target = (allocated * percent) / 100;
    const index = cumulativeAfter.findIndex((value) => value >= target);
    if (index < 0) continue;
    const before = index === 0 ? 0 : cumulativeAfter[index - 1];
    thresholds_crossed.push({
      percent,
      crossed_at: interpolate(days[index].window, (target - before) / usedPerDay[index]),
    });
  }
  return { daily, thresholds_crossed };
}

/** Use inside a day is known only as a total: the crossing is placed as if it were spread evenly. */
function interpolate(window: UsageWindow, fraction: number): string {
  const from = window.from.getTime();
  return new Date(Math.round(from + (window.to.getTime() - from) * fraction)).toISOString();
}
