import { splitByPeriod } from '../../../src/rollups/workload-periods/period-split';

const at = (text: string) => new Date(text);

describe('splitByPeriod', () => {
  it('cuts a range into whole days, whole hours of the edge days and partial hours', () => {
    expect(splitByPeriod(at('2026-11-01T05:20:00Z'), at('2026-11-04T07:45:10Z'))).toEqual({
      days: { from: at('2026-11-02T00:00:00Z'), to: at('2026-11-04T00:00:00Z') },
      hours: [
        { from: at('2026-11-01T06:00:00Z'), to: at('2026-11-02T00:00:00Z') },
        { from: at('2026-11-04T00:00:00Z'), to: at('2026-11-04T07:00:00Z') },
      ],
      raw: [
        { from: at('2026-11-01T05:20:00Z'), to: at('2026-11-01T06:00:00Z') },
        { from: at('2026-11-04T07:00:00Z'), to: at('2026-11-04T07:45:10Z') },
      ],
    });
  });

  it('needs no raw rows for aligned bounds', () => {
    expect(splitByPeriod(at('2026-11-01T00:00:00Z'), at('2026-11-03T05:00:00Z'))).toEqual({
      days: { from: at('2026-11-01T00:00:00Z'), to: at('2026-11-03T00:00:00Z') },
      hours: [{ from: at('2026-11-03T00:00:00Z'), to: at('2026-11-03T05:00:00Z') }],
      raw: [],
    });
  });

  it('reads a range inside one day by hours, and one inside an hour raw', () => {
    expect(splitByPeriod(at('2026-11-01T05:30:00Z'), at('2026-11-01T08:15:00Z'))).toEqual({
      days: null,
      hours: [{ from: at('2026-11-01T06:00:00Z'), to: at('2026-11-01T08:00:00Z') }],
      raw: [
        { from: at('2026-11-01T05:30:00Z'), to: at('2026-11-01T06:00:00Z') },
        { from: at('2026-11-01T08:00:00Z'), to: at('2026-11-01T08:15:00Z') },
      ],
    });
    expect(splitByPeriod(at('2026-11-01T05:10:00Z'), at('2026-11-01T05:50:00Z'))).toEqual({
      days: null,
      hours: [],
      raw: [{ from: at('2026-11-01T05:10:00Z'), to: at('2026-11-01T05:50:00Z') }],
    });
  });

  it('keeps open ends open, and an empty range empty', () => {
    expect(splitByPeriod(undefined, undefined)).toEqual({
      days: { from: undefined, to: undefined },
      hours: [],
      raw: [],
    });
    expect(splitByPeriod(at('2026-11-01T23:30:00Z'), undefined)).toEqual({
      days: { from: at('2026-11-02T00:00:00Z'), to: undefined },
      hours: [],
      raw: [{ from: at('2026-11-01T23:30:00Z'), to: at('2026-11-02T00:00:00Z') }],
    });
    expect(splitByPeriod(at('2026-11-02T00:00:00Z'), at('2026-11-02T00:00:00Z'))).toEqual({
      days: null,
      hours: [],
      raw: [],
    });
  });
});
