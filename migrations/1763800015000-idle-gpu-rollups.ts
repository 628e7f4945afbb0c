import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Idle GPU time kept by the rollups: statistics and capacity report idle GPU-hours and GPU
 * efficiency per initiative, group and bucket without reading samples.
 *
 * A finished workload with samples holds `sampled` GPU-seconds (all of its GPU-seconds) and `busy`
 * GPU-seconds = GPU-seconds × its lifetime average utilization / 100, the average read from
 * metric_aggregates (sum / count). Idle = sampled − busy; efficiency = busy / sampled. A workload
 * without samples adds to neither, so both figures cover sampled time only.
 *
 * - workload_period_rollups gains sampled_gpu_seconds_sum (bigint) and busy_gpu_seconds_sum
 *   (numeric); capacity_usage_daily gains the same split of gpu_microseconds and spanning_gpus.
 * - Busy amounts are numeric and computed by one function (gpucap_busy_share) everywhere, so a
 *   delta subtracted later is exactly the amount added before: no drift however often a workload's
 *   samples or its row change.
 * - The workloads triggers read the workload's current aggregate; new triggers on metric_aggregates
 *   move a finished workload's amounts from its old average to its new one. Both run under the
 *   organization's writer lock (migration 9000), so neither reads a state the other is changing.
 *
 * Running workloads are not in these rollups (their GPU-seconds grow with the clock); readers add
 * them at request time with the same function.
 */

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const PERIOD_KEY = 'organization_id, period, dimension, bucket_start, initiative_id, dimension_value';
const CAPACITY_KEY = 'organization_id, usage_day, initiative_id, instance_type';
const WORKLOAD_COLUMNS = [
  'organization_id',
  'workload_id',
  'submitted_at',
  'initiative_id',
  'submitted_by',
  'instance_type',
  'is_managed',
  'status',
  'gpu_count',
  'started_at',
  'completed_at',
];
const DURATION = 'floor(extract(epoch FROM completed_at - started_at))';
const FINISHED = `(status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)`;
const UTC_DAY = `date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
const UTC_HOUR = `date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
const SAMPLED = (amount: string) => `gpucap_sampled_share(${amount}, sample_count)`;
const BUSY = (amount: string) => `gpucap_busy_share(${amount}, gpu_utilization_sum, sample_count)`;

interface Measure {
  column: string;
  sum: string;
  type: 'bigint' | 'numeric';
}

/** Over signed workload rows with their `gpu_seconds` (finished runs' GPU-seconds, else 0). */
const COUNT_MEASURES: Measure[] = [
  ...STATUSES.map((status) => ({
    column: `${status}_count`,
    sum: `sum(sign * (status = '${status}')::int)`,
    type: 'bigint' as const,
  })),
  { column: 'finished_count', sum: `sum(sign * ${FINISHED}::int)`, type: 'bigint' },
  { column: 'duration_seconds_sum', sum: `coalesce(sum(sign * ${DURATION}), 0)`, type: 'bigint' },
  { column: 'gpu_seconds_sum', sum: 'coalesce(sum(sign * gpu_seconds), 0)', type: 'bigint' },
];

/** ...that also carry their aggregate's `sample_count` and `gpu_utilization_sum`. */
const IDLE_MEASURES: Measure[] = [
  {
    column: 'sampled_gpu_seconds_sum',
    sum: `coalesce(sum(sign * ${SAMPLED('gpu_seconds')}), 0)`,
    type: 'bigint',
  },
  { column: 'busy_gpu_seconds_sum', sum: `coalesce(sum(sign * ${BUSY('gpu_seconds')}), 0)`, type: 'numeric' },
];

/** Every dimension per day and per hour; by submitter of managed and of unmanaged workloads per day only. */
const GROUPING_SETS = [
  ...['day', 'hour'].flatMap((bucket) =>
    ['', ', submitted_by', ', instance_type'].map(
      (dimension) => `(organization_id, ${bucket}, initiative_id${dimension})`,
    ),
  ),
  '(organization_id, day, initiative_id, is_managed, submitted_by)',
];

/** Adds the measures of signed workload rows (`source`) to every period row they fall in. */
function periodDeltaSql(source: string, measures: Measure[]): string {
  return `
    INSERT INTO workload_period_rollups AS r (${PERIOD_KEY}, ${measures.map((m) => m.column).join(', ')})
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           ${measures.map((m) => `${m.sum}::${m.type}`).join(',\n           ')}
    FROM (SELECT *, ${UTC_DAY} AS day, ${UTC_HOUR} AS hour FROM (${source}) AS signed) AS changed
    GROUP BY GROUPING SETS (${GROUPING_SETS.join(', ')})
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING ${measures.map((m) => `${m.sum} <> 0`).join(' OR ')}
    ON CONFLICT (${PERIOD_KEY}) DO UPDATE SET
      ${measures.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')};`;
}

const PERIOD_DROP_EMPTY_KEYS_SQL = `
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, ${UTC_HOUR} AS hour_start, ${UTC_DAY} AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND ${STATUSES.map((status) => `r.${status}_count = 0`).join(' AND ')};`;

/** A transition table's workloads with a sign and their GPU-seconds. */
function signedWorkloadsSql(sign: 1 | -1, table: 'new_rows' | 'old_rows'): string {
  return `SELECT ${sign} AS sign, ${WORKLOAD_COLUMNS.join(', ')},
      coalesce(gpu_count::bigint * ${DURATION}, 0) AS gpu_seconds FROM ${table}`;
}

/** Signed rows that have organization_id, workload_id and the run's times, with the workload's aggregate now. */
function withCurrentAggregateSql(rows: string): string {
  return `
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (${rows}) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL`;
}

/**
 * The finished workloads of signed aggregate rows (`parts`: a table per sign), each with its
 * GPU-seconds and that aggregate's count and sum: what the idle parts move between.
 */
function workloadsOfAggregatesSql(parts: { sign: 1 | -1; table: string }[]): string {
  const aggregates = parts
    .map(
      ({ sign, table }) =>
        `SELECT ${sign} AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM ${table}`,
    )
    .join(' UNION ALL ');
  return `
    SELECT c.sign, ${WORKLOAD_COLUMNS.map((column) => `w.${column}`).join(', ')},
           w.gpu_count::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (${aggregates}) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_count > 0`;
}

interface CapacityMeasure {
  column: string;
  amount: string;
  idle: boolean;
}

const CAPACITY_MEASURES: CapacityMeasure[] = [
  { column: 'gpu_microseconds', amount: 'd.gpu_microseconds', idle: false },
  { column: 'spanning_gpus', amount: 'd.spanning_gpus', idle: false },
  { column: 'sampled_gpu_microseconds', amount: SAMPLED('d.gpu_microseconds'), idle: true },
  { column: 'busy_gpu_microseconds', amount: BUSY('d.gpu_microseconds'), idle: true },
  { column: 'sampled_spanning_gpus', amount: SAMPLED('d.spanning_gpus'), idle: true },
  { column: 'busy_spanning_gpus', amount: BUSY('d.spanning_gpus'), idle: true },
];
const CAPACITY_IDLE_MEASURES = CAPACITY_MEASURES.filter((m) => m.idle);

/**
 * Adds signed finished runs (`source`: sign, organization_id, initiative_id, instance_type, gpu_count,
 * started_at, completed_at, and with idle measures sample_count, gpu_utilization_sum) to the days
 * they overlap.
 */
function capacityDeltaSql(source: string, measures: CapacityMeasure[]): string {
  return `${capacityUpsertSql(source, measures)};`;
}

/** capacityDeltaSql as one statement without its semicolon. */
function capacityUpsertSql(source: string, measures: CapacityMeasure[]): string {
  const sums = measures.map((m) => `sum(c.sign * ${m.amount})`);
  return `
    INSERT INTO capacity_usage_daily AS r (${CAPACITY_KEY}, ${measures.map((m) => m.column).join(', ')})
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, ${sums.join(', ')}
    FROM (${source}) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_count) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING ${sums.map((sum) => `${sum} <> 0`).join(' OR ')}
    ON CONFLICT (${CAPACITY_KEY}) DO UPDATE SET
      ${measures.map((m) => `${m.column} = r.${m.column} + excluded.${m.column}`).join(',\n      ')}`;
}

const USAGE_INPUTS = ['initiative_id', 'instance_type', 'gpu_count', 'started_at', 'completed_at'];
const columnsOf = (alias: string) => USAGE_INPUTS.map((column) => `${alias}.${column}`).join(', ');

/** Runs whose usage inputs changed in an UPDATE, old subtracted and new added; unchanged ones not at all. */
const CHANGED_RUNS_SQL = `
    SELECT c.* FROM old_rows o
    FULL JOIN new_rows n ON n.organization_id = o.organization_id AND n.workload_id = o.workload_id
    CROSS JOIN LATERAL (VALUES
      (-1, o.organization_id, o.workload_id, ${columnsOf('o')}),
      (1, n.organization_id, n.workload_id, ${columnsOf('n')})
    ) AS c (sign, organization_id, workload_id, ${USAGE_INPUTS.join(', ')})
    WHERE (${columnsOf('o')}) IS DISTINCT FROM (${columnsOf('n')})`;

function functionSql(name: string, body: string): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/** The workloads triggers' functions, with the idle parts or (for \`down\`) as before this migration. */
function workloadFunctions(withIdle: boolean): string[] {
  const period = (rows: string) =>
    withIdle
      ? periodDeltaSql(withCurrentAggregateSql(rows), [...COUNT_MEASURES, ...IDLE_MEASURES])
      : periodDeltaSql(rows, COUNT_MEASURES);
  const capacity = (runs: string) =>
    withIdle
      ? capacityDeltaSql(withCurrentAggregateSql(runs), CAPACITY_MEASURES)
      : capacityDeltaSql(
          runs,
          CAPACITY_MEASURES.filter((m) => !m.idle),
        );
  const newRows = signedWorkloadsSql(1, 'new_rows');
  const oldRows = signedWorkloadsSql(-1, 'old_rows');
  return [
    functionSql('gpucap_workload_period_insert', period(newRows)),
    functionSql(
      'gpucap_workload_period_update',
      period(`${newRows} UNION ALL ${oldRows}`) + PERIOD_DROP_EMPTY_KEYS_SQL,
    ),
    functionSql('gpucap_workload_period_delete', period(oldRows) + PERIOD_DROP_EMPTY_KEYS_SQL),
    functionSql(
      'gpucap_capacity_rollup_trigger',
      `IF TG_OP = 'INSERT' THEN ${capacity(newRows)}
      ELSIF TG_OP = 'DELETE' THEN ${capacity(oldRows)}
      ELSE ${capacity(CHANGED_RUNS_SQL)}
      END IF;`,
    ),
  ];
}

/** Moves finished workloads' idle parts from their old aggregate to their new one. */
function aggregateDeltaSql(parts: { sign: 1 | -1; table: string }[]): string {
  const workloads = workloadsOfAggregatesSql(parts);
  return periodDeltaSql(workloads, IDLE_MEASURES) + capacityDeltaSql(workloads, CAPACITY_IDLE_MEASURES);
}

const ZERO_IDLE_SQL = `
    UPDATE workload_period_rollups SET ${IDLE_MEASURES.map((m) => `${m.column} = 0`).join(', ')}
      WHERE ${IDLE_MEASURES.map((m) => `${m.column} <> 0`).join(' OR ')};
    UPDATE capacity_usage_daily SET ${CAPACITY_IDLE_MEASURES.map((m) => `${m.column} = 0`).join(', ')}
      WHERE ${CAPACITY_IDLE_MEASURES.map((m) => `${m.column} <> 0`).join(' OR ')};`;

const NEW_AGGREGATES = { sign: 1, table: 'new_rows' } as const;
const OLD_AGGREGATES = { sign: -1, table: 'old_rows' } as const;
const AGGREGATE_TRIGGERS = [
  { event: 'INSERT', parts: [NEW_AGGREGATES], referencing: 'NEW TABLE AS new_rows' },
  {
    event: 'UPDATE',
    parts: [NEW_AGGREGATES, OLD_AGGREGATES],
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
  },
  { event: 'DELETE', parts: [OLD_AGGREGATES], referencing: 'OLD TABLE AS old_rows' },
];

export class IdleGpuRollups1763800015000 implements MigrationInterface {
  name = 'IdleGpuRollups1763800015000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers wait while the columns are backfilled, so none slips between backfill and triggers.
    await queryRunner.query('LOCK TABLE workloads, metric_aggregates IN SHARE ROW EXCLUSIVE MODE');
    await queryRunner.query(`
      CREATE FUNCTION gpucap_sampled_share(amount numeric, sample_count bigint) RETURNS numeric
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT CASE WHEN sample_count > 0 THEN amount ELSE 0 END
      $fn$;
      -- One rounding for every caller: (amount × utilization sum) / (count × 100), numeric.
      CREATE FUNCTION gpucap_busy_share(amount numeric, utilization_sum numeric, sample_count bigint) RETURNS numeric
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT CASE WHEN sample_count > 0 THEN amount * utilization_sum / (sample_count * 100) ELSE 0 END
      $fn$;

      ALTER TABLE workload_period_rollups
        ${COUNT_MEASURES.map((m) => `ALTER COLUMN ${m.column} SET DEFAULT 0`).join(', ')},
        ADD COLUMN sampled_gpu_seconds_sum bigint NOT NULL DEFAULT 0,
        ADD COLUMN busy_gpu_seconds_sum numeric NOT NULL DEFAULT 0;
      ALTER TABLE capacity_usage_daily
        ALTER COLUMN gpu_microseconds SET DEFAULT 0, ALTER COLUMN spanning_gpus SET DEFAULT 0,
        ADD COLUMN sampled_gpu_microseconds bigint NOT NULL DEFAULT 0,
        ADD COLUMN busy_gpu_microseconds numeric NOT NULL DEFAULT 0,
        ADD COLUMN sampled_spanning_gpus bigint NOT NULL DEFAULT 0,
        ADD COLUMN busy_spanning_gpus numeric NOT NULL DEFAULT 0;
    `);
    for (const sql of workloadFunctions(true)) await queryRunner.query(sql);
    for (const { event, parts, referencing } of AGGREGATE_TRIGGERS) {
      const name = event.toLowerCase();
      await queryRunner.query(functionSql(`gpucap_idle_rollups_${name}`, aggregateDeltaSql(parts)));
      await queryRunner.query(`
        CREATE TRIGGER metric_aggregates_idle_rollups_${name} AFTER ${event} ON metric_aggregates
          REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_${name}();`);
    }
    await queryRunner.query(functionSql('gpucap_idle_rollups_truncate', ZERO_IDLE_SQL));
    await queryRunner.query(`
      CREATE TRIGGER metric_aggregates_idle_rollups_truncate AFTER TRUNCATE ON metric_aggregates
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_truncate();`);
    // The stored aggregates, as if each had just been inserted.
    await queryRunner.query(aggregateDeltaSql([{ sign: 1, table: 'metric_aggregates' }]));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('LOCK TABLE workloads, metric_aggregates IN SHARE ROW EXCLUSIVE MODE');
    for (const event of [...AGGREGATE_TRIGGERS.map((t) => t.event.toLowerCase()), 'truncate']) {
      await queryRunner.query(`
        DROP TRIGGER metric_aggregates_idle_rollups_${event} ON metric_aggregates;
        DROP FUNCTION gpucap_idle_rollups_${event}();`);
    }
    for (const sql of workloadFunctions(false)) await queryRunner.query(sql);
    await queryRunner.query(`
      ALTER TABLE workload_period_rollups DROP COLUMN sampled_gpu_seconds_sum, DROP COLUMN busy_gpu_seconds_sum;
      ALTER TABLE capacity_usage_daily DROP COLUMN sampled_gpu_microseconds, DROP COLUMN busy_gpu_microseconds,
        DROP COLUMN sampled_spanning_gpus, DROP COLUMN busy_spanning_gpus;
      DROP FUNCTION gpucap_busy_share(numeric, numeric, bigint);
      DROP FUNCTION gpucap_sampled_share(numeric, bigint);
    `);
  }
}
