import type { HourWindowStats, WindowStats } from './metrics.queries';
import { SAMPLE_METRICS } from './metric-names';

/** Half an ulp of 1 in float8: the relative error of one rounded addition. */
const UNIT_ROUNDOFF = 2 ** -53;

/**
 * The averages answered are PostgreSQL's float8 avg over the window's readings in time order
 * (windowStatsQuery), whose rounding depends on that order, so sums of hour summaries cannot give
 * them bit for bit. Any two orders of adding n values stay within 2·γ(n−1)·Σ|x| of each other
 * (γ(k) = k·u / (1 − k·u)), and Σ|x| ≤ n · max(|min|, |max|), so the time-ordered sum lies within
 * `bound` of the summaries' sum; (4n + 4)·u·Σ also covers the roundings of the bound's own
 * arithmetic. Division by n and the answer's scaling and 4-decimal rounding are monotone, so when
 * both ends of the interval answer the same figure, so does the exact sum.
 */
export function averageInterval(sum: number, count: number, min: number, max: number): [number, number] {
  const bound = (4 * count + 4) * UNIT_ROUNDOFF * count * Math.max(Math.abs(min), Math.abs(max));
  return [(sum - bound) / count, (sum + bound) / count];
}

/**
 * The window's statistics from the hour summaries when every figure answered is settled by them
 * (`answers` turns an average of a metric into its answered figure, one per requested name); null
 * when one is not, and the readings must be read in time order.
 */
export function statsFromHours(
  hours: HourWindowStats,
  answers: (metric: (typeof SAMPLE_METRICS)[number], average: number) => (number | null)[],
): WindowStats | null {
  const stats = { sample_count: hours.sample_count } as WindowStats;
  for (const metric of SAMPLE_METRICS) {
    const sum = hours[`${metric}_sum`];
    const min = hours[`${metric}_min`];
    const max = hours[`${metric}_max`];
    let average: number | null = null;
    if (hours.sample_count > 0 && sum !== null && min !== null && max !== null) {
      const [low, high] = averageInterval(sum, hours.sample_count, min, max);
      const lowAnswers = answers(metric, low);
      const highAnswers = answers(metric, high);
      if (lowAnswers.some((answer, index) => answer !== highAnswers[index])) return null;
      average = low;
    }
    stats[`${metric}_avg`] = average;
    stats[`${metric}_min`] = min;
    stats[`${metric}_max`] = max;
    stats[`${metric}_current`] = hours[`${metric}_current`];
  }
  return stats;
}
