import { WAIT_SECONDS_SQL } from '../../core/queue-wait';
import type { PeriodFactsRequest } from '../workload-periods/workload-periods.queries';
import { WAIT_BLOCK, type WaitStarts, type Span } from '../workload-periods/period-split';

/** Columns of every wait fact row, after its time and group key (histogram rows and raw rows alike). */
export const WAIT_FACT_COLUMNS = ['wait_bucket', 'started_count', 'wait_seconds_sum', 'wait_seconds_max'];

/** A period facts request's conditions and keys, with the range as blocks, whole days and hours, and raw spans. */
export type WaitFactsRequest = Omit<PeriodFactsRequest, 'withIdle'> & WaitStarts;

/**
 * SELECTs whose rows together hold the wait histogram of every workload submitted in the request's
 * blocks, days, hours and raw spans that started: `fact_time` (a bucket start, or the submission), `group_key`,
 * then WAIT_FACT_COLUMNS; a raw row is one wait in its own bucket, by the triggers' function. Never
 * empty: an empty range gets a typed source without rows.
 */
export function waitFactsSql(request: WaitFactsRequest): string[] {
  const { params, where } = request;
  const rollup = (period: string, starts: Date[]) =>
    `SELECT bucket_start, ${request.rollupKey}, ${WAIT_FACT_COLUMNS.join(', ')}
       FROM workload_period_waits
       WHERE ${[...where, ...(request.rollupWhere ?? [])].join(' AND ')} AND period = '${period}'
         AND dimension = '${request.dimension}' AND bucket_start = ANY(${params.add(starts)}::timestamptz[])`;
  const raw = (span: Span) =>
    `SELECT submitted_at, ${request.rawKey}, gpucap_wait_bucket(wait), 1, wait, wait
       FROM (SELECT *, ${WAIT_SECONDS_SQL}::bigint AS wait FROM workloads
             WHERE ${[...where, ...(request.rawWhere ?? [])].join(' AND ')} AND started_at IS NOT NULL
               AND submitted_at >= ${params.add(span.from)} AND submitted_at < ${params.add(span.to)}) AS started`;
  const facts = [
    ...(request.blocks.length ? [rollup(WAIT_BLOCK.period, request.blocks)] : []),
    ...(request.days.length ? [rollup('day', request.days)] : []),
    ...(request.hours.length ? [rollup('hour', request.hours)] : []),
    ...request.raw.map(raw),
  ];
  // An empty range still needs a typed row source.
  return facts.length
    ? facts
    : [
        'SELECT NULL::timestamptz, NULL::text, NULL::smallint, NULL::bigint, NULL::bigint, NULL::bigint WHERE false',
      ];
}

/**
 * percentile_cont(`fraction`) over merged histogram rows (`n` waits of `value` each, `below` waits
 * in lower buckets, `started` in all): the values at the ranks either side of fraction × (started − 1),
 * interpolated as percentile_cont interpolates. Ranks are numeric: exact at any count.
 */
function percentileSql(fraction: string): string {
  const rank = `${fraction} * (started - 1)`;
  const at = (position: string) =>
    `max(value) FILTER (WHERE below <= ${position}(${rank}) AND ${position}(${rank}) < below + n)`;
  return `(${at('floor')} + (max(${rank}) - floor(max(${rank}))) * (${at('ceil')} - ${at('floor')}))::float8`;
}

/**
 * The queue-wait figures of each set of `hist` (`set_keys` then wait_bucket, n, total_wait, largest:
 * one row per set and non-empty bucket): started, average and largest wait exactly, p50 and p95
 * within 1 % of percentile_cont (queue-waits.definitions.ts).
 */
export function waitFiguresSql(hist: string, setKeys: string[]): string {
  const partition = setKeys.join(', ');
  return `SELECT ${partition}, max(started)::float8 AS started,
        (sum(total_wait) / max(started))::float8 AS avg_seconds,
        ${percentileSql('0.5')} AS p50_seconds, ${percentileSql('0.95')} AS p95_seconds,
        max(largest)::float8 AS max_seconds
      FROM (SELECT *, gpucap_wait_bucket_value(wait_bucket, largest) AS value,
                   sum(n) OVER (PARTITION BY ${partition} ORDER BY wait_bucket) - n AS below,
                   sum(n) OVER (PARTITION BY ${partition}) AS started
            FROM (${hist}) AS hist) AS ranked
      GROUP BY ${partition}`;
}

/**
 * waitFiguresSql's figures of raw wait rows alone (`facts`: waitFactsSql rows, one wait each, as
 * `wait_seconds_max`) grouped by `sets` into `setColumns`: percentile_cont itself, exact.
 */
export function exactWaitFiguresSql(facts: string, setColumns: string, sets: string): string {
  return `SELECT ${setColumns}, count(*)::float8 AS started, avg(wait_seconds_max)::float8 AS avg_seconds,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds_max) AS p50_seconds,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY wait_seconds_max) AS p95_seconds,
        max(wait_seconds_max)::float8 AS max_seconds
      FROM (${facts}) AS waits GROUP BY GROUPING SETS (${sets})`;
}
