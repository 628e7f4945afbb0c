import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import { SETTLED_ENERGY_COLUMNS } from '../workload-energy/workload-energy.definitions';

/** Rows of workloads counted, added (+1) or removed (−1): a relation, or a subquery with its alias. */
export interface PeriodSource {
  rows: string;
  sign: 1 | -1;
}

const ADDED: PeriodSource = { rows: 'new_rows', sign: 1 };
const REMOVED: PeriodSource = { rows: 'old_rows', sign: -1 };

/** Each measure: the column it is kept in, and its signed amount over one changed row. */
const MEASURES: [column: string, amount: string][] = [
  ['pending_count', "sum(sign * (status = 'pending')::int)::bigint"],
  ['running_count', "sum(sign * (status = 'running')::int)::bigint"],
  ['completed_count', "sum(sign * (status = 'completed')::int)::bigint"],
  ['failed_count', "sum(sign * (status = 'failed')::int)::bigint"],
  ['cancelled_count', "sum(sign * (status = 'cancelled')::int)::bigint"],
  [
    'finished_count',
    "sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int)::bigint",
  ],
  [
    'duration_seconds_sum',
    'coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint',
  ],
  ['gpu_seconds_sum', 'coalesce(sum(sign * gpu_seconds), 0)::bigint'],
  [
    'sampled_gpu_seconds_sum',
    'coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint',
  ],
  [
    'busy_gpu_seconds_sum',
    'coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric',
  ],
  ['cost_unit_us_sum', 'coalesce(sum(sign * priced_cost_unit_us), 0)'],
  ['priced_whole_unit_us_sum', 'coalesce(sum(sign * priced_whole_unit_us), 0)'],
  [
    'idle_cost_unit_us_sum',
    'coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)',
  ],
  ...SETTLED_ENERGY_COLUMNS.map((column): [string, string] => [
    `${column}_sum`,
    `coalesce(sum(sign * ${column}), 0)`,
  ]),
];

const KEY = 'organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id';

/** The grouping sets: per UTC day and hour, by nothing, submitter and instance type; per day, submitter by management. Every one per cluster. */
const GROUPING_SETS = [
  'day, initiative_id',
  'day, initiative_id, submitted_by',
  'day, initiative_id, instance_type',
  'hour, initiative_id',
  'hour, initiative_id, submitted_by',
  'hour, initiative_id, instance_type',
  'day, initiative_id, is_managed, submitted_by',
].map((set) => `(organization_id, cluster_id, ${set})`);

const RUN_COLUMNS = `organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed,
      cluster_id, status, gpu_share_units, started_at, completed_at, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us,
      ${SETTLED_ENERGY_COLUMNS.join(', ')}`;

/**
 * The upsert of what `sources` change, grouped as the rollup keys them: the finished runs' idle parts
 * from their metric aggregates, as the idle rollups carry them when samples change. Also rebuilds a
 * span from plain workloads rows (the key backfill).
 */
export function periodUpsertSql(sources: PeriodSource[]): string {
  const signed = sources
    .map(
      (source) => `SELECT ${source.sign} AS sign, ${RUN_COLUMNS},
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM ${source.rows}`,
    )
    .join(' UNION ALL ');
  return `INSERT INTO workload_period_rollups AS r (${KEY}, ${MEASURES.map(([column]) => column).join(', ')})
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           cluster_id,
           ${MEASURES.map(([, amount]) => amount).join(',\n           ')}
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (${signed}) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS (${GROUPING_SETS.join(', ')})
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING ${MEASURES.map(([, amount]) => `${amount} <> 0`).join(' OR ')}
    ON CONFLICT (${KEY}) DO UPDATE SET
      ${MEASURES.map(([column]) => `${column} = r.${column} + excluded.${column}`).join(',\n      ')};`;
}

/**
 * Rows left with nothing are dropped, for the buckets that removed rows touched. Every measure, not
 * only the counts: a workload's energy settled inside its own INSERT (a nested UPDATE, before this
 * statement's INSERT trigger adds its count) leaves a row with a change and no count yet.
 */
const DROP_EMPTY_SQL = `DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND ${MEASURES.map(([column]) => `r.${column} = 0`).join(' AND ')};`;

function triggerFunction(name: string, sources: PeriodSource[]): Definition {
  const removes = sources.some((source) => source.sign < 0);
  return defineFunction(`
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
    ${periodUpsertSql(sources)}${removes ? `\n    ${DROP_EMPTY_SQL}` : ''}
      RETURN NULL;
    END
    $$`);
}

/**
 * Workload periods: counts, GPU-seconds, idle parts and money of the workloads submitted in each UTC
 * day and hour, per team, cluster and dimension, kept by statement triggers on workloads.
 */
export const workloadPeriodDefinitions: Definition[] = [
  triggerFunction('gpucap_workload_period_delete', [REMOVED]),
  triggerFunction('gpucap_workload_period_insert', [ADDED]),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_period_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      DELETE FROM workload_period_rollups;
      RETURN NULL;
    END
    $$`),
  triggerFunction('gpucap_workload_period_update', [ADDED, REMOVED]),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_update()',
  ),
];
