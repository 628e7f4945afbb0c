export const DAY_MS = 86_400_000;

/** A half-open time window [from, to) over which GPU usage is summed. */
export interface UsageWindow {
  from: Date;
  to: Date;
}

/** The part of a window that lies inside one UTC day, when it does not cover the whole day. */
export interface PartialDay {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  from: Date;
  to: Date;
}

/**
 * A window cut along UTC days: whole days are read from the daily rollup as they are; at most two
 * edge days (where the window starts or ends mid-day) need the exact treatment.
 */
export interface DaySplit {
  /** Whole days [fullDaysFrom, fullDaysTo), YYYY-MM-DD; equal when there is none. */
  fullDaysFrom: string;
  fullDaysTo: string;
  partialDays: PartialDay[];
}

export function splitByUtcDay(window: UsageWindow): DaySplit {
  const from = window.from.getTime();
  const to = window.to.getTime();
  const partialDays: PartialDay[] = [];
  const fullStart = Math.ceil(from / DAY_MS) * DAY_MS;
  if (fullStart !== from && from < to) {
    partialDays.push(partialDay(from, Math.min(fullStart, to)));
  }
  let fullEnd = Math.floor(to / DAY_MS) * DAY_MS;
  if (fullEnd < fullStart) {
    fullEnd = fullStart;
  } else if (fullEnd !== to) {
    partialDays.push(partialDay(fullEnd, to));
  }
  return { fullDaysFrom: utcDay(fullStart), fullDaysTo: utcDay(fullEnd), partialDays };
}

function partialDay(from: number, to: number): PartialDay {
  return { day: utcDay(from), from: new Date(from), to: new Date(to) };
}

function utcDay(time: number): string {
  return new Date(Math.floor(time / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}
