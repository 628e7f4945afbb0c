import { splitByUtcDay } from '../../../src/capacity/usage-window';

const at = (iso: string) => new Date(iso);

describe('splitByUtcDay', () => {
  it('keeps a window of whole days whole', () => {
    expect(splitByUtcDay({ from: at('2026-10-01T00:00:00Z'), to: at('2026-10-04T00:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-04',
      partialDays: [],
    });
  });

  it('cuts a mid-day start and a mid-day end into edge days', () => {
    expect(splitByUtcDay({ from: at('2026-10-01T10:30:00Z'), to: at('2026-10-04T06:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-02',
      fullDaysTo: '2026-10-04',
      partialDays: [
        { day: '2026-10-01', from: at('2026-10-01T10:30:00Z'), to: at('2026-10-02T00:00:00Z') },
        { day: '2026-10-04', from: at('2026-10-04T00:00:00Z'), to: at('2026-10-04T06:00:00Z') },
      ],
    });
  });

  it('treats a window inside one day as one edge day', () => {
    expect(splitByUtcDay({ from: at('2026-10-01T10:30:00Z'), to: at('2026-10-01T11:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-02',
      fullDaysTo: '2026-10-02',
      partialDays: [{ day: '2026-10-01', from: at('2026-10-01T10:30:00Z'), to: at('2026-10-01T11:00:00Z') }],
    });
    expect(splitByUtcDay({ from: at('2026-10-01T00:00:00Z'), to: at('2026-10-01T11:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-01',
      partialDays: [{ day: '2026-10-01', from: at('2026-10-01T00:00:00Z'), to: at('2026-10-01T11:00:00Z') }],
    });
  });

  it('needs no tail when the window ends at midnight', () => {
    expect(splitByUtcDay({ from: at('2026-10-01T23:00:00Z'), to: at('2026-10-02T00:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-02',
      fullDaysTo: '2026-10-02',
      partialDays: [{ day: '2026-10-01', from: at('2026-10-01T23:00:00Z'), to: at('2026-10-02T00:00:00Z') }],
    });
  });
});
