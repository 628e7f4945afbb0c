import { parseDurationMs } from '../core/duration';

/** A dashboard draws at most this many points per series, as Prometheus caps query_range. */
export const MAX_SERIES_POINTS = 11_000;

export const MIN_STEP_SECONDS = 60;
export const MAX_STEP_SECONDS = 86_400;

export const STEP_ISSUE = 'must be a whole number of minutes from 1m to 1d, such as 5m, 2h or 1d';

/** `5m`, `2h`, `1d` (or `120s`) in seconds; null when malformed, not whole minutes, or out of 1m..1d. */
export function parseStep(text: string): number | null {
  const ms = parseDurationMs(text);
  if (ms === null) return null;
  const seconds = ms / 1000;
  const wholeMinutes = seconds % 60 === 0;
  return wholeMinutes && seconds >= MIN_STEP_SECONDS && seconds <= MAX_STEP_SECONDS ? seconds : null;
}

/**
 * Buckets are aligned to multiples of the step since the Unix epoch, so the same step gives the
 * same buckets whatever the window: every bucket that overlaps [start, end] is a point.
 */
export function seriesPointCount(windowStart: Date, windowEnd: Date, stepSeconds: number): number {
  const stepMs = stepSeconds * 1000;
  return Math.floor(windowEnd.getTime() / stepMs) - Math.floor(windowStart.getTime() / stepMs) + 1;
}
