import { shareCuts, splitAtCuts } from '../../../src/rollups/capacity-usage/usage-window';

const at = (iso: string) => new Date(iso);

describe('splitAtCuts', () => {
  it('keeps a window of whole days whole, with no cut', () => {
    expect(splitAtCuts({ from: at('2026-10-01T00:00:00Z'), to: at('2026-10-04T00:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-04',
      cuts: [],
    });
  });

  it('takes the first day whole less its morning, and the last day up to the end', () => {
    expect(splitAtCuts({ from: at('2026-10-01T10:30:00Z'), to: at('2026-10-04T06:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-04',
      cuts: [
        { at: at('2026-10-01T10:30:00Z'), sign: -1 },
        { at: at('2026-10-04T06:00:00Z'), sign: 1 },
      ],
    });
  });

  it('reads a window inside one day as the difference of two cuts', () => {
    expect(splitAtCuts({ from: at('2026-10-01T10:30:00Z'), to: at('2026-10-01T11:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-01',
      cuts: [
        { at: at('2026-10-01T10:30:00Z'), sign: -1 },
        { at: at('2026-10-01T11:00:00Z'), sign: 1 },
      ],
    });
    expect(splitAtCuts({ from: at('2026-10-01T00:00:00Z'), to: at('2026-10-01T11:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-01',
      cuts: [{ at: at('2026-10-01T11:00:00Z'), sign: 1 }],
    });
  });

  it('needs no cut at a midnight end', () => {
    expect(splitAtCuts({ from: at('2026-10-01T23:00:00Z'), to: at('2026-10-02T00:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-01',
      fullDaysTo: '2026-10-02',
      cuts: [{ at: at('2026-10-01T23:00:00Z'), sign: -1 }],
    });
  });

  it('gives an empty window nothing', () => {
    const from = at('2026-10-05T10:00:00Z');
    expect(splitAtCuts({ from, to: at('2026-10-04T10:00:00Z') })).toEqual({
      fullDaysFrom: '2026-10-05',
      fullDaysTo: '2026-10-05',
      cuts: [],
    });
  });
});

describe('shareCuts', () => {
  it('reads the instant two adjacent windows share once, with a sign for each', () => {
    const days = [
      { from: at('2026-10-01T04:00:00Z'), to: at('2026-10-02T04:00:00Z') },
      { from: at('2026-10-02T04:00:00Z'), to: at('2026-10-02T09:15:00Z') },
    ];
    expect(shareCuts(days.map(splitAtCuts))).toEqual({
      instants: [at('2026-10-01T04:00:00Z'), at('2026-10-02T04:00:00Z'), at('2026-10-02T09:15:00Z')],
      uses: [
        { windowIndex: 0, cutIndex: 0, sign: -1 },
        { windowIndex: 0, cutIndex: 1, sign: 1 },
        { windowIndex: 1, cutIndex: 1, sign: -1 },
        { windowIndex: 1, cutIndex: 2, sign: 1 },
      ],
    });
  });
});
