import { round4 } from '../../../src/common/http/decimal';
import type { HourWindowStats } from '../../../src/metrics/metrics.queries';
import { averageInterval, statsFromHours } from '../../../src/metrics/window-averages';

/** A deterministic PRNG (mulberry32): the same readings every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sums in hour-sized pieces, then the pieces: the order the summaries add in. */
function piecewiseSum(values: number[], piece: number): number {
  const pieces: number[] = [];
  for (let start = 0; start < values.length; start += piece) {
    pieces.push(values.slice(start, start + piece).reduce((sum, value) => sum + value, 0));
  }
  return pieces.reverse().reduce((sum, value) => sum + value, 0);
}

function hours(sum: number, count: number, min: number, max: number): HourWindowStats {
  const stats = { sample_count: count } as HourWindowStats;
  for (const metric of ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const) {
    Object.assign(stats, {
      [`${metric}_sum`]: sum,
      [`${metric}_min`]: min,
      [`${metric}_max`]: max,
      [`${metric}_current`]: max,
    });
  }
  return stats;
}

describe('window averages from hour summaries', () => {
  it('bound the time-ordered average whatever order the pieces were added in', () => {
    const next = random(7);
    let differing = 0;
    for (let run = 0; run < 300; run += 1) {
      const count = 1 + Math.floor(next() * 9000);
      const negative = run % 3 === 0;
      const values = Array.from({ length: count }, () => {
        const cents = Math.round(next() * 10000) / 100;
        return negative ? cents - 50 : cents;
      });
      const inOrder = values.reduce((sum, value) => sum + value, 0);
      const piecewise = piecewiseSum(values, 1 + Math.floor(next() * 360));
      if (inOrder !== piecewise) differing += 1;
      const [low, high] = averageInterval(piecewise, count, Math.min(...values), Math.max(...values));
      expect(low).toBeLessThanOrEqual(inOrder / count);
      expect(high).toBeGreaterThanOrEqual(inOrder / count);
    }
    // The orders do give other float8 sums: the bound is what keeps the answers equal.
    expect(differing).toBeGreaterThan(100);
  });

  it('answer an average only when both ends of the bound give the same figure', () => {
    const answers = (_: string, average: number) => [round4(average)];
    const settled = statsFromHours(hours(150.5, 3, 40, 60.5), answers);
    expect(settled && round4(settled.gpu_utilization_avg!)).toBe(50.1667);
    // 1.0001 / 2 = 0.50005: a figure exactly between two answers, decided only by the last bit.
    expect(statsFromHours(hours(1.0001, 2, 0.5, 0.5001), answers)).toBeNull();
    expect(statsFromHours(hours(0, 0, 0, 0), answers)).toMatchObject({ sample_count: 0 });
  });

  it('leave min, max and current as summarized', () => {
    const stats = statsFromHours(hours(10, 4, 1, 4), (_, average) => [round4(average)]);
    expect(stats).toMatchObject({ power_usage_min: 1, power_usage_max: 4, power_usage_current: 4 });
  });
});
