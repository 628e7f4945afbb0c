import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Capacity's edge days without a day of raw rows: an hourly usage rollup,
 * so a capacity or burn-down window that ends inside a UTC day reads raw rows only for the hour it
 * ends in, and none when it ends on an hour.
 *
 * capacity_usage_daily already holds, per day, the GPUs of finished runs spanning the whole day.
 * capacity_usage_hourly holds the others: each finished run with GPUs and a positive length adds to
 * at most two buckets, one in the UTC day it starts and one in the day it ends (one if both are the
 * same day), keyed by the hour it starts in that day (-1: before the day) and the hour it ends in
 * (24: after the day). Per bucket: its GPUs, Σ GPUs × start offset (s' = max(start, midnight)) and
 * Σ GPUs × (e' − s'), offsets in microseconds from the day's midnight (exact integers), and the
 * sampled and busy parts of each (gpucap_busy_share, as in capacity_usage_daily). So a workload
 * writes a constant number of rows, however long it ran.
 *
 * Usage over [midnight, T) of the day's non-spanning runs, T in hour k (docs/architecture.md):
 * buckets ending before hour k count whole; buckets with start_hour < k < end_hour count
 * gpus × T − gpu_start_offset; runs starting or ending inside hour k are raw rows (on an hour
 * boundary those with end_hour = k count like the spanning ones, and there is no raw row).
 *
 * Maintained in the same statements as capacity_usage_daily: the workloads trigger and the
 * metric_aggregates triggers of migration 15000 now apply one data-modifying CTE over their changed
 * runs (the aggregate looked up once) that upserts both tables. Like the daily rows, buckets that
 * net to zero stay (at most a few hundred keys per initiative, instance type and day); unchanged
 * rows of a re-import write nothing.
 */

/*
 * Migration 15000's statement builders, copied rather than imported: a deployed migration keeps
 * executing exactly what it did, whatever later edits happen to another migration's file.
 */

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const PERIOD_KEY = 'organization_id, period, dimension, bucket_start, initiative_id, dimension_value';
const CAPACITY_KEY = 'organization_id, usage_day, initiative_id, instance_type';
const WORKLOAD_COLUMNS = [
  'organization_id',
  'workload_id',
  'submitted_at',
  'initiative_id',
  'submitted_by',
  'instance_type',
  'is_managed',
  'status',
  'gpu_count',
  'started_at',
  'completed_at',
];
const DURATION = 'floor(extract(epoch FROM completed_at - started_at))';
const FINISHED = `(status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)`;
const UTC_DAY = `date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
const UTC_HOUR = `date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
const SAMPLED = (amount: string) => `gpucap_sampled_share(${amount}, sample_count)`;
const BUSY = (amount: string) => `gpucap_busy_share(${amount}, gpu_utilization_sum, sample_count)`;

interface Measure {
  column: string;
  sum: string;
  type: 'bigint' | 'numeric';
}

/** Over signed workload rows with their `gpu_seconds` (finished runs' GPU-seconds, else 0). */
const COUNT_MEASURES: Measure[] = [
  ...STATUSES.map((status) => ({
    column: `${status}_count`,
    sum: `sum(sign * (status = '${status}')::int)`,
    type: 'bigint' as const,
  })),
  { column: 'finished_count', sum: `sum(sign * ${FINISHED}::int)`, type: 'bigint' },
  { column: 'duration_seconds_sum', sum: `coalesce(sum(sign * ${DURATION}), 0)`, type: 'bigint' },
  { column: 'gpu_seconds_sum', sum: 'coalesce(sum(sign * gpu_seconds), 0)', type: 'bigint' },
];

/** ...that also carry their aggregate's `sample_count` and `gpu_utilization_sum`. */
const IDLE_MEASURES: Measure[] = [
  {
    column: 'sampled_gpu_seconds_sum',
    sum: `coalesce(sum(sign * ${SAMPLED('gpu_seconds')}), 0)`,
    type: 'bigint',
  },
  { column: 'busy_gpu_seconds_sum', sum: `coalesce(sum(sign * ${BUSY('gpu_seconds')}), 0)`, type: 'numeric' },
];

/** Every dimension per day and per hour; by submitter of managed and of unmanaged workloads per day only. */
const GROUPING_SETS = [
  ...['day', 'hour'].flatMap((bucket) =>
    ['', ', submitted_by', ', instance_type'].map(
      (dimension) => `(organization_id, ${bucket}, initiative_id${dimension})`,
    ),
  ),
  '(organization_id, day, initiative_id, is_managed, submitted_by)',
];

/** Adds the measures of signed workload rows (`source`) to every period row they fall in. */
function periodDeltaSql(source: string, measures: Measure[]): string {
  return `
    INSERT INTO workload_period_rollups AS r (${PERIOD_KEY}, ${measures.map((m) => m.column).join(', ')})
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           ${measures.map((m) => `${m.sum}::${m.type}`).join(',\n           ')}
    FROM (SELECT *, ${UTC_DAY} AS day, ${UTC_HOUR} AS hour FROM (${source}) AS signed) AS changed
    GROUP BY GROUPING SETS (${GROUPING_SETS.join(', ')})
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING ${measures.map((m) => `${m.sum} <> 0`).join(' OR ')}
    ON CONFLICT (${PERIOD_KEY}) DO UPDATE SET
      ${measures.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')};`;
}

const PERIOD_DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, ${UTC_HOUR} AS hour_start, ${UTC_DAY} AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND ${STATUSES.map((status) => `r.${status}_count = 0`).join(' AND ')};`;

/** A transition table's workloads with a sign and their GPU-seconds. */
function signedWorkloadsSql(sign: 1 | -1, table: 'new_rows' | 'old_rows'): string {
  return `SELECT ${sign} AS sign, ${WORKLOAD_COLUMNS.join(', ')},
      coalesce(gpu_count::bigint * ${DURATION}, 0) AS gpu_seconds FROM ${table}`;
}

/** Signed rows that have organization_id, workload_id and the run's times, with the workload's aggregate now. */
function withCurrentAggregateSql(rows: string): string {
  return `
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (${rows}) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL`;
}

/**
 * The finished workloads of signed aggregate rows (`parts`: a table per sign), each with its
 * GPU-seconds and that aggregate's count and sum: what the idle parts move between.
 */
function workloadsOfAggregatesSql(parts: { sign: 1 | -1; table: string }[]): string {
  const aggregates = parts
    .map(
      ({ sign, table }) =>
        `SELECT ${sign} AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM ${table}`,
    )
    .join(' UNION ALL ');
  return `
    SELECT c.sign, ${WORKLOAD_COLUMNS.map((column) => `w.${column}`).join(', ')},
           w.gpu_count::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (${aggregates}) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_count > 0`;
}

interface CapacityMeasure {
  column: string;
  amount: string;
  idle: boolean;
}

const CAPACITY_MEASURES: CapacityMeasure[] = [
  { column: 'gpu_microseconds', amount: 'd.gpu_microseconds', idle: false },
  { column: 'spanning_gpus', amount: 'd.spanning_gpus', idle: false },
  { column: 'sampled_gpu_microseconds', amount: SAMPLED('d.gpu_microseconds'), idle: true },
  { column: 'busy_gpu_microseconds', amount: BUSY('d.gpu_microseconds'), idle: true },
  { column: 'sampled_spanning_gpus', amount: SAMPLED('d.spanning_gpus'), idle: true },
  { column: 'busy_spanning_gpus', amount: BUSY('d.spanning_gpus'), idle: true },
];
const CAPACITY_IDLE_MEASURES = CAPACITY_MEASURES.filter((m) => m.idle);

/**
 * Adds signed finished runs (`source`: sign, organization_id, initiative_id, instance_type, gpu_count,
 * started_at, completed_at, and with idle measures sample_count, gpu_utilization_sum) to the days
 * they overlap.
 */
function capacityDeltaSql(source: string, measures: CapacityMeasure[]): string {
  return `${capacityUpsertSql(source, measures)};`;
}

/** capacityDeltaSql as one statement without its semicolon (a data-modifying CTE of usageDeltaSql below). */
function capacityUpsertSql(source: string, measures: CapacityMeasure[]): string {
  const sums = measures.map((m) => `sum(c.sign * ${m.amount})`);
  return `
    INSERT INTO capacity_usage_daily AS r (${CAPACITY_KEY}, ${measures.map((m) => m.column).join(', ')})
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, ${sums.join(', ')}
    FROM (${source}) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_count) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING ${sums.map((sum) => `${sum} <> 0`).join(' OR ')}
    ON CONFLICT (${CAPACITY_KEY}) DO UPDATE SET
      ${measures.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')}`;
}

const USAGE_INPUTS = ['initiative_id', 'instance_type', 'gpu_count', 'started_at', 'completed_at'];
const columnsOf = (alias: string) => USAGE_INPUTS.map((column) => `${alias}.${column}`).join(', ');

/** Runs whose usage inputs changed in an UPDATE, old subtracted and new added; unchanged ones not at all. */
const CHANGED_RUNS_SQL = `
    SELECT c.* FROM old_rows o
    FULL JOIN new_rows n ON n.organization_id = o.organization_id AND n.workload_id = o.workload_id
    CROSS JOIN LATERAL (VALUES
      (-1, o.organization_id, o.workload_id, ${columnsOf('o')}),
      (1, n.organization_id, n.workload_id, ${columnsOf('n')})
    ) AS c (sign, organization_id, workload_id, ${USAGE_INPUTS.join(', ')})
    WHERE (${columnsOf('o')}) IS DISTINCT FROM (${columnsOf('n')})`;

function functionSql(name: string, body: string): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/** Migration 15000's workloads trigger functions, which `down` restores. */
function workloadFunctions(): string[] {
  const period = (rows: string) =>
    periodDeltaSql(withCurrentAggregateSql(rows), [...COUNT_MEASURES, ...IDLE_MEASURES]);
  const capacity = (runs: string) => capacityDeltaSql(withCurrentAggregateSql(runs), CAPACITY_MEASURES);
  const newRows = signedWorkloadsSql(1, 'new_rows');
  const oldRows = signedWorkloadsSql(-1, 'old_rows');
  return [
    functionSql('gpucap_workload_period_insert', period(newRows)),
    functionSql(
      'gpucap_workload_period_update',
      period(`${newRows} UNION ALL ${oldRows}`) + PERIOD_DROP_EMPTY_KEYS_SQL,
    ),
    functionSql('gpucap_workload_period_delete', period(oldRows) + PERIOD_DROP_EMPTY_KEYS_SQL),
    functionSql(
      'gpucap_capacity_rollup_trigger',
      `IF TG_OP = 'INSERT' THEN ${capacity(newRows)}
      ELSIF TG_OP = 'DELETE' THEN ${capacity(oldRows)}
      ELSE ${capacity(CHANGED_RUNS_SQL)}
      END IF;`,
    ),
  ];
}

/** Moves finished workloads' idle parts from their old aggregate to their new one. */
function aggregateDeltaSql(parts: { sign: 1 | -1; table: string }[]): string {
  const workloads = workloadsOfAggregatesSql(parts);
  return periodDeltaSql(workloads, IDLE_MEASURES) + capacityDeltaSql(workloads, CAPACITY_IDLE_MEASURES);
}

const ZERO_IDLE_SQL = `
    UPDATE workload_period_rollups SET ${IDLE_MEASURES.map((m) => `${m.column} = 0`).join(', ')}
      WHERE ${IDLE_MEASURES.map((m) => `${m.column} <> 0`).join(' OR ')};
    UPDATE capacity_usage_daily SET ${CAPACITY_IDLE_MEASURES.map((m) => `${m.column} = 0`).join(', ')}
      WHERE ${CAPACITY_IDLE_MEASURES.map((m) => `${m.column} <> 0`).join(' OR ')};`;

const NEW_AGGREGATES = { sign: 1, table: 'new_rows' } as const;
const OLD_AGGREGATES = { sign: -1, table: 'old_rows' } as const;
const AGGREGATE_TRIGGERS = [
  { event: 'INSERT', parts: [NEW_AGGREGATES], referencing: 'NEW TABLE AS new_rows' },
  {
    event: 'UPDATE',
    parts: [NEW_AGGREGATES, OLD_AGGREGATES],
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
  },
  { event: 'DELETE', parts: [OLD_AGGREGATES], referencing: 'OLD TABLE AS old_rows' },
];

const HOURLY_KEY = 'organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type';
const RUN_COLUMNS =
  'sign, organization_id, initiative_id, instance_type, gpu_count, started_at, completed_at, sample_count, gpu_utilization_sum';

interface HourlyMeasure {
  column: string;
  amount: string;
  type: 'bigint' | 'numeric';
}

/** GPUs, Σ GPUs × start offset and GPU-microseconds (h: gpucap_usage_hours), each plain, sampled and busy. */
const HOURLY_MEASURES: HourlyMeasure[] = [
  { column: 'gpus', amount: 'h.gpus' },
  { column: 'gpu_start_offset', amount: 'h.gpu_start_offset' },
  { column: 'gpu_microseconds', amount: 'h.gpu_microseconds' },
].flatMap(({ column, amount }) => [
  { column, amount, type: 'bigint' as const },
  { column: `sampled_${column}`, amount: SAMPLED(amount), type: 'bigint' as const },
  { column: `busy_${column}`, amount: BUSY(amount), type: 'numeric' as const },
]);
const HOURLY_IDLE_MEASURES = HOURLY_MEASURES.filter((m) => m.column.match(/^(sampled|busy)_/));

const CREATE_SQL = `
  CREATE TABLE capacity_usage_hourly (
    organization_id  text NOT NULL,
    usage_day        date NOT NULL,
    start_hour       smallint NOT NULL CHECK (start_hour BETWEEN -1 AND 23),
    end_hour         smallint NOT NULL CHECK (end_hour BETWEEN 0 AND 24 AND end_hour >= start_hour),
    initiative_id    text NOT NULL,
    instance_type    text NOT NULL,
    ${HOURLY_MEASURES.map((m) => `${m.column} ${m.type} NOT NULL DEFAULT 0`).join(',\n    ')},
    -- Readers take a day's buckets that start before an hour: a range of this key.
    PRIMARY KEY (${HOURLY_KEY}),
    CHECK (NOT (start_hour = -1 AND end_hour = 24))
  );

  -- A finished run's parts in the UTC day it starts and the one it ends, leaving out a day it spans
  -- (capacity_usage_daily.spanning_gpus has it). On UTC timestamps, like gpucap_usage_days, so the
  -- session's TimeZone never shifts an hour; the same microsecond arithmetic, so a day's buckets add
  -- up to its gpu_microseconds exactly.
  CREATE FUNCTION gpucap_usage_hours(run_start timestamptz, run_end timestamptz, run_gpus integer)
  RETURNS TABLE (usage_day date, start_hour smallint, end_hour smallint,
                 gpus bigint, gpu_start_offset bigint, gpu_microseconds bigint)
  LANGUAGE sql IMMUTABLE AS $fn$
    SELECT d.day::date,
           CASE WHEN run.s > d.day THEN extract(hour FROM run.s) ELSE -1 END::smallint,
           CASE WHEN run.e < d.day + interval '1 day' THEN extract(hour FROM run.e) ELSE 24 END::smallint,
           run_gpus::bigint,
           run_gpus::bigint * (extract(epoch FROM greatest(run.s, d.day) - d.day) * 1000000)::bigint,
           run_gpus::bigint * (extract(epoch FROM least(run.e, d.day + interval '1 day')
                                                 - greatest(run.s, d.day)) * 1000000)::bigint
    FROM (SELECT run_start AT TIME ZONE 'UTC', run_end AT TIME ZONE 'UTC') AS run (s, e)
    -- The day it starts in, and the day of its last microsecond when that is another day.
    CROSS JOIN LATERAL (VALUES (date_trunc('day', run.s)),
                               (nullif(date_trunc('day', run.e - interval '1 microsecond'), date_trunc('day', run.s))))
      AS d (day)
    WHERE d.day IS NOT NULL AND run.e > run.s AND run_gpus > 0
      AND (run.s > d.day OR run.e < d.day + interval '1 day')
  $fn$;`;

/** Adds signed runs (`source`, columns RUN_COLUMNS) to the buckets they fall in; one statement, no semicolon. */
function hourlyUpsertSql(source: string, measures: HourlyMeasure[]): string {
  const sums = measures.map((m) => `sum(c.sign * ${m.amount})`);
  return `
    INSERT INTO capacity_usage_hourly AS r (${HOURLY_KEY}, ${measures.map((m) => m.column).join(', ')})
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           ${sums.join(', ')}
    FROM (${source}) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_count) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING ${sums.map((sum) => `${sum} <> 0`).join(' OR ')}
    ON CONFLICT (${HOURLY_KEY}) DO UPDATE SET
      ${measures.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')}`;
}

/**
 * Both capacity rollups from one pass over signed runs (`source`): the runs, with their aggregate,
 * are read once into a CTE that upserts the daily rows and then the hourly buckets.
 */
function usageDeltaSql(source: string, daily: CapacityMeasure[], hourly: HourlyMeasure[]): string {
  return `
    WITH runs AS MATERIALIZED (
      SELECT ${RUN_COLUMNS} FROM (${source}) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_count > 0
    ),
    daily AS (${capacityUpsertSql('SELECT * FROM runs', daily)})
    ${hourlyUpsertSql('SELECT * FROM runs', hourly)};`;
}

const CAPACITY_FUNCTION_SQL = functionSql(
  'gpucap_capacity_rollup_trigger',
  `IF TG_OP = 'INSERT' THEN ${usageDeltaSql(withCurrentAggregateSql(signedWorkloadsSql(1, 'new_rows')), CAPACITY_MEASURES, HOURLY_MEASURES)}
      ELSIF TG_OP = 'DELETE' THEN ${usageDeltaSql(withCurrentAggregateSql(signedWorkloadsSql(-1, 'old_rows')), CAPACITY_MEASURES, HOURLY_MEASURES)}
      ELSE ${usageDeltaSql(withCurrentAggregateSql(CHANGED_RUNS_SQL), CAPACITY_MEASURES, HOURLY_MEASURES)}
      END IF;`,
);

/** Migration 15000's aggregate triggers, moving the hourly buckets' idle parts with the daily ones. */
function aggregateFunctionSql(name: string, parts: { sign: 1 | -1; table: string }[]): string {
  const workloads = workloadsOfAggregatesSql(parts);
  return functionSql(
    `gpucap_idle_rollups_${name}`,
    periodDeltaSql(workloads, IDLE_MEASURES) +
      usageDeltaSql(workloads, CAPACITY_IDLE_MEASURES, HOURLY_IDLE_MEASURES),
  );
}

const ZERO_HOURLY_IDLE_SQL = `
    UPDATE capacity_usage_hourly SET ${HOURLY_IDLE_MEASURES.map((m) => `${m.column} = 0`).join(', ')}
      WHERE ${HOURLY_IDLE_MEASURES.map((m) => `${m.column} <> 0`).join(' OR ')};`;

/** TRUNCATE workloads empties both capacity rollups (migration 9000 emptied the daily one). */
function capacityTruncateSql(tables: string[]): string {
  return `
    CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      ${tables.map((table) => `DELETE FROM ${table};`).join('\n      ')}
      RETURN NULL;
    END
    $fn$;`;
}

/** The stored finished runs with their aggregates, as if each had just been inserted. */
const BACKFILL_SQL = hourlyUpsertSql(
  `SELECT 1 AS sign, w.organization_id, w.initiative_id, w.instance_type, w.gpu_count, w.started_at,
          w.completed_at, a.sample_count, a.gpu_utilization_sum
   FROM workloads w
   LEFT JOIN metric_aggregates a ON a.organization_id = w.organization_id AND a.workload_id = w.workload_id
   WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_count > 0`,
  HOURLY_MEASURES,
);

export class CapacityUsageHourly1763800017000 implements MigrationInterface {
  name = 'CapacityUsageHourly1763800017000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers wait while the triggers change and the buckets are backfilled: nothing counted twice or missed.
    await queryRunner.query('LOCK TABLE workloads, metric_aggregates IN SHARE ROW EXCLUSIVE MODE');
    await queryRunner.query(CREATE_SQL);
    await queryRunner.query(CAPACITY_FUNCTION_SQL);
    for (const { event, parts } of AGGREGATE_TRIGGERS) {
      await queryRunner.query(aggregateFunctionSql(event.toLowerCase(), parts));
    }
    await queryRunner.query(
      functionSql('gpucap_idle_rollups_truncate', ZERO_IDLE_SQL + ZERO_HOURLY_IDLE_SQL),
    );
    await queryRunner.query(capacityTruncateSql(['capacity_usage_daily', 'capacity_usage_hourly']));
    await queryRunner.query(`${BACKFILL_SQL};`);
    await queryRunner.query('ANALYZE capacity_usage_hourly');
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('LOCK TABLE workloads, metric_aggregates IN SHARE ROW EXCLUSIVE MODE');
    // Migration 15000's functions (re-creating its period functions unchanged) and 9000's truncate.
    for (const sql of workloadFunctions()) await queryRunner.query(sql);
    for (const { event, parts } of AGGREGATE_TRIGGERS) {
      await queryRunner.query(
        functionSql(`gpucap_idle_rollups_${event.toLowerCase()}`, aggregateDeltaSql(parts)),
      );
    }
    await queryRunner.query(functionSql('gpucap_idle_rollups_truncate', ZERO_IDLE_SQL));
    await queryRunner.query(capacityTruncateSql(['capacity_usage_daily']));
    await queryRunner.query(`
      DROP TABLE capacity_usage_hourly;
      DROP FUNCTION gpucap_usage_hours(timestamptz, timestamptz, integer);
    `);
  }
}
