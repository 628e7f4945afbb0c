import { MigrationInterface, QueryRunner } from 'typeorm';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;
const KEY = 'organization_id, workload_id';

function perMetric(template: (metric: string) => string, separator = ',\n'): string {
  return METRICS.map(template).join(separator);
}

/**
 * Count, sums (exact numeric, so deltas and recomputations agree to the last digit), extremes and the
 * latest sample of a set of rows, one output row per workload. `signed` carries +1/-1 per row.
 */
function summarySql(source: string): string {
  return `
    WITH grouped AS (
      SELECT ${KEY}, sum(sign)::bigint AS sample_count,
             min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
             max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
             ${perMetric(
               (m) => `sum(sign * ${m}::numeric) AS ${m}_sum,
             min(${m}) FILTER (WHERE sign > 0) AS ${m}_min,
             max(${m}) FILTER (WHERE sign > 0) AS ${m}_max`,
             )}
      FROM (${source}) AS signed
      GROUP BY ${KEY}
    ),
    latest AS (
      SELECT DISTINCT ON (${KEY}) ${KEY}, ${perMetric((m) => `${m} AS ${m}_latest`, ', ')}
      FROM (${source}) AS signed
      WHERE sign > 0
      ORDER BY ${KEY}, sampled_at DESC
    )
    SELECT g.*, ${perMetric((m) => `l.${m}_latest`, ', ')}
    FROM grouped g LEFT JOIN latest l USING (${KEY})`;
}

const AGGREGATE_COLUMNS = `${KEY}, sample_count, first_sampled_at, latest_sampled_at,
  ${perMetric((m) => `${m}_sum, ${m}_min, ${m}_max`, ', ')}, ${perMetric((m) => `${m}_latest`, ', ')}`;

/**
 * Adds a signed set of rows: counts and sums by delta (exact whatever the order in which the INSERT
 * and UPDATE triggers of one statement fire), extremes and latest merged with least/greatest, which
 * is idempotent, so a row already seen by a recomputation is harmless when merged again.
 */
function applyDeltaSql(source: string): string {
  return `
    INSERT INTO metric_aggregates AS a (${AGGREGATE_COLUMNS})
    SELECT ${AGGREGATE_COLUMNS} FROM (${summarySql(source)}) AS summary
    ORDER BY ${KEY}
    ON CONFLICT (${KEY}) DO UPDATE SET
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

/**
 * Workloads that lost a row which was their first, latest, minimum or maximum get those recomputed
 * from the raw samples (one PK range scan each); every other workload keeps its extremes, since
 * removing a non-extreme value cannot move them. Must run before the delta touches the extremes.
 */
const RECOMPUTE_EXTREMES_SQL = `
    WITH touched AS (
      SELECT DISTINCT o.organization_id, o.workload_id
      FROM old_rows o
      JOIN metric_aggregates a USING (${KEY})
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

const DROP_EMPTY_SQL = `
    DELETE FROM metric_aggregates a
    USING (SELECT DISTINCT ${KEY} FROM old_rows) o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;`;

function triggerFunctionSql(name: string, body: string): string {
  return `
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

const COLUMNS_OF_SAMPLE = `organization_id, workload_id, sampled_at, ${perMetric((m) => m, ', ')}`;

/**
 * Per-workload running aggregates of metric samples (count, exact sums, min, max, first/latest sample
 * time and latest values), so the ranked endpoint reads one row per workload and never scans samples.
 *
 * Kept by statement-level AFTER triggers with transition tables on the partitioned parent (PostgreSQL
 * 11+ fires them for rows routed to any partition). An importer's
 * `INSERT ... ON CONFLICT DO UPDATE ... WHERE values differ` fires the UPDATE trigger (old and new
 * versions of changed rows) and then the INSERT trigger (new rows); the UPDATE trigger already sees
 * the statement's inserted rows in the table, so nothing here recomputes counts or sums from raw
 * rows: they move by signed deltas only, and the recomputation of extremes is idempotent.
 *
 * Dropping or detaching a partition (retention) fires no trigger: lifetime aggregates outlive the raw
 * samples on purpose (`gpucap prune`). TRUNCATE of the parent clears them.
 */
export class MetricAggregates1763800002000 implements MigrationInterface {
  name = 'MetricAggregates1763800002000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE metric_aggregates (
        organization_id    text NOT NULL,
        workload_id        text NOT NULL,
        sample_count       bigint NOT NULL,
        first_sampled_at   timestamptz,
        latest_sampled_at  timestamptz,
        ${perMetric(
          (m) => `${m}_sum numeric NOT NULL,
        ${m}_min double precision,
        ${m}_max double precision,
        ${m}_latest double precision,
        ${m}_avg double precision GENERATED ALWAYS AS ((${m}_sum / nullif(sample_count, 0))::double precision) STORED`,
        )},
        PRIMARY KEY (${KEY})
      );
    `);
    const signedNew = `SELECT 1 AS sign, ${COLUMNS_OF_SAMPLE} FROM new_rows`;
    const signedOld = `SELECT -1 AS sign, ${COLUMNS_OF_SAMPLE} FROM old_rows`;
    await queryRunner.query(triggerFunctionSql('gpucap_metric_aggregates_insert', applyDeltaSql(signedNew)));
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_metric_aggregates_update',
        RECOMPUTE_EXTREMES_SQL + applyDeltaSql(`${signedNew} UNION ALL ${signedOld}`) + DROP_EMPTY_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql(
        'gpucap_metric_aggregates_delete',
        RECOMPUTE_EXTREMES_SQL + applyDeltaSql(signedOld) + DROP_EMPTY_SQL,
      ),
    );
    await queryRunner.query(
      triggerFunctionSql('gpucap_metric_aggregates_truncate', 'DELETE FROM metric_aggregates;'),
    );
    // Writers wait while existing samples are aggregated, so none slips between backfill and triggers.
    await queryRunner.query(`
      LOCK TABLE metric_samples IN SHARE ROW EXCLUSIVE MODE;
      ${applyDeltaSql(`SELECT 1 AS sign, ${COLUMNS_OF_SAMPLE} FROM metric_samples`)}
      CREATE TRIGGER metric_samples_aggregates_insert AFTER INSERT ON metric_samples
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_insert();
      CREATE TRIGGER metric_samples_aggregates_update AFTER UPDATE ON metric_samples
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_update();
      CREATE TRIGGER metric_samples_aggregates_delete AFTER DELETE ON metric_samples
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_delete();
      CREATE TRIGGER metric_samples_aggregates_truncate AFTER TRUNCATE ON metric_samples
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_truncate();
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS metric_samples_aggregates_insert ON metric_samples;
      DROP TRIGGER IF EXISTS metric_samples_aggregates_update ON metric_samples;
      DROP TRIGGER IF EXISTS metric_samples_aggregates_delete ON metric_samples;
      DROP TRIGGER IF EXISTS metric_samples_aggregates_truncate ON metric_samples;
      DROP FUNCTION IF EXISTS gpucap_metric_aggregates_insert();
      DROP FUNCTION IF EXISTS gpucap_metric_aggregates_update();
      DROP FUNCTION IF EXISTS gpucap_metric_aggregates_delete();
      DROP FUNCTION IF EXISTS gpucap_metric_aggregates_truncate();
      DROP TABLE IF EXISTS metric_aggregates;
    `);
  }
}
