import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  AGGREGATE_TRIGGERS,
  aggregateDeltaSql,
  BUSY,
  CAPACITY_IDLE_MEASURES,
  CAPACITY_MEASURES,
  type CapacityMeasure,
  capacityUpsertSql,
  CHANGED_RUNS_SQL,
  functionSql,
  IDLE_MEASURES,
  periodDeltaSql,
  SAMPLED,
  signedWorkloadsSql,
  withCurrentAggregateSql,
  workloadFunctions,
  workloadsOfAggregatesSql,
  ZERO_IDLE_SQL,
} from './1763800015000-idle-gpu-rollups';

/*
 * Capacity's edge days without a day of raw rows (gpucap issue 13, item 3): an hourly usage rollup,
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
    for (const sql of workloadFunctions(true)) await queryRunner.query(sql);
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
