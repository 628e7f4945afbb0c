/**
 * Writes readings into metric_sample_days, the packed store of sealed days: one row per workload and
 * UTC day, the readings as arrays in time order and the times as microsecond steps from the previous
 * reading (the first from the day's start).
 */

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];
const READINGS = ['organization_id', 'workload_id', 'sampled_at', ...METRICS];
const READING_COLUMNS = READINGS.join(', ');
/** A staged or stored reading's columns: the reading's, then its UTC day. */
const MERGED_COLUMNS = [...READINGS, 'day_start'];

/**
 * One statement that merges the readings of `source` (a relation or CTE with the columns of
 * metric_samples, defined by `prefix`, which ends with a comma when given) into their stored days:
 * a reading replaces the stored one of the same time, and a day whose arrays come out unchanged is
 * not rewritten, so re-sent readings are idempotent and fire no trigger. A reading repeated within
 * `source` fails the check `metric_sample_days_increasing` (SQLSTATE 23514).
 *
 * Answers one row: `readings` in the source, `changed` among them (new, or other values than stored).
 * An import's readings usually start new days: the stored side is then empty and cheap to join.
 */
export function mergeIntoDaysSql(prefix: string, source: string): string {
  const key = '(s.organization_id, s.workload_id, s.sampled_at)';
  const stored = '(t.organization_id, t.workload_id, t.sampled_at)';
  const values = (alias: string) => `(${METRICS.map((m) => `${alias}.${m}`).join(', ')})`;
  return `
  WITH ${prefix}
  -- Read where referenced: the sources are a table or a CTE that is materialized already, and
  -- materializing a million readings again costs more than reading them a few times.
  staged AS NOT MATERIALIZED (
    SELECT ${READING_COLUMNS}, date_bin('1 day', sampled_at, timestamptz 'epoch') AS day_start FROM ${source}
  ),
  stored AS (
    SELECT d.organization_id, d.workload_id, u.sampled_at, ${METRICS.map((m) => `u.${m}`).join(', ')}, d.day_start
    FROM metric_sample_days d
    JOIN (SELECT DISTINCT organization_id, workload_id, day_start FROM staged) k USING (organization_id, workload_id, day_start)
    CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, ${METRICS.map((m) => `d.${m}`).join(', ')}) u
  ),
  -- Full joins, here and in the count below, are hashed or merged, never a nested loop: a seal's
  -- source (a DELETE ... RETURNING from a partition without statistics) is estimated at a row, and
  -- a loop over it read the stored readings of its days once per moved reading, quadratic in the
  -- hours of a UTC day already sealed. Without stored days (most imports) the source passes as it
  -- is: the join is not run, nor the count.
  merged AS (
    SELECT * FROM staged WHERE NOT EXISTS (SELECT FROM stored)
    UNION ALL
    SELECT ${MERGED_COLUMNS.map((c) => `CASE WHEN s.sampled_at IS NULL THEN t.${c} ELSE s.${c} END`).join(',\n           ')}
    FROM stored t FULL JOIN staged s ON ${stored} = ${key}
    WHERE EXISTS (SELECT FROM stored)
  ),
  -- Each day's arrays sorted by time within the day alone: many small sorts on a timestamp cost a
  -- fraction of one sort of every reading by its text keys, and leave the grouping free to hash.
  -- A time repeated in a day gives a step of zero and fails metric_sample_days_increasing.
  packed AS (
    SELECT organization_id, workload_id, day_start, array_agg(sampled_at ORDER BY sampled_at) AS times,
           ${METRICS.map((m) => `array_agg(${m} ORDER BY sampled_at) AS ${m}`).join(', ')}
    FROM merged
    GROUP BY organization_id, workload_id, day_start
  ),
  written AS (
    INSERT INTO metric_sample_days AS t
    SELECT organization_id, workload_id, day_start, gpucap_sample_steps(day_start, times), ${METRICS.join(', ')}
    FROM packed
    ON CONFLICT (organization_id, workload_id, day_start) DO UPDATE
      SET step_us = excluded.step_us, ${METRICS.map((m) => `${m} = excluded.${m}`).join(', ')}
      WHERE (t.step_us, ${METRICS.map((m) => `t.${m}`).join(', ')})
            IS DISTINCT FROM (excluded.step_us, ${METRICS.map((m) => `excluded.${m}`).join(', ')})
    RETURNING 1
  )
  -- FILTER, not WHERE: a WHERE on both sides would turn the full join into an inner one.
  SELECT r.readings, r.readings - CASE WHEN EXISTS (SELECT FROM stored) THEN (
           SELECT count(*) FILTER (WHERE ${values('t')} = ${values('s')})
           FROM stored t FULL JOIN staged s ON ${stored} = ${key}
         ) ELSE 0 END::float8 AS changed
  FROM (SELECT count(*)::float8 AS readings FROM staged) r`;
}
