import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GPU-seconds of a workload that is not running: gpu_count × whole seconds from started_at to
 * completed_at; 0 when it never started (greatest ignores the null). Immutable, so it is indexed;
 * the ranked queries repeat this exact text (src/metrics/metrics.queries.ts) so the planner matches it.
 * Running workloads have no constant value: they are read live through workloads_org_running.
 */
const SETTLED_GPU_SECONDS_SQL = `(gpu_count * greatest(0, floor(date_part('epoch', completed_at - started_at))))`;

const RANKED_SAMPLE_METRICS = ['gpu_utilization', 'memory_utilization', 'power_usage'] as const;

function triggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/** Adds signed workload rows (`source` yields sign and workloads' columns) to the per-status totals. */
function applyTotalsDeltaSql(source: string): string {
  return `
    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, workload_count, gpu_seconds_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint,
           sum(sign * ${SETTLED_GPU_SECONDS_SQL}::bigint)::bigint
    FROM (${source}) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * ${SETTLED_GPU_SECONDS_SQL}::bigint) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum;`;
}

/** Copies initiative and status of the given workloads into their aggregates where they differ. */
const SYNC_AGGREGATES_SQL = `
    UPDATE metric_aggregates a
    SET initiative_id = n.initiative_id, status = n.status
    FROM new_rows n
    WHERE a.organization_id = n.organization_id AND a.workload_id = n.workload_id
      AND (a.initiative_id IS DISTINCT FROM n.initiative_id OR a.status IS DISTINCT FROM n.status);`;

/** A deleted workload's aggregates drop out of the ranking, exactly as the former join left them out. */
const DETACH_AGGREGATES_SQL = `
    UPDATE metric_aggregates a
    SET initiative_id = NULL, status = NULL
    FROM old_rows o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id;`;

const OLD =
  'SELECT -1 AS sign, organization_id, initiative_id, status, gpu_count, started_at, completed_at FROM old_rows';
const NEW =
  'SELECT 1 AS sign, organization_id, initiative_id, status, gpu_count, started_at, completed_at FROM new_rows';

/**
 * Makes GET /v1/workloads/metrics cost O(limit × branches) instead of O(workloads in scope).
 *
 * - gpu_hours: the page of settled (non-running) workloads comes from an expression index on their
 *   constant GPU-seconds, keyed by status (and initiative), one top-N index range per status (and
 *   initiative); running ones (few) are computed live. total_count and the sum behind scope_average
 *   come from `workload_status_totals` (one row per organization × initiative × status, kept by
 *   statement triggers on workloads) plus the running ones live.
 * - sample metrics: `metric_aggregates` gets the workload's initiative_id and status (a BEFORE INSERT
 *   row trigger fills them for a new aggregate; statement triggers on workloads keep them in step), so
 *   the page is an index range per status (and initiative) over the stored lifetime averages and the
 *   totals an aggregate over metric_aggregates alone, with no join to workloads.
 *
 * Indexes are ascending only: a descending page with ties by workload_id ascending is read as the
 * rows strictly above the limit-th value (backward scan) plus that value's rows by id (forward).
 */
export class RankedMetricsIndexes1763800005000 implements MigrationInterface {
  name = 'RankedMetricsIndexes1763800005000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE workload_status_totals (
        organization_id  text NOT NULL,
        initiative_id    text NOT NULL,
        status           text NOT NULL,
        workload_count   bigint NOT NULL,
        gpu_seconds_sum  bigint NOT NULL,
        PRIMARY KEY (organization_id, initiative_id, status)
      );
      CREATE INDEX workloads_org_status_gpu_seconds
        ON workloads (organization_id, status, ${SETTLED_GPU_SECONDS_SQL}, workload_id COLLATE "C");
      CREATE INDEX workloads_org_initiative_status_gpu_seconds
        ON workloads (organization_id, initiative_id, status, ${SETTLED_GPU_SECONDS_SQL}, workload_id COLLATE "C");
      ALTER TABLE metric_aggregates ADD COLUMN initiative_id text, ADD COLUMN status text;
    `);
    for (const m of RANKED_SAMPLE_METRICS) {
      await queryRunner.query(`
        CREATE INDEX metric_aggregates_org_status_${m}
          ON metric_aggregates (organization_id, status, ${m}_avg, workload_id COLLATE "C")
          WHERE sample_count > 0 AND initiative_id IS NOT NULL;
        CREATE INDEX metric_aggregates_org_initiative_status_${m}
          ON metric_aggregates (organization_id, initiative_id, status, ${m}_avg, workload_id COLLATE "C")
          WHERE sample_count > 0 AND initiative_id IS NOT NULL;
      `);
    }
    await queryRunner.query(`
      CREATE FUNCTION gpucap_metric_aggregates_workload() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        SELECT w.initiative_id, w.status INTO NEW.initiative_id, NEW.status
        FROM workloads w
        WHERE w.organization_id = NEW.organization_id AND w.workload_id = NEW.workload_id;
        RETURN NEW;
      END
      $fn$;`);
    await queryRunner.query(
      triggerFunctionSql('gpucap_workload_ranked_insert', applyTotalsDeltaSql(NEW) + SYNC_AGGREGATES_SQL),
    );
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_workload_ranked_update',
        applyTotalsDeltaSql(`${NEW} UNION ALL ${OLD}`) + SYNC_AGGREGATES_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql('gpucap_workload_ranked_delete', applyTotalsDeltaSql(OLD) + DETACH_AGGREGATES_SQL),
    );
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_workload_ranked_truncate',
        'DELETE FROM workload_status_totals; UPDATE metric_aggregates SET initiative_id = NULL, status = NULL;',
      ),
    );
    // Writers wait during the backfill, so no change slips between it and the triggers.
    await queryRunner.query(`
      LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE;
      LOCK TABLE metric_samples IN SHARE ROW EXCLUSIVE MODE;
      ${applyTotalsDeltaSql('SELECT 1 AS sign, organization_id, initiative_id, status, gpu_count, started_at, completed_at FROM workloads')}
      UPDATE metric_aggregates a SET initiative_id = w.initiative_id, status = w.status
      FROM workloads w WHERE w.organization_id = a.organization_id AND w.workload_id = a.workload_id;
      CREATE TRIGGER metric_aggregates_workload BEFORE INSERT ON metric_aggregates
        FOR EACH ROW EXECUTE FUNCTION gpucap_metric_aggregates_workload();
      CREATE TRIGGER workloads_ranked_insert AFTER INSERT ON workloads
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_insert();
      CREATE TRIGGER workloads_ranked_update AFTER UPDATE ON workloads
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_update();
      CREATE TRIGGER workloads_ranked_delete AFTER DELETE ON workloads
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_delete();
      CREATE TRIGGER workloads_ranked_truncate AFTER TRUNCATE ON workloads
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_truncate();
      ANALYZE workload_status_totals;
      ANALYZE metric_aggregates;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS workloads_ranked_insert ON workloads;
      DROP TRIGGER IF EXISTS workloads_ranked_update ON workloads;
      DROP TRIGGER IF EXISTS workloads_ranked_delete ON workloads;
      DROP TRIGGER IF EXISTS workloads_ranked_truncate ON workloads;
      DROP TRIGGER IF EXISTS metric_aggregates_workload ON metric_aggregates;
      DROP FUNCTION IF EXISTS gpucap_workload_ranked_insert();
      DROP FUNCTION IF EXISTS gpucap_workload_ranked_update();
      DROP FUNCTION IF EXISTS gpucap_workload_ranked_delete();
      DROP FUNCTION IF EXISTS gpucap_workload_ranked_truncate();
      DROP FUNCTION IF EXISTS gpucap_metric_aggregates_workload();
      ${RANKED_SAMPLE_METRICS.map(
        (m) => `DROP INDEX IF EXISTS metric_aggregates_org_status_${m};
      DROP INDEX IF EXISTS metric_aggregates_org_initiative_status_${m};`,
      ).join('\n      ')}
      ALTER TABLE metric_aggregates DROP COLUMN IF EXISTS initiative_id, DROP COLUMN IF EXISTS status;
      DROP INDEX IF EXISTS workloads_org_initiative_status_gpu_seconds;
      DROP INDEX IF EXISTS workloads_org_status_gpu_seconds;
      DROP TABLE IF EXISTS workload_status_totals;
    `);
  }
}
