import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/** The columns of a signed run: what the usage functions and the idle parts need. */
const RUN_COLUMNS =
  'organization_id, workload_id, initiative_id, instance_type, cluster_id, gpu_share_units, started_at, completed_at, energy_microjoules';

/** The runs of `rows` (a relation, or a subquery with its alias), each with `sign`. */
export function signedRunsSql(rows: string, sign: 1 | -1): string {
  return `SELECT ${sign} AS sign, ${RUN_COLUMNS} FROM ${rows}`;
}

/** An update's runs whose usage changed: the old one removed, the new one added. */
const CHANGED_RUNS_SQL = `SELECT c.* FROM old_rows o
    FULL JOIN new_rows n ON n.organization_id = o.organization_id AND n.workload_id = o.workload_id
    CROSS JOIN LATERAL (VALUES
      (-1, o.organization_id, o.workload_id, o.initiative_id, o.instance_type, o.cluster_id, o.gpu_share_units, o.started_at, o.completed_at, o.energy_microjoules),
      (1, n.organization_id, n.workload_id, n.initiative_id, n.instance_type, n.cluster_id, n.gpu_share_units, n.started_at, n.completed_at, n.energy_microjoules)
    ) AS c (sign, ${RUN_COLUMNS})
    WHERE (o.initiative_id, o.instance_type, o.cluster_id, o.gpu_share_units, o.started_at, o.completed_at, o.energy_microjoules)
      IS DISTINCT FROM (n.initiative_id, n.instance_type, n.cluster_id, n.gpu_share_units, n.started_at, n.completed_at, n.energy_microjoules)`;

/** A measure: the column it is kept in, and its signed amount over the usage rows `u` of runs `c`. */
type Measure = [column: string, amount: string];

/**
 * A usage amount `u.<amount>` with its sampled, busy and energy parts (columns `<prefix><name>`): the
 * run's energy spread over its GPU-time (gpucap_energy_share), as its idle parts are.
 */
function withIdleParts(name: string, amount: string, prefix = ''): Measure[] {
  return [
    [`${prefix}${name}`, `sum(c.sign * ${amount})`],
    [`sampled_${name}`, `sum(c.sign * gpucap_sampled_share(${amount}, sample_count))`],
    [`busy_${name}`, `sum(c.sign * gpucap_busy_share(${amount}, gpu_utilization_sum, sample_count))`],
    [
      `energy_${name}`,
      `sum(c.sign * gpucap_energy_share(${amount}, energy_microjoules, gpu_share_units, started_at, completed_at))`,
    ],
  ];
}

const DAILY_MEASURES: Measure[] = [
  ['gpu_microseconds', 'sum(c.sign * d.gpu_microseconds)'],
  ['spanning_gpus', 'sum(c.sign * d.spanning_gpus)'],
  ...withIdleParts('gpu_microseconds', 'd.gpu_microseconds').slice(1),
  ...withIdleParts('spanning_gpus', 'd.spanning_gpus').slice(1),
];

const HOURLY_MEASURES: Measure[] = [
  ...withIdleParts('gpus', 'h.gpus'),
  ...withIdleParts('gpu_start_offset', 'h.gpu_start_offset'),
  ...withIdleParts('gpu_microseconds', 'h.gpu_microseconds'),
];

function upsertSql(
  table: string,
  key: string[],
  keyValues: string[],
  from: string,
  measures: Measure[],
): string {
  return `INSERT INTO ${table} AS r (${[...key, ...measures.map(([column]) => column)].join(', ')})
    SELECT ${[...keyValues, ...measures.map(([, amount]) => amount)].join(', ')}
    FROM ${from}
    GROUP BY ${keyValues.map((_, index) => index + 1).join(', ')}
    HAVING ${measures.map(([, amount]) => `${amount} <> 0`).join(' OR ')}
    ON CONFLICT (${key.join(', ')}) DO UPDATE SET
      ${measures.map(([column]) => `${column} = r.${column} + excluded.${column}`).join(',\n      ')}`;
}

/**
 * The upsert of the usage that `runs` (signed runs of RUN_COLUMNS) change, in both capacity tables,
 * per UTC day, team, instance type and cluster, with the finished runs' idle parts from their metric
 * aggregates; `days`, when given, keeps only the usage days it admits (a condition on `usage_day`).
 */
export function capacityUpsertSql(runs: string, days = 'true'): string {
  const daily = upsertSql(
    'capacity_usage_daily',
    ['organization_id', 'usage_day', 'initiative_id', 'instance_type', 'cluster_id'],
    ['c.organization_id', 'd.usage_day', 'c.initiative_id', 'c.instance_type', 'c.cluster_id'],
    `runs AS c CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE ${days.replaceAll('usage_day', 'd.usage_day')}`,
    DAILY_MEASURES,
  );
  const hourly = upsertSql(
    'capacity_usage_hourly',
    [
      'organization_id',
      'usage_day',
      'start_hour',
      'end_hour',
      'initiative_id',
      'instance_type',
      'cluster_id',
    ],
    [
      'c.organization_id',
      'h.usage_day',
      'h.start_hour',
      'h.end_hour',
      'c.initiative_id',
      'c.instance_type',
      'c.cluster_id',
    ],
    `runs AS c CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    WHERE ${days.replaceAll('usage_day', 'h.usage_day')}`,
    HOURLY_MEASURES,
  );
  return `WITH runs AS MATERIALIZED (
      SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (${runs}) AS runs
      LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      WHERE runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL AND runs.gpu_share_units > 0
    ),
    daily AS (
    ${daily})
    ${hourly};`;
}

/** Capacity usage: GPU-hours per pool and team by day and by hour, kept by statement triggers on workloads. */
export const capacityUsageDefinitions: Definition[] = [
  // The energy of `amount` share-unit-microseconds of a run that drew `energy` µJ over all of its GPU-time.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_energy_share(amount numeric, energy numeric, units bigint, run_from timestamp with time zone, run_to timestamp with time zone) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN energy IS NOT NULL AND run_to > run_from AND units > 0
                THEN energy * amount / (units * extract(epoch FROM run_to - run_from) * 1000000) ELSE 0 END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_trigger() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
    ${capacityUpsertSql(signedRunsSql('new_rows', 1))}
      ELSIF TG_OP = 'DELETE' THEN
    ${capacityUpsertSql(signedRunsSql('old_rows', -1))}
      ELSE
    ${capacityUpsertSql(CHANGED_RUNS_SQL)}
      END IF;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM capacity_usage_daily;
      DELETE FROM capacity_usage_hourly;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_usage_days(run_start timestamp with time zone, run_end timestamp with time zone, gpus integer) RETURNS TABLE(usage_day date, gpu_microseconds bigint, spanning_gpus bigint) LANGUAGE sql IMMUTABLE AS $$
    SELECT day_start::date,
           gpus::bigint * (extract(epoch FROM least(run_end AT TIME ZONE 'UTC', day_start + interval '1 day')
                                           - greatest(run_start AT TIME ZONE 'UTC', day_start)) * 1000000)::bigint,
           CASE WHEN run_start AT TIME ZONE 'UTC' <= day_start
                     AND run_end AT TIME ZONE 'UTC' >= day_start + interval '1 day'
                THEN gpus::bigint ELSE 0 END
    FROM generate_series(date_trunc('day', run_start AT TIME ZONE 'UTC'), run_end AT TIME ZONE 'UTC',
                         interval '1 day') AS days (day_start)
    WHERE run_end AT TIME ZONE 'UTC' > day_start
      AND run_start AT TIME ZONE 'UTC' < day_start + interval '1 day'
      AND gpus > 0
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_usage_hours(run_start timestamp with time zone, run_end timestamp with time zone, run_gpus integer) RETURNS TABLE(usage_day date, start_hour smallint, end_hour smallint, gpus bigint, gpu_start_offset bigint, gpu_microseconds bigint) LANGUAGE sql IMMUTABLE AS $$
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
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
];
