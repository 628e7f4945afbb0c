import { MigrationInterface, QueryRunner } from 'typeorm';

const RANKED_SAMPLE_METRICS = ['gpu_utilization', 'memory_utilization', 'power_usage'] as const;

const perMetric = (template: (metric: string) => string, separator = ', ') =>
  RANKED_SAMPLE_METRICS.map(template).join(separator);

/** An aggregate counts in the ranking when it has samples and a workload (its initiative and status). */
const RANKED_ROW = 'sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL';

/**
 * Adds signed metric_aggregates rows to the totals. Sums are numeric: a float8 average converts to
 * the same numeric every time, so adding and later subtracting it cancels exactly and the totals
 * never drift however many re-imports move them.
 */
function applyDeltaSql(source: string): string {
  const sums = perMetric((m) => `sum(sign * ${m}_avg::numeric)`);
  return `
    INSERT INTO metric_ranked_totals AS t (organization_id, initiative_id, status, workload_count,
                                           ${perMetric((m) => `${m}_avg_sum`)})
    SELECT organization_id, initiative_id, status, sum(sign)::bigint, ${sums}
    FROM (${source}) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR ${perMetric((m) => `sum(sign * ${m}_avg::numeric) <> 0`, ' OR ')}
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status) DO UPDATE SET
      workload_count = t.workload_count + excluded.workload_count,
      ${perMetric((m) => `${m}_avg_sum = t.${m}_avg_sum + excluded.${m}_avg_sum`, ',\n      ')};`;
}

const COLUMNS = `organization_id, initiative_id, status, ${perMetric((m) => `${m}_avg`)}`;
const NEW = `SELECT 1 AS sign, ${COLUMNS} FROM new_rows WHERE ${RANKED_ROW}`;
const OLD = `SELECT -1 AS sign, ${COLUMNS} FROM old_rows WHERE ${RANKED_ROW}`;

function triggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/**
 * `total_count` and `scope_average` of GET /v1/workloads/metrics for a sample metric, per
 * (organization, initiative, status): the number of ranked workloads and the sum of their lifetime
 * averages. A request sums at most initiatives × statuses rows instead of every aggregate in scope,
 * so its cost no longer grows with the number of workloads (docs/benchmarks.md, scaling table).
 *
 * Kept by statement-level triggers on metric_aggregates, which every change reaches: samples move an
 * aggregate's averages (metric_samples triggers), workloads move its initiative and status
 * (workloads triggers), and a new aggregate gets both from its BEFORE INSERT trigger.
 */
export class RankedMetricTotals1763800006000 implements MigrationInterface {
  name = 'RankedMetricTotals1763800006000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE metric_ranked_totals (
        organization_id  text NOT NULL,
        initiative_id    text NOT NULL,
        status           text NOT NULL,
        workload_count   bigint NOT NULL,
        ${perMetric((m) => `${m}_avg_sum numeric NOT NULL`, ',\n        ')},
        PRIMARY KEY (organization_id, initiative_id, status)
      );
    `);
    await queryRunner.query(triggerFunctionSql('gpucap_metric_ranked_totals_insert', applyDeltaSql(NEW)));
    await queryRunner.query(
      triggerFunctionSql('gpucap_metric_ranked_totals_update', applyDeltaSql(`${NEW} UNION ALL ${OLD}`)),
    );
    await queryRunner.query(triggerFunctionSql('gpucap_metric_ranked_totals_delete', applyDeltaSql(OLD)));
    await queryRunner.query(
      triggerFunctionSql('gpucap_metric_ranked_totals_truncate', 'DELETE FROM metric_ranked_totals;'),
    );
    // Writers wait during the backfill, so no change slips between it and the triggers.
    await queryRunner.query(`
      LOCK TABLE metric_aggregates IN SHARE ROW EXCLUSIVE MODE;
      ${applyDeltaSql(`SELECT 1 AS sign, ${COLUMNS} FROM metric_aggregates WHERE ${RANKED_ROW}`)}
      CREATE TRIGGER metric_aggregates_ranked_totals_insert AFTER INSERT ON metric_aggregates
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_insert();
      CREATE TRIGGER metric_aggregates_ranked_totals_update AFTER UPDATE ON metric_aggregates
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_update();
      CREATE TRIGGER metric_aggregates_ranked_totals_delete AFTER DELETE ON metric_aggregates
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_delete();
      CREATE TRIGGER metric_aggregates_ranked_totals_truncate AFTER TRUNCATE ON metric_aggregates
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_truncate();
      ANALYZE metric_ranked_totals;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS metric_aggregates_ranked_totals_insert ON metric_aggregates;
      DROP TRIGGER IF EXISTS metric_aggregates_ranked_totals_update ON metric_aggregates;
      DROP TRIGGER IF EXISTS metric_aggregates_ranked_totals_delete ON metric_aggregates;
      DROP TRIGGER IF EXISTS metric_aggregates_ranked_totals_truncate ON metric_aggregates;
      DROP FUNCTION IF EXISTS gpucap_metric_ranked_totals_insert();
      DROP FUNCTION IF EXISTS gpucap_metric_ranked_totals_update();
      DROP FUNCTION IF EXISTS gpucap_metric_ranked_totals_delete();
      DROP FUNCTION IF EXISTS gpucap_metric_ranked_totals_truncate();
      DROP TABLE IF EXISTS metric_ranked_totals;
    `);
  }
}
