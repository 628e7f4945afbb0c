/**
 * How long a started workload waited in the queue, whole seconds (floor), over a `workloads` row (`row`: its alias, if qualified):
 * the one definition of a wait, shared by the workloads' figures, capacity's pools and the wait
 * histograms' triggers. `date_part`
 * (float8) rather than `extract` (numeric, slower per row) is exact here: an interval is whole
 * microseconds, so its seconds as a float8 are an integer exactly when the interval is whole seconds,
 * and a microsecond away from one otherwise, far more than a float8's error below 2^53 µs.
 */
export function waitSecondsSql(row?: string): string {
  const of = row ? `${row}.` : '';
  return `floor(date_part('epoch', ${of}started_at - ${of}submitted_at))`;
}

/** waitSecondsSql of the row in scope, unqualified. */
export const WAIT_SECONDS_SQL = waitSecondsSql();

/**
 * The wait histograms' multi-day rows (src/rollups/queue-waits/): blocks of 16 UTC days aligned to the
 * Unix epoch, so a month's range merges a block or two instead of a row per day and bucket.
 */
export const WAIT_BLOCK = { period: 'days16', days: 16 } as const;
