import { WAIT_BLOCK, WAIT_SECONDS_SQL } from '../../core/queue-wait';
import type { PeriodFactsRequest } from '../workload-periods/workload-periods.queries';
import type { WaitStarts, Span } from '../workload-periods/period-split';

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

/** The percentiles the figures take, in percent. */
const PERCENTILES = [50, 95];

/**
 * The ranks either side of percent × (started − 1) / 100 among `started` waits and how far between
 * them the percentile lies, as columns of every histogram row: integers, exact at any count and
 * compared per row without numeric arithmetic.
 */
function rankColumnsSql(percent: number): string {
  const scaled = `${percent} * (started - 1)`;
  return `(${scaled}) / 100 AS low_${percent}, (${scaled}) / 100 + ((${scaled}) % 100 <> 0)::int AS high_${percent},
          ((${scaled}) % 100)::float8 / 100 AS part_${percent}`;
}

/**
 * percentile_cont at `percent` % over ranked histogram rows (`n` waits of `value` each, `below` waits
 * in lower buckets): the values at the ranks either side, interpolated as percentile_cont interpolates.
 */
function percentileSql(percent: number): string {
  const at = (rank: string) => `max(value) FILTER (WHERE below <= ${rank} AND ${rank} < below + n)`;
  return `(${at(`low_${percent}`)} + max(part_${percent}) * (${at(`high_${percent}`)} - ${at(`low_${percent}`)}))::float8`;
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
        ${PERCENTILES.map((percent) => `${percentileSql(percent)} AS p${percent}_seconds`).join(', ')},
        max(largest)::float8 AS max_seconds
      FROM (SELECT *, ${PERCENTILES.map(rankColumnsSql).join(', ')}
            FROM (SELECT ${partition}, n, total_wait, largest, gpucap_wait_bucket_value(wait_bucket, largest) AS value,
                         (sum(n) OVER (PARTITION BY ${partition} ORDER BY wait_bucket))::bigint - n AS below,
                         (sum(n) OVER (PARTITION BY ${partition}))::bigint AS started
                  FROM (SELECT ${partition}, wait_bucket, n::bigint AS n, total_wait, largest FROM (${hist}) AS hist) AS hist
                 ) AS counted) AS ranked
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
