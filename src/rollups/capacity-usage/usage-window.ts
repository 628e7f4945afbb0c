export const DAY_MS = 86_400_000;

/** A half-open time window [from, to) over which GPU usage is summed. */
export interface UsageWindow {
  from: Date;
  to: Date;
}

/** An instant inside a UTC day where a window starts (sign -1) or ends (sign +1). */
export interface Cut {
  at: Date;
  sign: 1 | -1;
}

/**
 * A window as whole UTC days and cuts. With G(t) the use from t's UTC midnight up to t,
 * [from, to) = the days [⌊from⌋, ⌊to⌋) − G(from) + G(to): a window starting mid-day takes its first
 * day whole from the daily rollup and subtracts the morning it missed, so every edge is one instant
 * (an hour's raw rows at most) rather than a part of a day. G is 0 at midnight: no cut there.
 */
export interface CutSplit {
  /** Whole days [fullDaysFrom, fullDaysTo), YYYY-MM-DD; equal when there is none. */
  fullDaysFrom: string;
  fullDaysTo: string;
  cuts: Cut[];
}

/** An empty window (a period that has not begun) has no day and no cut. */
export function splitAtCuts(window: UsageWindow): CutSplit {
  const from = window.from.getTime();
  const to = window.to.getTime();
  if (to <= from) return { fullDaysFrom: utcDay(from), fullDaysTo: utcDay(from), cuts: [] };
  const cuts: Cut[] = [];
  if (from % DAY_MS !== 0) cuts.push({ at: window.from, sign: -1 });
  if (to % DAY_MS !== 0) cuts.push({ at: window.to, sign: 1 });
  return { fullDaysFrom: utcDay(from), fullDaysTo: utcDay(to), cuts };
}

/**
 * The cuts of several windows, each instant once (adjacent windows share theirs): `instants` to
 * compute G at, and per window and cut the sign it is taken with.
 */
export interface SharedCuts {
  instants: Date[];
  uses: { windowIndex: number; cutIndex: number; sign: 1 | -1 }[];
}

export function shareCuts(splits: CutSplit[]): SharedCuts {
  const indexOf = new Map<number, number>();
  const instants: Date[] = [];
  const uses: SharedCuts['uses'] = [];
  splits.forEach((split, windowIndex) => {
    for (const cut of split.cuts) {
      let cutIndex = indexOf.get(cut.at.getTime());
      if (cutIndex === undefined) {
        cutIndex = instants.push(cut.at) - 1;
        indexOf.set(cut.at.getTime(), cutIndex);
      }
      uses.push({ windowIndex, cutIndex, sign: cut.sign });
    }
  });
  return { instants, uses };
}

function utcDay(time: number): string {
  return new Date(Math.floor(time / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}
