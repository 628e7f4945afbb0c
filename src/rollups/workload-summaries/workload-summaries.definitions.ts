import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/**
 * The right-sizing evidence of a set of samples `s` (docs/api.md, "Could run smaller"): their count,
 * span, the percentiles the rule takes (percentile_cont) and the largest ⌊count / 100⌋ + 1 memory
 * readings, from which the risk of any recommendation is counted. The one text the summaries are
 * settled with and the readers compute raw edges with, so both give the same float8s.
 */
export const SAMPLE_EVIDENCE_SQL = `count(*)::int AS sample_count,
  date_part('epoch', max(s.sampled_at) - min(s.sampled_at))::float8 AS sampled_seconds,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY s.gpu_utilization) AS p95_gpu_utilization,
  percentile_cont(0.99) WITHIN GROUP (ORDER BY s.memory_utilization) AS p99_memory_utilization,
  (array_agg(s.memory_utilization ORDER BY s.memory_utilization DESC))[1:(count(*) / 100 + 1)::int] AS top_memory_utilization`;

const SUMMARY_COLUMNS = [
  'sample_count',
  'sampled_seconds',
  'p95_gpu_utilization',
  'p99_memory_utilization',
  'top_memory_utilization',
];

/**
 * Settles the keys in `keys` (a query of organization_id, workload_id): the summary of a workload
 * that has one from every sample of its run, none for a workload that is running, gone, or started
 * before its organization's retention boundary (prune drops such samples without a trigger, so only
 * runs wholly after the boundary keep a summary equal to their samples).
 */
function settleSql(keys: string): string {
  return `
      DELETE FROM workload_sample_summaries s
      USING (${keys}) k
      WHERE s.organization_id = k.organization_id AND s.workload_id = k.workload_id
        AND NOT EXISTS (
          SELECT 1 FROM workloads w LEFT JOIN sample_retention r ON r.organization_id = w.organization_id
          WHERE w.organization_id = k.organization_id AND w.workload_id = k.workload_id
            AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
            AND (r.samples_before IS NULL OR w.started_at >= r.samples_before));
      INSERT INTO workload_sample_summaries AS a (organization_id, workload_id, ${SUMMARY_COLUMNS.join(', ')})
      SELECT w.organization_id, w.workload_id, e.*
      FROM (SELECT DISTINCT organization_id, workload_id FROM (${keys}) d) k
      JOIN workloads w ON w.organization_id = k.organization_id AND w.workload_id = k.workload_id
      LEFT JOIN sample_retention r ON r.organization_id = w.organization_id
      CROSS JOIN LATERAL (
        SELECT ${SAMPLE_EVIDENCE_SQL}
        FROM gpucap_workload_samples(w.organization_id, w.workload_id, w.started_at, w.completed_at) s
      ) e
      WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
        AND (r.samples_before IS NULL OR w.started_at >= r.samples_before)
      ORDER BY w.organization_id, w.workload_id
      ON CONFLICT (organization_id, workload_id) DO UPDATE SET
        ${SUMMARY_COLUMNS.map((column) => `${column} = excluded.${column}`).join(', ')}
      -- A re-import that changed nothing of the run's samples rewrites no row.
      WHERE (${SUMMARY_COLUMNS.map((column) => `a.${column}`).join(', ')})
            IS DISTINCT FROM (${SUMMARY_COLUMNS.map((column) => `excluded.${column}`).join(', ')});`;
}

/** The finished workloads among `changed` (organization_id, workload_id, first_at, last_at) whose run those times reach. */
function reachedRunsSql(changed: string): string {
  return `SELECT c.organization_id, c.workload_id
      FROM (${changed}) c
      JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
      WHERE w.completed_at IS NOT NULL AND c.first_at <= w.completed_at AND c.last_at >= w.started_at`;
}

const changedRowsSql = (rows: string) =>
  `SELECT organization_id, workload_id, min(sampled_at) AS first_at, max(sampled_at) AS last_at
   FROM ${rows} GROUP BY organization_id, workload_id`;

const changedBlocksSql = (rows: string) =>
  `SELECT organization_id, workload_id, min(day_start) AS first_at, max(day_start) + interval '1 day' AS last_at
   FROM ${rows} GROUP BY organization_id, workload_id`;

/** The statement-level trigger body that settles the keys its transition tables name, one query per operation. */
function triggerFunctionSql(
  name: string,
  keysOf: { insert: string; update: string; delete: string },
): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      -- A seal moves readings between the stores: the run's samples stay the same.
      IF gpucap_sealing() THEN
        RETURN NULL;
      END IF;
      IF TG_OP = 'INSERT' THEN${settleSql(keysOf.insert)}
      ELSIF TG_OP = 'UPDATE' THEN${settleSql(keysOf.update)}
      ELSE${settleSql(keysOf.delete)}
      END IF;
      RETURN NULL;
    END
    $$`;
}

const ALL_SUMMARIES = 'SELECT organization_id, workload_id FROM workload_sample_summaries';

/** Workload sample summaries: what the right-sizing rule reads of a finished workload's samples, settled whenever its run or a sample of it changes. */
export const workloadSummaryDefinitions: Definition[] = [
  defineFunction(
    triggerFunctionSql('gpucap_workload_summaries_workloads', {
      insert: 'SELECT organization_id, workload_id FROM new_rows WHERE completed_at IS NOT NULL',
      // EXCEPT, not a join of the two tables: hashed whatever their sizes, never a nested loop.
      update: `SELECT organization_id, workload_id FROM (
          SELECT organization_id, workload_id, started_at, completed_at FROM new_rows
          EXCEPT SELECT organization_id, workload_id, started_at, completed_at FROM old_rows) AS changed
        UNION ALL
        SELECT organization_id, workload_id FROM (
          SELECT organization_id, workload_id FROM old_rows EXCEPT SELECT organization_id, workload_id FROM new_rows) AS gone`,
      delete: 'SELECT organization_id, workload_id FROM old_rows',
    }),
  ),
  defineFunction(
    triggerFunctionSql('gpucap_workload_summaries_samples', {
      insert: reachedRunsSql(changedRowsSql('new_rows')),
      update: reachedRunsSql(changedRowsSql('(SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows) c')),
      delete: reachedRunsSql(changedRowsSql('old_rows')),
    }),
  ),
  defineFunction(
    triggerFunctionSql('gpucap_workload_summaries_sample_days', {
      insert: reachedRunsSql(changedBlocksSql('new_rows')),
      update: reachedRunsSql(changedBlocksSql('(SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows) c')),
      delete: reachedRunsSql(changedBlocksSql('old_rows')),
    }),
  ),
  // Settles every finished workload of the organizations: the backfill of stored history.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_summaries_settle(organization_ids text[]) RETURNS void LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN${settleSql('SELECT organization_id, workload_id FROM workloads WHERE organization_id = ANY (organization_ids) AND completed_at IS NOT NULL')}
    END
    $$`),
  // No writer truncates a sample store; a test that does gets every summary settled from the other.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_summaries_samples_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN${settleSql(ALL_SUMMARIES)}
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_summaries_workloads_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      TRUNCATE workload_sample_summaries;
      RETURN NULL;
    END
    $$`),
  // Prune records its boundary before it drops the weeks before it: runs that started earlier lose their summary then.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_summaries_retention() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      DELETE FROM workload_sample_summaries s
      USING new_rows r, workloads w
      WHERE s.organization_id = r.organization_id
        AND w.organization_id = s.organization_id AND w.workload_id = s.workload_id
        AND w.started_at < r.samples_before;
      RETURN NULL;
    END
    $$`),
  ...(['insert', 'update', 'delete'] as const).flatMap((operation) => {
    const transition = {
      insert: 'REFERENCING NEW TABLE AS new_rows',
      update: 'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows',
      delete: 'REFERENCING OLD TABLE AS old_rows',
    }[operation];
    return [
      ['workloads', 'gpucap_workload_summaries_workloads'],
      ['metric_samples', 'gpucap_workload_summaries_samples'],
      ['metric_sample_days', 'gpucap_workload_summaries_sample_days'],
    ].map(([table, fn]) =>
      defineTrigger(
        `CREATE OR REPLACE TRIGGER ${table}_summaries_${operation} AFTER ${operation.toUpperCase()} ON ${table} ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      ),
    );
  }),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_summaries_truncate AFTER TRUNCATE ON metric_samples FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_summaries_samples_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_summaries_truncate AFTER TRUNCATE ON metric_sample_days FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_summaries_samples_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_summaries_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_summaries_workloads_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER sample_retention_summaries_insert AFTER INSERT ON sample_retention REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_summaries_retention()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER sample_retention_summaries_update AFTER UPDATE ON sample_retention REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_summaries_retention()',
  ),
];
