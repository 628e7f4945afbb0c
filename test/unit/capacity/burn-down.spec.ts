import { burnDown } from '../../../src/capacity/burn-down';

const day = (date: string, from: string, to: string) => ({
  date,
  window: { from: new Date(from), to: new Date(to) },
});

describe('burnDown', () => {
  const days = [
    day('2026-11-01', '2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z'),
    day('2026-11-02', '2026-11-02T05:00:00.000Z', '2026-11-03T05:00:00.000Z'),
    day('2026-11-03', '2026-11-03T05:00:00.000Z', '2026-11-03T17:00:00.000Z'),
  ];

  it('accumulates use and subtracts it from the allocation day by day', () => {
    expect(burnDown(days, [10, 30.123456, 20], 100).daily).toEqual([
      { date: '2026-11-01', used_gpu_hours: 10, cumulative_used_gpu_hours: 10, remaining_gpu_hours: 90 },
      {
        date: '2026-11-02',
        used_gpu_hours: 30.1235,
        cumulative_used_gpu_hours: 40.1235,
        remaining_gpu_hours: 59.8765,
      },
      {
        date: '2026-11-03',
        used_gpu_hours: 20,
        cumulative_used_gpu_hours: 60.1235,
        remaining_gpu_hours: 39.8765,
      },
    ]);
  });

  it('places each crossed threshold inside the day it was reached, as if use were even', () => {
    // 40 of 80 reached after 20 + 20 of the second day's 40: half-way through that day.
    expect(burnDown(days, [20, 40, 20], 80).thresholds_crossed).toEqual([
      { percent: 50, crossed_at: '2026-11-02T17:00:00.000Z' },
      { percent: 75, crossed_at: '2026-11-03T05:00:00.000Z' },
      { percent: 90, crossed_at: '2026-11-03T12:12:00.000Z' },
    ]);
  });

  it('crosses nothing without an allocation or below 50 %', () => {
    expect(burnDown(days, [1, 2, 3], 0).thresholds_crossed).toEqual([]);
    expect(burnDown(days, [1, 2, 3], 100).thresholds_crossed).toEqual([]);
  });
});
