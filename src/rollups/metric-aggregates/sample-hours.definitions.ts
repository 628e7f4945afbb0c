import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import { weeklyPartitionsFunction } from '../../database/definitions/sample-store.definitions';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;

/**
 * The hours a window reaches (org, wl, low, high: the window functions' parameters), a FROM clause;
 * an hour is whole when every reading of it lies inside the window.
 */
const WINDOW_HOURS = `FROM metric_sample_hours h
        WHERE h.organization_id = org AND h.workload_id = wl
          AND h.day_start >= date_trunc('day', low, 'UTC') AND h.day_start <= high
          AND h.hour_start >= date_trunc('hour', low, 'UTC') AND h.hour_start <= high
          AND h.last_sampled_at >= low AND h.first_sampled_at <= high`;

/**
 * The window's sealed readings as slices of their day blocks (org, wl, low, high: the function's
 * parameters): per day, its run of hours wholly inside the window as one slice (whole hours of a day
 * are consecutive, and so are their readings), and each other hour in the window as its own, to be
 * decoded and cut.
 */
const WINDOW_SLICES = `      WITH hours AS MATERIALIZED (
        SELECT h.day_start, h.first_index, h.sample_count, h.steps_before,
               h.first_sampled_at >= low AND h.last_sampled_at <= high AS whole
        ${WINDOW_HOURS}
      ),
      runs AS (
        SELECT h.day_start, min(h.first_index) AS first_index, sum(h.sample_count)::integer AS sample_count,
               min(h.steps_before) AS steps_before, true AS whole
        FROM hours h WHERE h.whole GROUP BY h.day_start
        UNION ALL
        SELECT h.day_start, h.first_index, h.sample_count, h.steps_before, false FROM hours h WHERE NOT h.whole
      ),
      slices AS (
        SELECT r.whole, r.day_start, r.first_index, r.steps_before, ${['step_us', ...METRICS].map((c) => `d.${c}[r.first_index : r.first_index + r.sample_count - 1] AS ${c}`).join(', ')}
        FROM runs r
        JOIN metric_sample_days d ON d.organization_id = org AND d.workload_id = wl AND d.day_start = r.day_start
                                 AND d.day_start >= date_trunc('day', low, 'UTC') AND d.day_start <= high
      )`;

/**
 * The metrics whose largest readings each hour keeps (`<metric>_top`, largest first), and how many:
 * ⌊count / divisor⌋ + 1. A window's p95 needs its top 5 %, its p99 and risk its top 1 %, and a
 * daily rhythm puts far more than an hour's share of them into its busiest hours: a third (an
 * eighth) and one leaves room for that, and an hour holding more still is read whole
 * (gpucap_window_evidence).
 */
export const HOUR_TAILS = [
  { metric: 'gpu_utilization', divisor: 3 },
  { metric: 'memory_utilization', divisor: 8 },
] as const;

/**
 * The tail columns of a stored hour `h` from its block `d`: the backfill of hours stored without them.
 * Beside gpucap_sample_hour_rows' own (the same values, tested against one recomputation): the writers
 * build them in their one pass over a new block, the backfill slices hours it already has, about
 * twenty times cheaper than recomputing every hour of the block under the writer lock.
 */
export const hourTailsSql = (d: string, h: string): string =>
  HOUR_TAILS.map(
    ({ metric, divisor }) =>
      `gpucap_top_readings(${d}.${metric}[${h}.first_index : ${h}.first_index + ${h}.sample_count - 1], ${h}.sample_count / ${divisor} + 1)`,
  ).join(', ');

/** The summary columns of metric_sample_hours after its day, in the order gpucap_sample_hour_rows returns them. */
export const SAMPLE_HOUR_COLUMNS = [
  'hour_start',
  'first_index',
  'sample_count',
  'steps_before',
  'first_sampled_at',
  'last_sampled_at',
  ...METRICS.flatMap((m) => [`${m}_sum`, `${m}_min`, `${m}_max`, `${m}_last`]),
  ...HOUR_TAILS.map(({ metric }) => `${metric}_top`),
];

/**
 * Per-hour summaries of the day blocks (metric_sample_hours): each block's hours are rewritten by
 * the statement that writes the block (seal, import, prune's detach aside), so they describe exactly
 * the readings the blocks hold, under the writer's locks.
 */
export const sampleHourDefinitions: Definition[] = [
  // Its own call, like the blocks' weeks (sample-store.definitions.ts says why): a reader locks the
  // blocks and their hours in either order.
  weeklyPartitionsFunction('gpucap_ensure_sample_hour_partitions', 'metric_sample_hours', 2),
  // Times as gpucap_unpack_samples computes them (the same float8 running sum from the day's start),
  // so an hour's first and last times are the ones readers compare with a window's bounds; sums in
  // time order, so a recomputation from the readings gives the same float8; the tails from the same
  // pass over the readings, so a block's arrays are read once for all its hours.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_hour_rows(day_start timestamp with time zone, step_us bigint[], g double precision[], m double precision[], t double precision[], p double precision[]) RETURNS TABLE(hour_start timestamp with time zone, first_index integer, sample_count integer, steps_before bigint, first_sampled_at timestamp with time zone, last_sampled_at timestamp with time zone, ${METRICS.map((m) => `${m}_sum double precision, ${m}_min double precision, ${m}_max double precision, ${m}_last double precision`).join(', ')}, ${HOUR_TAILS.map(({ metric }) => `${metric}_top double precision[]`).join(', ')}) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT day_start + r.hour::float8 * interval '1 hour', min(r.i)::integer, count(*)::integer, min(r.before_us)::bigint,
           min(r.sampled_at), max(r.sampled_at),
           ${METRICS.map((m, k) => `sum(r.v${k} ORDER BY r.i), min(r.v${k}), max(r.v${k}), ${m.charAt(0)}[max(r.i)]`).join(',\n           ')},
           ${HOUR_TAILS.map(({ metric, divisor }) => `(array_agg(r.v${METRICS.indexOf(metric)} ORDER BY r.v${METRICS.indexOf(metric)} DESC))[1 : count(*)::integer / ${divisor} + 1]`).join(',\n           ')}
    FROM (
      SELECT u.i, u.v0, u.v1, u.v2, u.v3,
             day_start + sum(u.step::float8) OVER w * interval '1 microsecond' AS sampled_at,
             sum(u.step) OVER w - u.step AS before_us,
             div(sum(u.step) OVER w, 3600000000) AS hour
      FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, v0, v1, v2, v3, i)
      WINDOW w AS (ORDER BY u.i ROWS UNBOUNDED PRECEDING)
    ) r
    GROUP BY r.hour
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_top_readings(readings double precision[], k integer) RETURNS double precision[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY(SELECT v FROM unnest(readings) AS v ORDER BY v DESC LIMIT k)
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_hours_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      TRUNCATE metric_sample_hours;
      RETURN NULL;
    END
    $$`),
  // A changed block's hours are replaced whole: a day is at most 24 rows, and a merge may add
  // readings to any of its hours.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_hours_write() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        DELETE FROM metric_sample_hours h USING old_rows o
        WHERE h.organization_id = o.organization_id AND h.workload_id = o.workload_id AND h.day_start = o.day_start;
      END IF;
      IF TG_OP <> 'DELETE' THEN
        INSERT INTO metric_sample_hours (organization_id, workload_id, day_start, ${SAMPLE_HOUR_COLUMNS.join(', ')})
        SELECT n.organization_id, n.workload_id, n.day_start, s.*
        FROM new_rows n
        CROSS JOIN LATERAL gpucap_sample_hour_rows(n.day_start, n.step_us, n.gpu_utilization, n.memory_utilization, n.temperature, n.power_usage) s
        ORDER BY 1, 2, 3, 4;
      END IF;
      RETURN NULL;
    END
    $$`),
  // An hour's slice of a day block (from its first_index), timed as gpucap_unpack_samples times the
  // whole day: steps_before is the running sum up to the slice, in whole microseconds.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_unpack_hour(day_start timestamp with time zone, steps_before bigint, step_us bigint[], g double precision[], m double precision[], t double precision[], p double precision[]) RETURNS TABLE(sampled_at timestamp with time zone, gpu_utilization double precision, memory_utilization double precision, temperature double precision, power_usage double precision) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT day_start + (steps_before::float8 + sum(u.step::float8) OVER (ORDER BY u.i ROWS UNBOUNDED PRECEDING)) * interval '1 microsecond', u.g, u.m, u.t, u.p
    FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, g, m, t, p, i)
    $$`),
  // A window's statistics: whole hours from their summaries, the readings of the other hours from
  // their slices, the open rows as they are; sums in no particular order (src/metrics/window-averages.ts
  // bounds the time-ordered average from them). A generic plan: a custom one costs more to plan, each
  // call, than the whole read; the weeks are pruned when it starts.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_window_hour_stats(org text, wl text, low timestamp with time zone, high timestamp with time zone) RETURNS TABLE(sample_count integer, ${METRICS.map((m) => `${m}_sum double precision, ${m}_min double precision, ${m}_max double precision, ${m}_current double precision`).join(', ')}) LANGUAGE plpgsql STABLE SET plan_cache_mode TO 'force_generic_plan' AS $$
    #variable_conflict use_column
    BEGIN
      RETURN QUERY
      WITH hours AS MATERIALIZED (
        SELECT h.*, h.first_sampled_at >= low AND h.last_sampled_at <= high AS whole
        ${WINDOW_HOURS}
      ),
      pieces (n, last_at, ${METRICS.map((m) => `${m}_sum, ${m}_min, ${m}_max, ${m}_last`).join(', ')}) AS (
        SELECT h.sample_count, h.last_sampled_at, ${METRICS.map((m) => `h.${m}_sum, h.${m}_min, h.${m}_max, h.${m}_last`).join(', ')}
        FROM hours h
        WHERE h.whole
        UNION ALL
        SELECT 1, e.sampled_at, ${METRICS.map((m) => `e.${m}, e.${m}, e.${m}, e.${m}`).join(', ')}
        FROM hours h
        JOIN metric_sample_days d ON d.organization_id = org AND d.workload_id = wl AND d.day_start = h.day_start
                                 AND d.day_start >= date_trunc('day', low, 'UTC') AND d.day_start <= high
        CROSS JOIN LATERAL gpucap_unpack_hour(h.day_start, h.steps_before, ${['step_us', ...METRICS].map((c) => `d.${c}[h.first_index : h.first_index + h.sample_count - 1]`).join(', ')}) e
        WHERE NOT h.whole AND e.sampled_at >= low AND e.sampled_at <= high
        UNION ALL
        SELECT 1, m.sampled_at, ${METRICS.map((m) => `m.${m}, m.${m}, m.${m}, m.${m}`).join(', ')}
        FROM metric_samples m
        WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low AND m.sampled_at <= high
      )
      SELECT coalesce(sum(p.n), 0)::integer,
             ${METRICS.map((m) => `sum(p.${m}_sum), min(p.${m}_min), max(p.${m}_max), (array_agg(p.${m}_last ORDER BY p.last_at DESC))[1]`).join(',\n             ')}
      FROM pieces p;
    END
    $$`),
  // A window's readings without their times, for figures that do not depend on the readings' order
  // (percentiles): each day's run of whole hours as one slice (its arrays detoasted once), the other
  // hours' slices decoded and cut to the window, the open rows. A generic plan, as above.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_window_readings(org text, wl text, low timestamp with time zone, high timestamp with time zone) RETURNS TABLE(${METRICS.map((m) => `${m} double precision`).join(', ')}) LANGUAGE plpgsql STABLE SET plan_cache_mode TO 'force_generic_plan' AS $$
    #variable_conflict use_column
    BEGIN
      RETURN QUERY
${WINDOW_SLICES}
      SELECT ${METRICS.map((m) => `u.${m}`).join(', ')}
      FROM slices s CROSS JOIN LATERAL unnest(${METRICS.map((m) => `s.${m}`).join(', ')}) AS u(${METRICS.join(', ')})
      WHERE s.whole
      UNION ALL
      SELECT ${METRICS.map((m) => `e.${m}`).join(', ')}
      FROM slices s
      CROSS JOIN LATERAL gpucap_unpack_hour(s.day_start, s.steps_before, s.step_us, ${METRICS.map((m) => `s.${m}`).join(', ')}) e
      WHERE NOT s.whole AND e.sampled_at >= low AND e.sampled_at <= high
      UNION ALL
      SELECT ${METRICS.map((m) => `m.${m}`).join(', ')}
      FROM metric_samples m
      WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low AND m.sampled_at <= high;
    END
    $$`),
  // A window's readings in time order without their times, for averages summed as rows alone were:
  // the blocks' by day and position (times increase along a block), then the open rows by time. Open
  // rows before a block reading of the window (a seal under way, a late row) would interleave: the
  // window is then decoded whole. A generic plan, as above.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_window_readings_in_order(org text, wl text, low timestamp with time zone, high timestamp with time zone) RETURNS TABLE(${METRICS.map((m) => `${m} double precision`).join(', ')}) LANGUAGE plpgsql STABLE SET plan_cache_mode TO 'force_generic_plan' AS $$
    #variable_conflict use_column
    BEGIN
      IF EXISTS (
        SELECT 1 FROM metric_samples m
        WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low
          AND m.sampled_at <= least(high, coalesce((
            SELECT max(h.last_sampled_at) FROM metric_sample_hours h
            WHERE h.organization_id = org AND h.workload_id = wl
              AND h.day_start >= date_trunc('day', low, 'UTC') AND h.day_start <= high
              AND h.hour_start >= date_trunc('hour', low, 'UTC') AND h.hour_start <= high), '-infinity'))
      ) THEN
        RETURN QUERY SELECT ${METRICS.map((m) => `s.${m}`).join(', ')} FROM gpucap_workload_samples(org, wl, low, high) s;
        RETURN;
      END IF;
      RETURN QUERY
${WINDOW_SLICES}
      SELECT ${METRICS.map((m) => `r.${m}`).join(', ')}
      FROM (
        SELECT s.day_start AS day_start, s.first_index AS first_index, u.i::float8 AS k, ${METRICS.map((m) => `u.${m}`).join(', ')}
        FROM slices s CROSS JOIN LATERAL unnest(${METRICS.map((m) => `s.${m}`).join(', ')}) WITH ORDINALITY AS u(${METRICS.join(', ')}, i)
        WHERE s.whole
        UNION ALL
        SELECT s.day_start, s.first_index, e.i::float8, ${METRICS.map((m) => `e.${m}`).join(', ')}
        FROM slices s
        CROSS JOIN LATERAL gpucap_unpack_hour(s.day_start, s.steps_before, s.step_us, ${METRICS.map((m) => `s.${m}`).join(', ')})
          WITH ORDINALITY AS e(sampled_at, ${METRICS.join(', ')}, i)
        WHERE NOT s.whole AND e.sampled_at >= low AND e.sampled_at <= high
        UNION ALL
        SELECT 'infinity', 0, date_part('epoch', m.sampled_at), ${METRICS.map((m) => `m.${m}`).join(', ')}
        FROM metric_samples m
        WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low AND m.sampled_at <= high
      ) r
      ORDER BY r.day_start, r.first_index, r.k;
    END
    $$`),
  // A window's right-sizing evidence, equal to SAMPLE_EVIDENCE_SQL over the same readings
  // (src/rollups/workload-summaries/): count and span from the hours and the edge readings, and the
  // percentiles and top memory readings from the largest readings only. A whole hour offers its tail
  // unless the tail is missing or ends above the limit given, then it offers every reading; the edge
  // hours and open rows offer every reading. Take the top k of the offers, k what percentile_cont
  // reaches from the top (and the risk: ⌊count / 100⌋ + 1): they are the window's top k when no tail
  // offered in part ends above the k-th, since each hour's other readings are at most its tail's last.
  // Otherwise a second pass, with that k-th as the limit, reads those hours whole: its offers include
  // the first pass's, so its k-th is no lower and every tail still offered ends at or below it. The
  // interpolation is percentile_cont's, in the same float8 steps. A generic plan, as above.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_window_evidence(org text, wl text, low timestamp with time zone, high timestamp with time zone) RETURNS TABLE(sample_count integer, sampled_seconds double precision, p95_gpu_utilization double precision, p99_memory_utilization double precision, top_memory_utilization double precision[]) LANGUAGE plpgsql STABLE SET plan_cache_mode TO 'force_generic_plan' AS $$
    #variable_conflict use_column
    DECLARE
      g_limit double precision := 'infinity';
      m_limit double precision := 'infinity';
      found_evidence record;
    BEGIN
      FOR pass IN 1..3 LOOP
        WITH hours AS MATERIALIZED (
          SELECT h.day_start, h.first_index, h.sample_count, h.steps_before, h.first_sampled_at, h.last_sampled_at,
                 h.gpu_utilization_top AS g_top, h.memory_utilization_top AS m_top,
                 h.first_sampled_at >= low AND h.last_sampled_at <= high AS whole
          ${WINDOW_HOURS}
        ),
        tails AS MATERIALIZED (
          SELECT h.*,
                 h.g_top IS NULL OR (h.sample_count > cardinality(h.g_top) AND h.g_top[cardinality(h.g_top)] > g_limit) AS g_read,
                 h.m_top IS NULL OR (h.sample_count > cardinality(h.m_top) AND h.m_top[cardinality(h.m_top)] > m_limit) AS m_read
          FROM hours h WHERE h.whole
        ),
        -- The hours read whole, a slice of each day's arrays spanning them: a block decompressed once.
        read_days AS MATERIALIZED (
          SELECT k.day_start, k.low_index, d.gpu_utilization[k.low_index : k.high_index] AS g,
                 d.memory_utilization[k.low_index : k.high_index] AS m
          FROM (
            SELECT t.day_start, min(t.first_index) AS low_index, max(t.first_index + t.sample_count - 1) AS high_index
            FROM tails t WHERE t.g_read OR t.m_read GROUP BY t.day_start
          ) k
          JOIN metric_sample_days d ON d.organization_id = org AND d.workload_id = wl AND d.day_start = k.day_start
                                   AND d.day_start >= date_trunc('day', low, 'UTC') AND d.day_start <= high
        ),
        readings AS MATERIALIZED (
          SELECT false AS edge, NULL::timestamptz AS sampled_at, t.g_read AS g_in, t.m_read AS m_in, u.g, u.m
          FROM tails t
          JOIN read_days y ON y.day_start = t.day_start
          CROSS JOIN LATERAL unnest(y.g[t.first_index - y.low_index + 1 : t.first_index - y.low_index + t.sample_count],
                                    y.m[t.first_index - y.low_index + 1 : t.first_index - y.low_index + t.sample_count]) AS u(g, m)
          WHERE t.g_read OR t.m_read
          UNION ALL
          SELECT true, e.sampled_at, true, true, e.gpu_utilization, e.memory_utilization
          FROM hours h
          JOIN metric_sample_days d ON d.organization_id = org AND d.workload_id = wl AND d.day_start = h.day_start
                                   AND d.day_start >= date_trunc('day', low, 'UTC') AND d.day_start <= high
          CROSS JOIN LATERAL gpucap_unpack_hour(h.day_start, h.steps_before, d.step_us[h.first_index : h.first_index + h.sample_count - 1],
                                                d.gpu_utilization[h.first_index : h.first_index + h.sample_count - 1],
                                                d.memory_utilization[h.first_index : h.first_index + h.sample_count - 1], '{}', '{}') e
          WHERE NOT h.whole AND e.sampled_at >= low AND e.sampled_at <= high
          UNION ALL
          SELECT true, m.sampled_at, true, true, m.gpu_utilization, m.memory_utilization
          FROM metric_samples m
          WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low AND m.sampled_at <= high
        ),
        total AS MATERIALIZED (
          SELECT n, 0.95::float8 * (n - 1) AS g_at, 0.99::float8 * (n - 1) AS m_at, first_at, last_at
          FROM (
            SELECT (SELECT coalesce(sum(t.sample_count), 0) FROM tails t) + (SELECT count(*) FROM readings r WHERE r.edge) AS n,
                   least((SELECT min(t.first_sampled_at) FROM tails t), (SELECT min(r.sampled_at) FROM readings r WHERE r.edge)) AS first_at,
                   greatest((SELECT max(t.last_sampled_at) FROM tails t), (SELECT max(r.sampled_at) FROM readings r WHERE r.edge)) AS last_at
          ) c
        ),
        need AS (
          SELECT t.*,
                 CASE WHEN n > 0 THEN (n - floor(g_at))::int ELSE 0 END AS g_k,
                 CASE WHEN n > 0 THEN (n - floor(m_at))::int ELSE 0 END AS m_p99,
                 CASE WHEN n > 0 THEN greatest(n - floor(m_at), n / 100 + 1)::int ELSE 0 END AS m_k
          FROM total t
        ),
        tops AS MATERIALIZED (
          SELECT k.*,
                 ARRAY(SELECT v FROM (SELECT unnest(t.g_top) FROM tails t WHERE NOT t.g_read
                                      UNION ALL SELECT r.g FROM readings r WHERE r.g_in) AS o(v)
                       ORDER BY v DESC LIMIT k.g_k) AS g,
                 ARRAY(SELECT v FROM (SELECT unnest(t.m_top) FROM tails t WHERE NOT t.m_read
                                      UNION ALL SELECT r.m FROM readings r WHERE r.m_in) AS o(v)
                       ORDER BY v DESC LIMIT k.m_k) AS m
          FROM need k
        )
        SELECT o.n::int AS sample_count,
               date_part('epoch', o.last_at - o.first_at)::float8 AS sampled_seconds,
               CASE WHEN o.n = 0 THEN NULL WHEN floor(o.g_at) = ceil(o.g_at) THEN o.g[o.g_k]
                    ELSE o.g[o.g_k] + (o.g_at - floor(o.g_at)) * (o.g[o.g_k - 1] - o.g[o.g_k]) END AS p95,
               CASE WHEN o.n = 0 THEN NULL WHEN floor(o.m_at) = ceil(o.m_at) THEN o.m[o.m_p99]
                    ELSE o.m[o.m_p99] + (o.m_at - floor(o.m_at)) * (o.m[o.m_p99 - 1] - o.m[o.m_p99]) END AS p99,
               CASE WHEN o.n > 0 THEN o.m[1 : (o.n / 100 + 1)::int] END AS top_memory,
               cardinality(o.g) >= o.g_k AND cardinality(o.m) >= o.m_k AND NOT EXISTS (
                 SELECT 1 FROM tails t
                 WHERE (NOT t.g_read AND t.sample_count > cardinality(t.g_top) AND t.g_top[cardinality(t.g_top)] > o.g[o.g_k])
                    OR (NOT t.m_read AND t.sample_count > cardinality(t.m_top) AND t.m_top[cardinality(t.m_top)] > o.m[o.m_k])) AS exact,
               coalesce(o.g[o.g_k], '-infinity') AS g_next,
               coalesce(o.m[o.m_k], '-infinity') AS m_next
        INTO found_evidence
        FROM tops o;
        EXIT WHEN found_evidence.exact;
        -- The first pass's k-ths are the second's limits; a third pass, unreachable by the argument
        -- above, would read every hour whole.
        g_limit := CASE WHEN pass = 1 THEN found_evidence.g_next ELSE '-infinity' END;
        m_limit := CASE WHEN pass = 1 THEN found_evidence.m_next ELSE '-infinity' END;
      END LOOP;
      RETURN QUERY SELECT found_evidence.sample_count, found_evidence.sampled_seconds, found_evidence.p95,
                          found_evidence.p99, found_evidence.top_memory;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_hours_delete AFTER DELETE ON metric_sample_days REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_hours_write()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_hours_insert AFTER INSERT ON metric_sample_days REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_hours_write()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_hours_truncate AFTER TRUNCATE ON metric_sample_days FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_hours_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_hours_update AFTER UPDATE ON metric_sample_days REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_hours_write()',
  ),
];
