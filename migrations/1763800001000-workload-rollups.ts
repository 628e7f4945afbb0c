import { MigrationInterface, QueryRunner } from 'typeorm';

const ROLLUP_KEY =
  'organization_id, bucket_start, initiative_id, submitted_by, instance_type, status, is_managed';
const SOURCE_COLUMNS =
  'organization_id, submitted_at, initiative_id, submitted_by, instance_type, status, is_managed, gpu_count, started_at, completed_at';

/**
 * Aggregates signed workload rows (`source` yields `sign` plus SOURCE_COLUMNS) into rollup deltas and
 * adds them. Keys are applied in a fixed order so concurrent loads lock rollup rows in the same order.
 */
function applyDeltaSql(source: string): string {
  return `
    INSERT INTO workload_daily_rollups AS r (${ROLLUP_KEY}, workload_count, finished_count,
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
    ON CONFLICT (${ROLLUP_KEY})
    DO UPDATE SET workload_count = r.workload_count + excluded.workload_count,
                  finished_count = r.finished_count + excluded.finished_count,
                  duration_seconds_sum = r.duration_seconds_sum + excluded.duration_seconds_sum,
                  gpu_seconds_sum = r.gpu_seconds_sum + excluded.gpu_seconds_sum;`;
}

/** Keys whose rows all went away (deletes, or updates that moved a workload to another key) are removed. */
const DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_daily_rollups r
    USING (SELECT DISTINCT organization_id,
                  date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id AND r.bucket_start = touched.bucket_start
      AND r.workload_count = 0;`;

function triggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/**
 * Per-UTC-day rollup of workloads, so that `total_count` of a list and 30-day statistics never read
 * a million raw rows. Kept exact by statement-level AFTER triggers on the transition tables: a bulk
 * import (INSERT ... ON CONFLICT DO UPDATE) fires the INSERT trigger with the inserted rows and the
 * UPDATE trigger with the old and new versions of the updated ones.
 *
 * Measures hold only what does not change with time: counts for every status, and durations and
 * GPU-seconds of finished workloads (whole seconds, floor, exactly as the detail derives
 * `duration_seconds`). Running workloads (few, partial index) are added at request time.
 * Partial days at the edges of a requested range are read from raw rows through the indexes.
 */
export class WorkloadRollups1763800001000 implements MigrationInterface {
  name = 'WorkloadRollups1763800001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
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
        PRIMARY KEY (${ROLLUP_KEY})
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
      triggerFunctionSql(
        'gpucap_workload_rollup_insert',
        applyDeltaSql(`SELECT 1 AS sign, ${SOURCE_COLUMNS} FROM new_rows`),
      ),
    );
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_workload_rollup_update',
        applyDeltaSql(
          `SELECT 1 AS sign, ${SOURCE_COLUMNS} FROM new_rows UNION ALL SELECT -1, ${SOURCE_COLUMNS} FROM old_rows`,
        ) + DROP_EMPTY_KEYS_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_workload_rollup_delete',
        applyDeltaSql(`SELECT -1 AS sign, ${SOURCE_COLUMNS} FROM old_rows`) + DROP_EMPTY_KEYS_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql('gpucap_workload_rollup_truncate', 'DELETE FROM workload_daily_rollups;'),
    );
    // Writers wait while existing rows are rolled up, so none slips between backfill and triggers.
    await queryRunner.query(`
      LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE;
      ${applyDeltaSql(`SELECT 1 AS sign, ${SOURCE_COLUMNS} FROM workloads`)}
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

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS workloads_rollup_insert ON workloads;
      DROP TRIGGER IF EXISTS workloads_rollup_update ON workloads;
      DROP TRIGGER IF EXISTS workloads_rollup_delete ON workloads;
      DROP TRIGGER IF EXISTS workloads_rollup_truncate ON workloads;
      DROP FUNCTION IF EXISTS gpucap_workload_rollup_insert();
      DROP FUNCTION IF EXISTS gpucap_workload_rollup_update();
      DROP FUNCTION IF EXISTS gpucap_workload_rollup_delete();
      DROP FUNCTION IF EXISTS gpucap_workload_rollup_truncate();
      DROP TABLE IF EXISTS workload_daily_rollups;
      DROP INDEX IF EXISTS workloads_org_initiative_status_submitted;
    `);
  }
}
