import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * GET /v1/workloads/metrics?sort_by=idle_gpu_hours as top-N index ranges plus small totals, like the
 * other sort keys, instead of joining every sampled workload in scope to its aggregate.
 *
 * - metric_aggregates gains `settled_gpu_seconds`: the workload's GPU-seconds copied from its row
 *   (gpu_count × whole seconds from started_at to completed_at, 0 without a start), null while it
 *   runs and when it has no workload. It is kept where initiative_id and status already are: the
 *   aggregate's BEFORE INSERT trigger and the workloads ranked triggers (migration 5000) set all three
 *   from the same row, so a change to a workload's status, times, gpu_count or initiative moves them.
 * - Idle GPU-hours are one SQL function, `gpucap_idle_gpu_hours(gpu_seconds, utilization average)`,
 *   the former request-time arithmetic in the same order of float8 operations. The expression indexes
 *   below, the ranked query (settled and running workloads alike) and the totals triggers all call it,
 *   so the value an index orders by is bit for bit the value answered and summed. It is inlined
 *   (plain SQL, immutable), which is how the planner matches the query's call to the indexes.
 *   Replacing it means rebuilding those indexes and the totals.
 * - The aggregate's value moves by itself when new samples move its average (an expression index
 *   recomputes on every row version), and when the workload row changes (the copy above).
 * - metric_ranked_totals gains `idle_gpu_hours_sum` (numeric: a float8 converts to the same numeric
 *   every time, so a value added and later subtracted cancels exactly) over settled ranked aggregates,
 *   kept by its existing statement triggers on metric_aggregates.
 * - Running workloads (null copy: not in the indexes, not in the sum) are computed at request time
 *   up to `now`, few by the partial index on running workloads.
 *
 * All of it is written inside the writers' transactions under the organization's writer lock
 * (migration 9000): the copy never reads a workload half-way through another writer's change.
 */

const RANKED_SAMPLE_METRICS = ['gpu_utilization', 'memory_utilization', 'power_usage'] as const;
const perMetric = (template: (metric: string) => string, separator = ', ') =>
  RANKED_SAMPLE_METRICS.map(template).join(separator);

/** Settled GPU-seconds of workload row `w`, null while it runs (its figure grows with the clock). */
function settledGpuSecondsSql(w: string): string {
  return `CASE WHEN ${w}.status <> 'running'
    THEN (${w}.gpu_count * greatest(0, floor(date_part('epoch', ${w}.completed_at - ${w}.started_at))))::bigint END`;
}

const IDLE_OF_AGGREGATE = 'gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)';

function functionSql(name: string, body: string, jitOff: boolean): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql ${jitOff ? 'SET jit = off' : ''} AS $fn$
    BEGIN
      ${body}
      RETURN NULL;
    END
    $fn$;`;
}

/* ---- metric_ranked_totals (as in migration 6000, with the idle sum when `withIdle`) ---- */

const RANKED_ROW = 'sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL';

function totalsDeltaSql(source: string, withIdle: boolean): string {
  const sums = [
    ...RANKED_SAMPLE_METRICS.map((m) => ({ column: `${m}_avg_sum`, sum: `sum(sign * ${m}_avg::numeric)` })),
    ...(withIdle
      ? [{ column: 'idle_gpu_hours_sum', sum: `coalesce(sum(sign * ${IDLE_OF_AGGREGATE}::numeric), 0)` }]
      : []),
  ];
  return `
    INSERT INTO metric_ranked_totals AS t (organization_id, initiative_id, status, workload_count,
                                           ${sums.map((s) => s.column).join(', ')})
    SELECT organization_id, initiative_id, status, sum(sign)::bigint, ${sums.map((s) => s.sum).join(', ')}
    FROM (${source}) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR ${sums.map((s) => `${s.sum} <> 0`).join(' OR ')}
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status) DO UPDATE SET
      workload_count = t.workload_count + excluded.workload_count,
      ${sums.map((s) => `${s.column} = t.${s.column} + excluded.${s.column}`).join(',\n      ')};`;
}

function totalsFunctions(withIdle: boolean): string[] {
  const columns = `organization_id, initiative_id, status, ${perMetric((m) => `${m}_avg`)}${
    withIdle ? ', settled_gpu_seconds' : ''
  }`;
  const newRows = `SELECT 1 AS sign, ${columns} FROM new_rows WHERE ${RANKED_ROW}`;
  const oldRows = `SELECT -1 AS sign, ${columns} FROM old_rows WHERE ${RANKED_ROW}`;
  return [
    functionSql('gpucap_metric_ranked_totals_insert', totalsDeltaSql(newRows, withIdle), true),
    functionSql(
      'gpucap_metric_ranked_totals_update',
      totalsDeltaSql(`${newRows} UNION ALL ${oldRows}`, withIdle),
      true,
    ),
    functionSql('gpucap_metric_ranked_totals_delete', totalsDeltaSql(oldRows, withIdle), true),
  ];
}

/* ---- the workloads ranked triggers (as in migration 5000, with the copied GPU-seconds when `withIdle`) ---- */

const SETTLED_GPU_SECONDS_SQL = `(gpu_count * greatest(0, floor(date_part('epoch', completed_at - started_at))))`;

function statusTotalsDeltaSql(source: string): string {
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

/** Copies initiative, status (and settled GPU-seconds) of the changed workloads where they differ. */
function syncAggregatesSql(withIdle: boolean): string {
  if (!withIdle) {
    return `
    UPDATE metric_aggregates a
    SET initiative_id = n.initiative_id, status = n.status
    FROM new_rows n
    WHERE a.organization_id = n.organization_id AND a.workload_id = n.workload_id
      AND (a.initiative_id IS DISTINCT FROM n.initiative_id OR a.status IS DISTINCT FROM n.status);`;
  }
  return `
    UPDATE metric_aggregates a
    SET initiative_id = n.initiative_id, status = n.status, settled_gpu_seconds = n.settled_gpu_seconds
    FROM (SELECT organization_id, workload_id, initiative_id, status, ${settledGpuSecondsSql('new_rows')} AS settled_gpu_seconds
          FROM new_rows) n
    WHERE a.organization_id = n.organization_id AND a.workload_id = n.workload_id
      AND (a.initiative_id IS DISTINCT FROM n.initiative_id OR a.status IS DISTINCT FROM n.status
           OR a.settled_gpu_seconds IS DISTINCT FROM n.settled_gpu_seconds);`;
}

function detachAggregatesSql(withIdle: boolean): string {
  return `
    UPDATE metric_aggregates a
    SET initiative_id = NULL, status = NULL${withIdle ? ', settled_gpu_seconds = NULL' : ''}
    FROM old_rows o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id;`;
}

function workloadFunctions(withIdle: boolean): string[] {
  const columns = 'organization_id, initiative_id, status, gpu_count, started_at, completed_at';
  const newRows = `SELECT 1 AS sign, ${columns} FROM new_rows`;
  const oldRows = `SELECT -1 AS sign, ${columns} FROM old_rows`;
  const settledColumn = withIdle ? ', settled_gpu_seconds = NULL' : '';
  return [
    functionSql(
      'gpucap_workload_ranked_insert',
      statusTotalsDeltaSql(newRows) + syncAggregatesSql(withIdle),
      false,
    ),
    functionSql(
      'gpucap_workload_ranked_update',
      statusTotalsDeltaSql(`${newRows} UNION ALL ${oldRows}`) + syncAggregatesSql(withIdle),
      false,
    ),
    functionSql(
      'gpucap_workload_ranked_delete',
      statusTotalsDeltaSql(oldRows) + detachAggregatesSql(withIdle),
      false,
    ),
    functionSql(
      'gpucap_workload_ranked_truncate',
      `DELETE FROM workload_status_totals; UPDATE metric_aggregates SET initiative_id = NULL, status = NULL${settledColumn};`,
      false,
    ),
    `
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_workload() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      SELECT w.initiative_id, w.status${withIdle ? `, ${settledGpuSecondsSql('w')}` : ''}
      INTO NEW.initiative_id, NEW.status${withIdle ? ', NEW.settled_gpu_seconds' : ''}
      FROM workloads w
      WHERE w.organization_id = NEW.organization_id AND w.workload_id = NEW.workload_id;
      RETURN NEW;
    END
    $fn$;`,
  ];
}

/** Settled ranked aggregates only: running ones (null copy) are computed per request. */
const INDEXED_ROW = 'sample_count > 0 AND initiative_id IS NOT NULL AND settled_gpu_seconds IS NOT NULL';

export class RankedIdleGpuHours1763800018000 implements MigrationInterface {
  name = 'RankedIdleGpuHours1763800018000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers wait while the copy and the sums are backfilled, so none slips between them and the triggers.
    await queryRunner.query(
      'LOCK TABLE workloads, metric_samples, metric_aggregates, metric_ranked_totals IN SHARE ROW EXCLUSIVE MODE',
    );
    await queryRunner.query(`
      -- Idle GPU-hours of gpu_seconds at a lifetime average utilization (percent), in float8.
      CREATE FUNCTION gpucap_idle_gpu_hours(gpu_seconds double precision, gpu_utilization_avg double precision)
      RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT (gpu_seconds / 3600) * (1 - gpu_utilization_avg / 100)
      $fn$;
      ALTER TABLE metric_aggregates ADD COLUMN settled_gpu_seconds bigint;
      ALTER TABLE metric_ranked_totals ADD COLUMN idle_gpu_hours_sum numeric NOT NULL DEFAULT 0;
    `);
    for (const sql of [...workloadFunctions(true), ...totalsFunctions(true)]) await queryRunner.query(sql);
    // One pass over the aggregates. The statement triggers on their updates would only move sums this
    // backfill sets directly below (and net the idle rollups of migration 15000 to zero): off for it.
    await queryRunner.query(`
      ALTER TABLE metric_aggregates DISABLE TRIGGER metric_aggregates_ranked_totals_update,
        DISABLE TRIGGER metric_aggregates_idle_rollups_update;
      UPDATE metric_aggregates a SET settled_gpu_seconds = ${settledGpuSecondsSql('w')}
      FROM workloads w
      WHERE w.organization_id = a.organization_id AND w.workload_id = a.workload_id AND w.status <> 'running';
      ALTER TABLE metric_aggregates ENABLE TRIGGER metric_aggregates_ranked_totals_update,
        ENABLE TRIGGER metric_aggregates_idle_rollups_update;
      -- Every group with a ranked aggregate has its totals row already (migration 6000's triggers).
      UPDATE metric_ranked_totals t SET idle_gpu_hours_sum = s.idle_gpu_hours_sum
      FROM (
        SELECT organization_id, initiative_id, status, sum(${IDLE_OF_AGGREGATE}::numeric) AS idle_gpu_hours_sum
        FROM metric_aggregates
        WHERE ${INDEXED_ROW} AND status IS NOT NULL
        GROUP BY 1, 2, 3
      ) s
      WHERE t.organization_id = s.organization_id AND t.initiative_id = s.initiative_id AND t.status = s.status;
      CREATE INDEX metric_aggregates_org_status_idle_gpu_hours
        ON metric_aggregates (organization_id, status, (${IDLE_OF_AGGREGATE}), workload_id COLLATE "C")
        WHERE ${INDEXED_ROW};
      CREATE INDEX metric_aggregates_org_initiative_status_idle_gpu_hours
        ON metric_aggregates (organization_id, initiative_id, status, (${IDLE_OF_AGGREGATE}), workload_id COLLATE "C")
        WHERE ${INDEXED_ROW};
      ANALYZE metric_aggregates;
      ANALYZE metric_ranked_totals;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'LOCK TABLE workloads, metric_samples, metric_aggregates, metric_ranked_totals IN SHARE ROW EXCLUSIVE MODE',
    );
    for (const sql of [...workloadFunctions(false), ...totalsFunctions(false)]) await queryRunner.query(sql);
    await queryRunner.query(`
      DROP INDEX metric_aggregates_org_status_idle_gpu_hours;
      DROP INDEX metric_aggregates_org_initiative_status_idle_gpu_hours;
      ALTER TABLE metric_ranked_totals DROP COLUMN idle_gpu_hours_sum;
      ALTER TABLE metric_aggregates DROP COLUMN settled_gpu_seconds;
      DROP FUNCTION gpucap_idle_gpu_hours(double precision, double precision);
    `);
  }
}
