import { MigrationInterface, QueryRunner } from 'typeorm';

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const KEY = 'organization_id, period, dimension, bucket_start, initiative_id, dimension_value';
const SOURCE_COLUMNS =
  'organization_id, submitted_at, initiative_id, submitted_by, instance_type, status, gpu_count, started_at, completed_at';
const DURATION = 'floor(extract(epoch FROM completed_at - started_at))';
const FINISHED = `(status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)`;

/** Measures of a signed set of workloads, summed per rollup key. */
const MEASURES = [
  ...STATUSES.map((status) => ({
    column: `${status}_count`,
    sum: `sum(sign * (status = '${status}')::int)`,
  })),
  { column: 'finished_count', sum: `sum(sign * ${FINISHED}::int)` },
  { column: 'duration_seconds_sum', sum: `coalesce(sum(sign * ${DURATION}), 0)` },
  { column: 'gpu_seconds_sum', sum: `coalesce(sum(sign * gpu_count::bigint * ${DURATION}), 0)` },
];

/**
 * Adds signed workload rows (`source` yields sign plus SOURCE_COLUMNS) to both periods and all three
 * dimensions. Keys are written in a fixed order so concurrent loads lock rollup rows alike.
 */
function applyDeltaSql(source: string): string {
  return `
    INSERT INTO workload_period_rollups AS r (${KEY}, ${MEASURES.map((m) => m.column).join(', ')})
    SELECT organization_id, p.period, d.dimension,
           date_trunc(p.period, submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
           initiative_id, d.dimension_value,
           ${MEASURES.map((m) => `${m.sum}::bigint`).join(',\n           ')}
    FROM (${source}) AS changed
    CROSS JOIN (VALUES ('day'), ('hour')) AS p (period)
    CROSS JOIN LATERAL (VALUES ('none', ''), ('submitted_by', submitted_by), ('instance_type', instance_type))
      AS d (dimension, dimension_value)
    GROUP BY 1, 2, 3, 4, 5, 6
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING ${MEASURES.map((m) => `${m.sum} <> 0`).join(' OR ')}
    ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (${KEY}) DO UPDATE SET
      ${MEASURES.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')};`;
}

const DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id,
                  date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start,
                  date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND ${STATUSES.map((status) => `r.${status}_count = 0`).join(' AND ')};`;

function triggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

const NEW = `SELECT 1 AS sign, ${SOURCE_COLUMNS} FROM new_rows`;
const OLD = `SELECT -1 AS sign, ${SOURCE_COLUMNS} FROM old_rows`;

/**
 * Workload counts per status and finished runs' durations and GPU-seconds, per UTC day and per UTC
 * hour, by initiative and by one of: nothing, submitter, instance type. It answers
 * GET /v1/workloads/stats and the `total_count` of lists filtered at most by initiative, status and
 * dates, reading a few rows per day whatever the organization's volume:
 *
 * - whole days from the 'day' rows (initiatives × groups rows a day, not one per key combination as
 *   in workload_daily_rollups, which keeps serving the other list filters);
 * - whole hours of the edge days from the 'hour' rows;
 * - only the partial hours at the edges from raw rows.
 *
 * Kept exact by statement-level triggers on the transition tables, like the other rollups; running
 * workloads' GPU-seconds grow with the clock and are added at request time.
 */
export class WorkloadPeriodRollups1763800007000 implements MigrationInterface {
  name = 'WorkloadPeriodRollups1763800007000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE workload_period_rollups (
        organization_id       text NOT NULL,
        period                text NOT NULL CHECK (period IN ('day', 'hour')),
        dimension             text NOT NULL CHECK (dimension IN ('none', 'submitted_by', 'instance_type')),
        bucket_start          timestamptz NOT NULL,
        initiative_id         text NOT NULL,
        dimension_value       text NOT NULL,
        ${MEASURES.map((m) => `${m.column} bigint NOT NULL`).join(',\n        ')},
        PRIMARY KEY (${KEY})
      );
    `);
    await queryRunner.query(triggerFunctionSql('gpucap_workload_period_insert', applyDeltaSql(NEW)));
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_workload_period_update',
        applyDeltaSql(`${NEW} UNION ALL ${OLD}`) + DROP_EMPTY_KEYS_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql('gpucap_workload_period_delete', applyDeltaSql(OLD) + DROP_EMPTY_KEYS_SQL),
    );
    await queryRunner.query(
      triggerFunctionSql('gpucap_workload_period_truncate', 'DELETE FROM workload_period_rollups;'),
    );
    // Writers wait while existing rows are rolled up, so none slips between backfill and triggers.
    await queryRunner.query(`
      LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE;
      ${applyDeltaSql(`SELECT 1 AS sign, ${SOURCE_COLUMNS} FROM workloads`)}
      CREATE TRIGGER workloads_period_insert AFTER INSERT ON workloads
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_insert();
      CREATE TRIGGER workloads_period_update AFTER UPDATE ON workloads
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_update();
      CREATE TRIGGER workloads_period_delete AFTER DELETE ON workloads
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_delete();
      CREATE TRIGGER workloads_period_truncate AFTER TRUNCATE ON workloads
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_truncate();
      ANALYZE workload_period_rollups;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS workloads_period_insert ON workloads;
      DROP TRIGGER IF EXISTS workloads_period_update ON workloads;
      DROP TRIGGER IF EXISTS workloads_period_delete ON workloads;
      DROP TRIGGER IF EXISTS workloads_period_truncate ON workloads;
      DROP FUNCTION IF EXISTS gpucap_workload_period_insert();
      DROP FUNCTION IF EXISTS gpucap_workload_period_update();
      DROP FUNCTION IF EXISTS gpucap_workload_period_delete();
      DROP FUNCTION IF EXISTS gpucap_workload_period_truncate();
      DROP TABLE IF EXISTS workload_period_rollups;
    `);
  }
}
