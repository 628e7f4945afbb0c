import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Same answers, less work per imported row (numbers in docs/benchmarks.md, "Import write path"):
 *
 * - workload_daily_rollups goes: it served only list counts filtered by submitter or is_managed.
 *   workload_period_rollups answers those now: submitter from its 'submitted_by' rows, is_managed
 *   (with or without a submitter) from new day-only dimensions 'managed_submitted_by' and
 *   'unmanaged_submitted_by' (value: the submitter), about a fifth of the daily rollup's rows (no
 *   status or instance type in the key; statuses are columns).
 * - The period delta is one GROUPING SETS pass over the changed rows instead of a CROSS JOIN that
 *   repeated every row per period and dimension, and has no ORDER BY: it sorted about one rollup
 *   row per workload by six text columns only to order row locks between concurrent loads, and since
 *   migration 9000 an organization's writers run one after another and every rollup key starts with
 *   the organization, so two writers never meet on a rollup row.
 * - metric_aggregates: a workload's latest sample is found by joining the changed rows to their
 *   group's latest time (hash join) instead of sorting every changed row for DISTINCT ON; no ORDER BY
 *   before its upsert, for the same reason.
 *
 * `down` restores the former functions (generated here with `legacy`) and rebuilds
 * workload_daily_rollups with migration 1000's statements (copied below).
 */

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const PERIOD_KEY = 'organization_id, period, dimension, bucket_start, initiative_id, dimension_value';
const WORKLOAD_COLUMNS =
  'organization_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_count, started_at, completed_at';
const DURATION = 'floor(extract(epoch FROM completed_at - started_at))';
const FINISHED = `(status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)`;
const PERIOD_MEASURES = [
  ...STATUSES.map((status) => ({
    column: `${status}_count`,
    sum: `sum(sign * (status = '${status}')::int)`,
  })),
  { column: 'finished_count', sum: `sum(sign * ${FINISHED}::int)` },
  { column: 'duration_seconds_sum', sum: `coalesce(sum(sign * ${DURATION}), 0)` },
  { column: 'gpu_seconds_sum', sum: `coalesce(sum(sign * gpu_count::bigint * ${DURATION}), 0)` },
];
const UTC_DAY = `date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
const UTC_HOUR = `date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;

/** Every dimension per day and per hour; by submitter of managed and of unmanaged workloads per day only. */
const CURRENT_SETS = [
  ...['day', 'hour'].flatMap((bucket) =>
    ['', ', submitted_by', ', instance_type'].map(
      (dimension) => `(organization_id, ${bucket}, initiative_id${dimension})`,
    ),
  ),
  '(organization_id, day, initiative_id, is_managed, submitted_by)',
];

function periodGroupingSetsSql(source: string): string {
  return `
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           ${PERIOD_MEASURES.map((m) => `${m.sum}::bigint`).join(',\n           ')}
    FROM (SELECT *, ${UTC_DAY} AS day, ${UTC_HOUR} AS hour FROM (${source}) AS signed) AS changed
    GROUP BY GROUPING SETS (${CURRENT_SETS.join(', ')})`;
}

function periodCrossJoinSql(source: string): string {
  return `
    SELECT organization_id, p.period, d.dimension,
           date_trunc(p.period, submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           initiative_id, d.dimension_value,
           ${PERIOD_MEASURES.map((m) => `${m.sum}::bigint`).join(',\n           ')}
    FROM (${source}) AS changed
    CROSS JOIN (VALUES ('day'), ('hour')) AS p (period)
    CROSS JOIN LATERAL (VALUES ('none', ''), ('submitted_by', submitted_by), ('instance_type', instance_type))
      AS d (dimension, dimension_value)
    GROUP BY 1, 2, 3, 4, 5, 6`;
}

function periodDeltaSql(source: string, legacy: boolean): string {
  return `
    INSERT INTO workload_period_rollups AS r (${PERIOD_KEY}, ${PERIOD_MEASURES.map((m) => m.column).join(', ')})
    ${legacy ? periodCrossJoinSql(source) : periodGroupingSetsSql(source)}
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING ${PERIOD_MEASURES.map((m) => `${m.sum} <> 0`).join(' OR ')}
    ${legacy ? 'ORDER BY 1, 2, 3, 4, 5, 6' : ''}
    ON CONFLICT (${PERIOD_KEY}) DO UPDATE SET
      ${PERIOD_MEASURES.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')};`;
}

const PERIOD_DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, ${UTC_HOUR} AS hour_start, ${UTC_DAY} AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND ${STATUSES.map((status) => `r.${status}_count = 0`).join(' AND ')};`;

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;
const SAMPLE_KEY = 'organization_id, workload_id';
const SAMPLE_COLUMNS = `organization_id, workload_id, sampled_at, ${METRICS.join(', ')}`;

function perMetric(template: (metric: string) => string, separator = ',\n'): string {
  return METRICS.map(template).join(separator);
}

/** The changed samples' latest values per workload: one row per workload with a positive row. */
function latestSql(source: string, legacy: boolean): string {
  if (legacy) {
    return `
      SELECT DISTINCT ON (${SAMPLE_KEY}) ${SAMPLE_KEY}, ${perMetric((m) => `${m} AS ${m}_latest`, ', ')}
      FROM (${source}) AS signed
      WHERE sign > 0
      ORDER BY ${SAMPLE_KEY}, sampled_at DESC`;
  }
  // Positive rows are one statement's new rows, unique per (workload, time): one match per workload.
  return `
      SELECT s.organization_id, s.workload_id, ${perMetric((m) => `s.${m} AS ${m}_latest`, ', ')}
      FROM (${source}) AS s
      JOIN grouped g ON g.organization_id = s.organization_id AND g.workload_id = s.workload_id
                    AND g.latest_sampled_at = s.sampled_at
      WHERE s.sign > 0`;
}

function sampleSummarySql(source: string, legacy: boolean): string {
  return `
    WITH grouped AS (
      SELECT ${SAMPLE_KEY}, sum(sign)::bigint AS sample_count,
             min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
             max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
             ${perMetric(
               (m) => `sum(sign * ${m}::numeric) AS ${m}_sum,
             min(${m}) FILTER (WHERE sign > 0) AS ${m}_min,
             max(${m}) FILTER (WHERE sign > 0) AS ${m}_max`,
             )}
      FROM (${source}) AS signed
      GROUP BY ${SAMPLE_KEY}
    ),
    latest AS (${latestSql(source, legacy)}
    )
    SELECT g.*, ${perMetric((m) => `l.${m}_latest`, ', ')}
    FROM grouped g LEFT JOIN latest l USING (${SAMPLE_KEY})`;
}

const AGGREGATE_COLUMNS = `${SAMPLE_KEY}, sample_count, first_sampled_at, latest_sampled_at,
  ${perMetric((m) => `${m}_sum, ${m}_min, ${m}_max`, ', ')}, ${perMetric((m) => `${m}_latest`, ', ')}`;

function sampleDeltaSql(source: string, legacy: boolean): string {
  return `
    INSERT INTO metric_aggregates AS a (${AGGREGATE_COLUMNS})
    SELECT ${AGGREGATE_COLUMNS} FROM (${sampleSummarySql(source, legacy)}) AS summary
    ${legacy ? `ORDER BY ${SAMPLE_KEY}` : ''}
    ON CONFLICT (${SAMPLE_KEY}) DO UPDATE SET
      sample_count = a.sample_count + excluded.sample_count,
      first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
      latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
      ${perMetric(
        (m) => `${m}_sum = a.${m}_sum + excluded.${m}_sum,
      ${m}_min = least(a.${m}_min, excluded.${m}_min),
      ${m}_max = greatest(a.${m}_max, excluded.${m}_max),
      ${m}_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                         THEN coalesce(excluded.${m}_latest, a.${m}_latest) ELSE a.${m}_latest END`,
      )};`;
}

/** Unchanged from migration 2000: recomputes extremes a deleted or replaced sample may have held. */
const RECOMPUTE_EXTREMES_SQL = `
    WITH touched AS (
      SELECT DISTINCT o.organization_id, o.workload_id
      FROM old_rows o
      JOIN metric_aggregates a USING (${SAMPLE_KEY})
      WHERE o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
         OR ${perMetric((m) => `o.${m} IN (a.${m}_min, a.${m}_max)`, '\n         OR ')}
    )
    UPDATE metric_aggregates a
    SET first_sampled_at = r.first_sampled_at,
        latest_sampled_at = r.latest_sampled_at,
        ${perMetric((m) => `${m}_min = r.${m}_min, ${m}_max = r.${m}_max, ${m}_latest = l.${m}`)}
    FROM touched t
    CROSS JOIN LATERAL (
      SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
             ${perMetric((m) => `min(s.${m}) AS ${m}_min, max(s.${m}) AS ${m}_max`)}
      FROM metric_samples s
      WHERE s.organization_id = t.organization_id AND s.workload_id = t.workload_id
    ) r
    LEFT JOIN LATERAL (
      SELECT ${perMetric((m) => `s.${m}`, ', ')}
      FROM metric_samples s
      WHERE s.organization_id = t.organization_id AND s.workload_id = t.workload_id
      ORDER BY s.sampled_at DESC
      LIMIT 1
    ) l ON true
    WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;`;

const SAMPLE_DROP_EMPTY_SQL = `
    DELETE FROM metric_aggregates a
    USING (SELECT DISTINCT ${SAMPLE_KEY} FROM old_rows) o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;`;

/** `jit = off` as on the other rollup functions: compiling costs more than these statements save. */
function functionSql(name: string, body: string, legacy: boolean): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql ${legacy ? '' : 'SET jit = off'} AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

function triggerFunctions(legacy: boolean): string[] {
  const newWorkloads = `SELECT 1 AS sign, ${WORKLOAD_COLUMNS} FROM new_rows`;
  const oldWorkloads = `SELECT -1 AS sign, ${WORKLOAD_COLUMNS} FROM old_rows`;
  const newSamples = `SELECT 1 AS sign, ${SAMPLE_COLUMNS} FROM new_rows`;
  const oldSamples = `SELECT -1 AS sign, ${SAMPLE_COLUMNS} FROM old_rows`;
  const period = (name: string, body: string) => functionSql(name, body, false);
  return [
    period('gpucap_workload_period_insert', periodDeltaSql(newWorkloads, legacy)),
    period(
      'gpucap_workload_period_update',
      periodDeltaSql(`${newWorkloads} UNION ALL ${oldWorkloads}`, legacy) + PERIOD_DROP_EMPTY_KEYS_SQL,
    ),
    period(
      'gpucap_workload_period_delete',
      periodDeltaSql(oldWorkloads, legacy) + PERIOD_DROP_EMPTY_KEYS_SQL,
    ),
    functionSql('gpucap_metric_aggregates_insert', sampleDeltaSql(newSamples, legacy), legacy),
    functionSql(
      'gpucap_metric_aggregates_update',
      RECOMPUTE_EXTREMES_SQL +
        sampleDeltaSql(`${newSamples} UNION ALL ${oldSamples}`, legacy) +
        SAMPLE_DROP_EMPTY_SQL,
      legacy,
    ),
    functionSql(
      'gpucap_metric_aggregates_delete',
      RECOMPUTE_EXTREMES_SQL + sampleDeltaSql(oldSamples, legacy) + SAMPLE_DROP_EMPTY_SQL,
      legacy,
    ),
  ];
}

/** The new day-only rows for the workloads already stored. */
const MANAGED_BACKFILL_SQL = `
    INSERT INTO workload_period_rollups (${PERIOD_KEY}, ${PERIOD_MEASURES.map((m) => m.column).join(', ')})
    SELECT organization_id, 'day',
           CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END,
           ${UTC_DAY}, initiative_id, submitted_by,
           ${PERIOD_MEASURES.map((m) => `${m.sum}::bigint`).join(',\n           ')}
    FROM (SELECT 1 AS sign, ${WORKLOAD_COLUMNS} FROM workloads) AS stored
    GROUP BY organization_id, ${UTC_DAY}, initiative_id, is_managed, submitted_by`;

const DIMENSIONS = ['none', 'submitted_by', 'instance_type'];
const MANAGED_DIMENSIONS = ['managed_submitted_by', 'unmanaged_submitted_by'];

function dimensionCheckSql(dimensions: string[]): string {
  return `
    ALTER TABLE workload_period_rollups DROP CONSTRAINT workload_period_rollups_dimension_check,
      ADD CONSTRAINT workload_period_rollups_dimension_check
        CHECK (dimension IN (${dimensions.map((d) => `'${d}'`).join(', ')}));`;
}

/*
 * For `down`: workload_daily_rollups with its list index and triggers, rebuilt by the statements of
 * migration 1000's `up`, copied here rather than run from that class so that this migration keeps
 * executing what it did when it was deployed.
 */

const DAILY_ROLLUP_KEY =
  'organization_id, bucket_start, initiative_id, submitted_by, instance_type, status, is_managed';
const DAILY_SOURCE_COLUMNS =
  'organization_id, submitted_at, initiative_id, submitted_by, instance_type, status, is_managed, gpu_count, started_at, completed_at';

/**
 * Aggregates signed workload rows (`source` yields `sign` plus DAILY_SOURCE_COLUMNS) into rollup
 * deltas and adds them. Keys are applied in a fixed order so concurrent loads lock rollup rows in the
 * same order.
 */
function dailyDeltaSql(source: string): string {
  return `
    INSERT INTO workload_daily_rollups AS r (${DAILY_ROLLUP_KEY}, workload_count, finished_count,
                                             duration_seconds_sum, gpu_seconds_sum)
    SELECT organization_id,
           date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           initiative_id, submitted_by, instance_type, status, is_managed,
           sum(sign)::bigint,
           sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int)::bigint,
           coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
           coalesce(sum(sign * gpu_count::bigint * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint
    FROM (${source}) AS changed
    GROUP BY 1, 2, 3, 4, 5, 6, 7
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign) <> 0
        OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0
        OR coalesce(sum(sign * gpu_count::bigint * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0
        OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7
    ON CONFLICT (${DAILY_ROLLUP_KEY})
    DO UPDATE SET workload_count = r.workload_count + excluded.workload_count,
                  finished_count = r.finished_count + excluded.finished_count,
                  duration_seconds_sum = r.duration_seconds_sum + excluded.duration_seconds_sum,
                  gpu_seconds_sum = r.gpu_seconds_sum + excluded.gpu_seconds_sum;`;
}

/** Keys whose rows all went away (deletes, or updates that moved a workload to another key) are removed. */
const DAILY_DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_daily_rollups r
    USING (SELECT DISTINCT organization_id,
                  date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id AND r.bucket_start = touched.bucket_start
      AND r.workload_count = 0;`;

function dailyTriggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/** Migration 1000's `up`. */
async function restoreDailyRollups(queryRunner: QueryRunner): Promise<void> {
  await queryRunner.query(`
      CREATE TABLE workload_daily_rollups (
        organization_id       text NOT NULL,
        bucket_start          timestamptz NOT NULL,
        initiative_id         text NOT NULL,
        submitted_by          text NOT NULL,
        instance_type         text NOT NULL,
        status                text NOT NULL,
        is_managed            boolean NOT NULL,
        workload_count        bigint NOT NULL,
        finished_count        bigint NOT NULL,
        duration_seconds_sum  bigint NOT NULL,
        gpu_seconds_sum       bigint NOT NULL,
        PRIMARY KEY (${DAILY_ROLLUP_KEY})
      );
      -- Team-scoped callers page per initiative; with a status filter too, this keeps each page an index
      -- range instead of scanning an initiative (or the organization's status) until enough rows match.
      CREATE INDEX workloads_org_initiative_status_submitted
        ON workloads (organization_id, initiative_id, status, submitted_at DESC, workload_id DESC);
      -- A list filtered by submitter counts only that person's buckets.
      CREATE INDEX workload_daily_rollups_submitter
        ON workload_daily_rollups (organization_id, submitted_by, bucket_start);
    `);
  await queryRunner.query(
    dailyTriggerFunctionSql(
      'gpucap_workload_rollup_insert',
      dailyDeltaSql(`SELECT 1 AS sign, ${DAILY_SOURCE_COLUMNS} FROM new_rows`),
    ),
  );
  await queryRunner.query(
    dailyTriggerFunctionSql(
      'gpucap_workload_rollup_update',
      dailyDeltaSql(
        `SELECT 1 AS sign, ${DAILY_SOURCE_COLUMNS} FROM new_rows UNION ALL SELECT -1, ${DAILY_SOURCE_COLUMNS} FROM old_rows`,
      ) + DAILY_DROP_EMPTY_KEYS_SQL,
    ),
  );
  await queryRunner.query(
    dailyTriggerFunctionSql(
      'gpucap_workload_rollup_delete',
      dailyDeltaSql(`SELECT -1 AS sign, ${DAILY_SOURCE_COLUMNS} FROM old_rows`) + DAILY_DROP_EMPTY_KEYS_SQL,
    ),
  );
  await queryRunner.query(
    dailyTriggerFunctionSql('gpucap_workload_rollup_truncate', 'DELETE FROM workload_daily_rollups;'),
  );
  // Writers wait while existing rows are rolled up, so none slips between backfill and triggers.
  await queryRunner.query(`
      LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE;
      ${dailyDeltaSql(`SELECT 1 AS sign, ${DAILY_SOURCE_COLUMNS} FROM workloads`)}
      CREATE TRIGGER workloads_rollup_insert AFTER INSERT ON workloads
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_rollup_insert();
      CREATE TRIGGER workloads_rollup_update AFTER UPDATE ON workloads
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_rollup_update();
      CREATE TRIGGER workloads_rollup_delete AFTER DELETE ON workloads
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_rollup_delete();
      CREATE TRIGGER workloads_rollup_truncate AFTER TRUNCATE ON workloads
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_rollup_truncate();
    `);
}

export class ImportWritePath1763800010000 implements MigrationInterface {
  name = 'ImportWritePath1763800010000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers wait while the new rows are backfilled, so none slips between backfill and triggers.
    await queryRunner.query('LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE');
    await queryRunner.query(dimensionCheckSql([...DIMENSIONS, ...MANAGED_DIMENSIONS]));
    await queryRunner.query(MANAGED_BACKFILL_SQL);
    for (const sql of triggerFunctions(false)) await queryRunner.query(sql);
    await queryRunner.query(`
      DROP TRIGGER workloads_rollup_insert ON workloads;
      DROP TRIGGER workloads_rollup_update ON workloads;
      DROP TRIGGER workloads_rollup_delete ON workloads;
      DROP TRIGGER workloads_rollup_truncate ON workloads;
      DROP FUNCTION gpucap_workload_rollup_insert();
      DROP FUNCTION gpucap_workload_rollup_update();
      DROP FUNCTION gpucap_workload_rollup_delete();
      DROP FUNCTION gpucap_workload_rollup_truncate();
      DROP TABLE workload_daily_rollups;
      ANALYZE workload_period_rollups;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE');
    for (const sql of triggerFunctions(true)) await queryRunner.query(sql);
    await queryRunner.query(
      `DELETE FROM workload_period_rollups WHERE dimension IN (${MANAGED_DIMENSIONS.map((d) => `'${d}'`).join(', ')})`,
    );
    await queryRunner.query(dimensionCheckSql(DIMENSIONS));
    // Migration 1000 creates this list index along with the rollup; it is rebuilt with it.
    await queryRunner.query('DROP INDEX workloads_org_initiative_status_submitted');
    await restoreDailyRollups(queryRunner);
  }
}
