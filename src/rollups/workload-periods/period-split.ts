import { WAIT_BLOCK } from '../../core/queue-wait';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** [from, to): undefined is open-ended. */
export interface Span {
  from?: Date;
  to?: Date;
}

/**
 * A time range cut into what each source answers exactly: whole UTC days (the 'day' rollup rows),
 * whole UTC hours of the partial days at the edges (the 'hour' rows), and the partial hours left at
 * the edges (raw workloads). Every instant of the range is in exactly one part.
 */
export interface PeriodSplit {
  days: Span | null;
  hours: Span[];
  raw: Span[];
}

function ceilTo(date: Date, unit: number): Date {
  return new Date(Math.ceil(date.getTime() / unit) * unit);
}

function floorTo(date: Date, unit: number): Date {
  return new Date(Math.floor(date.getTime() / unit) * unit);
}

/** Cuts [from, to) at whole `unit`s: the whole part (null when there is none) and the edges around it. */
function cut(span: Span, unit: number): { whole: Span | null; edges: Span[] } {
  const wholeFrom = span.from && ceilTo(span.from, unit);
  const wholeTo = span.to && floorTo(span.to, unit);
  if (wholeFrom && wholeTo && wholeFrom >= wholeTo) return { whole: null, edges: [span] };
  const edges: Span[] = [];
  if (span.from && wholeFrom && span.from < wholeFrom) edges.push({ from: span.from, to: wholeFrom });
  if (span.to && wholeTo && wholeTo < span.to) edges.push({ from: wholeTo, to: span.to });
  return { whole: { from: wholeFrom, to: wholeTo }, edges };
}

export function splitByPeriod(from: Date | undefined, to: Date | undefined): PeriodSplit {
  if (from && to && from >= to) return { days: null, hours: [], raw: [] };
  const byDay = cut({ from, to }, DAY_MS);
  const hours: Span[] = [];
  const raw: Span[] = [];
  for (const edge of byDay.edges) {
    const byHour = cut(edge, HOUR_MS);
    if (byHour.whole) hours.push(byHour.whole);
    raw.push(...byHour.edges);
  }
  return { days: byDay.whole, hours, raw };
}

/** The starts of the whole UTC days and hours whose rollup rows a read takes, and the raw spans. */
export interface RollupStarts {
  days: Date[];
  hours: Date[];
  raw: Span[];
}

/** Whole `unit`s of a bounded span, by their starts. */
function unitStarts(span: Span, unit: number): Date[] {
  const starts: Date[] = [];
  for (let at = span.from!.getTime(); at < span.to!.getTime(); at += unit) starts.push(new Date(at));
  return starts;
}

/** [from, to) as splitByPeriod cuts it, each whole day and hour by its start. */
export function rollupStarts(from: Date, to: Date): RollupStarts {
  const split = splitByPeriod(from, to);
  return {
    days: split.days ? unitStarts(split.days, DAY_MS) : [],
    hours: split.hours.flatMap((span) => unitStarts(span, HOUR_MS)),
    raw: split.raw,
  };
}

/** Whole days, hours and raw spans as RollupStarts cuts them, the days taken as blocks where whole ones fit. */
export interface WaitStarts extends RollupStarts {
  blocks: Date[];
}

/** Each span as rollupStarts cuts it, its whole days as blocks where they fit (no block leaves its span). */
export function waitStarts(spans: { from: Date; to: Date }[]): WaitStarts {
  const starts: WaitStarts = { days: [], hours: [], raw: [], blocks: [] };
  const size = WAIT_BLOCK.days * DAY_MS;
  for (const { from, to } of spans) {
    const { days, hours, raw } = rollupStarts(from, to);
    // The span's days are consecutive: a day is in a whole block when its block's first and last days are.
    const first = days[0]?.getTime() ?? 0;
    const end = (days.at(-1)?.getTime() ?? 0) + DAY_MS;
    const blockOf = (day: Date) => Math.floor(day.getTime() / size) * size;
    const inBlock = (day: Date) => blockOf(day) >= first && blockOf(day) + size <= end;
    starts.blocks.push(...days.filter((day) => inBlock(day) && blockOf(day) === day.getTime()));
    starts.days.push(...days.filter((day) => !inBlock(day)));
    starts.hours.push(...hours);
    starts.raw.push(...raw);
  }
  return starts;
}

/** Whether a read of these starts takes raw rows alone, no rollup row. */
export function readsOnlyRaw(starts: WaitStarts): boolean {
  return starts.days.length + starts.hours.length + starts.blocks.length === 0;
}
