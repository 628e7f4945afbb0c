import { LOCK_ORGANIZATIONS_SQL } from '../../src/import/writer-lock';
import type { DataSource } from 'typeorm';
import { SAMPLE_EVIDENCE_SQL } from '../../src/rollups/workload-summaries/workload-summaries.definitions';
import { ALL_SAMPLES_SQL } from './samples';

/** Every table kept by triggers from workloads and metric samples, with an organization column. */
const ROLLUP_TABLES = [
  'workload_period_rollups',
  'workload_period_waits',
  'workload_status_totals',
  'metric_aggregates',
  'metric_ranked_totals',
  'metric_sample_hours',
  'capacity_usage_daily',
  'capacity_usage_hourly',
  'workload_sample_summaries',
];

async function measureColumns(dataSource: DataSource, table: string): Promise<string[]> {
  const rows: { column_name: string }[] = await dataSource.query(
    `SELECT c.column_name FROM information_schema.columns c
     WHERE c.table_schema = current_schema() AND c.table_name = $1
       AND c.data_type IN ('bigint', 'integer', 'numeric') AND c.is_generated = 'NEVER'
       -- Key columns (capacity_usage_hourly's hours) name a bucket; they are not amounts.
       AND NOT EXISTS (
         SELECT 1 FROM information_schema.key_column_usage k
         JOIN information_schema.table_constraints t USING (constraint_schema, constraint_name)
         WHERE t.constraint_type = 'PRIMARY KEY' AND k.table_schema = c.table_schema
           AND k.table_name = c.table_name AND k.column_name = c.column_name)`,
    [table],
  );
  return rows.map((row) => row.column_name);
}

/**
 * What the rollups of one organization still hold once every raw row they were built from is
 * deleted through the same triggers, in a transaction that is rolled back: an exact rollup nets to
 * zero; a lost or doubled delta (a race between writers) leaves a residue, listed per table.
 * Aggregates and hour summaries of `keptWorkloads` (whose pruned samples are counted on purpose) are left out.
 */
export async function rollupResidue(
  dataSource: DataSource,
  organizationId: string,
  keptWorkloads: string[] = [],
): Promise<Record<string, unknown[]>> {
  const residue: Record<string, unknown[]> = {};
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  try {
    await runner.query(LOCK_ORGANIZATIONS_SQL, [[organizationId]]);
    for (const store of ['metric_samples', 'metric_sample_days']) {
      await runner.query(
        `DELETE FROM ${store} WHERE organization_id = $1 AND NOT (workload_id = ANY ($2::text[]))`,
        [organizationId, keptWorkloads],
      );
    }
    await runner.query('DELETE FROM workloads WHERE organization_id = $1', [organizationId]);
    for (const table of ROLLUP_TABLES) {
      if (!(await runner.query('SELECT to_regclass($1) AS t', [table]))[0].t) continue;
      const measures = await measureColumns(dataSource, table);
      // The kept workloads' readings (and so their hour summaries) were not deleted.
      const exempt =
        table === 'metric_aggregates' || table === 'metric_sample_hours'
          ? 'AND NOT (workload_id = ANY ($2::text[]))'
          : 'AND $2::text[] IS NOT NULL';
      const rows = await runner.query(
        `SELECT * FROM ${table} WHERE organization_id = $1 ${exempt}
           AND (${measures.map((column) => `coalesce(${column}, 0) <> 0`).join(' OR ')})`,
        [organizationId, keptWorkloads],
      );
      if (rows.length > 0) residue[table] = rows;
    }
  } finally {
    await runner.rollbackTransaction();
    await runner.release();
  }
  return residue;
}

/**
 * Stored per-workload aggregates that differ from the same figures recomputed from raw samples; the
 * settled GPU-seconds are in share units (1/5040 GPU), as every rollup amount. Energy is each
 * reading's power held until the next reading (lead), at most the organization's sample gap, in µJ;
 * carbon weighs each part by pue × g/kWh of the period of the workload's cluster covering the
 * reading's time, found by a range lookup rather than the triggers' arrays.
 */
export async function aggregateDifferences(
  dataSource: DataSource,
  organizationId: string,
  exceptWorkloads: string[] = [],
): Promise<unknown[]> {
  return dataSource.query(
    `WITH raw AS (
       SELECT s.workload_id, count(*) AS sample_count,
              sum(gpu_utilization::numeric) AS gpu_sum, min(gpu_utilization) AS gpu_min, max(gpu_utilization) AS gpu_max,
              sum(power_usage::numeric) AS power_sum, min(power_usage) AS power_min, max(power_usage) AS power_max,
              min(sampled_at) AS first_at, max(sampled_at) AS latest_at,
              (array_agg(gpu_utilization ORDER BY sampled_at DESC))[1] AS gpu_latest
       FROM ${ALL_SAMPLES_SQL} s WHERE s.organization_id = $1 GROUP BY s.workload_id
     ),
     held AS (
       SELECT h.workload_id, h.power_usage::numeric * least(h.gap, o.max_sample_gap_seconds * 1000000) AS microjoules,
              (SELECT c.pue * c.grams_co2e_per_kwh FROM carbon_intensities c
               WHERE c.organization_id = $1 AND c.cluster_id = w.cluster_id AND c.effective_from <= h.sampled_at
                 AND (c.effective_to IS NULL OR h.sampled_at < c.effective_to)) AS intensity
       FROM (SELECT s.workload_id, s.sampled_at, s.power_usage,
                    extract(epoch FROM lead(s.sampled_at) OVER (PARTITION BY s.workload_id ORDER BY s.sampled_at) - s.sampled_at)
                      * 1000000 AS gap
             FROM ${ALL_SAMPLES_SQL} s WHERE s.organization_id = $1) h
       JOIN organizations o ON o.organization_id = $1
       LEFT JOIN workloads w ON w.organization_id = $1 AND w.workload_id = h.workload_id
       WHERE h.gap IS NOT NULL
     ),
     energy AS (
       SELECT workload_id, sum(microjoules) AS energy, coalesce(sum(microjoules * intensity), 0) AS carbon,
              coalesce(sum(microjoules) FILTER (WHERE intensity IS NULL), 0) AS uncovered
       FROM held GROUP BY workload_id
     ),
     expected AS (
       SELECT r.*, w.initiative_id, w.status,
              CASE WHEN w.status <> 'running'
                   THEN w.gpu_share_units * greatest(0, floor(extract(epoch FROM w.completed_at - w.started_at)))::bigint
              END AS settled_gpu_seconds,
              coalesce(e.energy, 0) AS energy, coalesce(e.carbon, 0) AS carbon, coalesce(e.uncovered, 0) AS uncovered
       FROM raw r
       LEFT JOIN workloads w ON w.organization_id = $1 AND w.workload_id = r.workload_id
       LEFT JOIN energy e ON e.workload_id = r.workload_id
     ),
     stored AS (
       SELECT workload_id, sample_count, gpu_utilization_sum AS gpu_sum, gpu_utilization_min AS gpu_min,
              gpu_utilization_max AS gpu_max, power_usage_sum AS power_sum, power_usage_min AS power_min,
              power_usage_max AS power_max, first_sampled_at AS first_at, latest_sampled_at AS latest_at,
              gpu_utilization_latest AS gpu_latest, initiative_id, status, settled_gpu_seconds,
              energy_microjoules AS energy, carbon_microjoule_grams_per_kwh AS carbon, uncovered_microjoules AS uncovered
       FROM metric_aggregates WHERE organization_id = $1
     )
     SELECT coalesce(e.workload_id, s.workload_id) AS workload_id, to_jsonb(e) AS expected, to_jsonb(s) AS stored
     FROM expected e FULL JOIN stored s USING (workload_id)
     WHERE NOT (coalesce(e.workload_id, s.workload_id) = ANY ($2::text[]))
       AND (e.workload_id IS NULL OR s.workload_id IS NULL
            OR (e.sample_count, e.gpu_sum, e.gpu_min, e.gpu_max, e.power_sum, e.power_min, e.power_max, e.first_at,
                e.latest_at, e.gpu_latest, e.initiative_id, e.status, e.settled_gpu_seconds, e.energy, e.carbon,
                e.uncovered)
               IS DISTINCT FROM
               (s.sample_count, s.gpu_sum, s.gpu_min, s.gpu_max, s.power_sum, s.power_min, s.power_max, s.first_at,
                s.latest_at, s.gpu_latest, s.initiative_id, s.status, s.settled_gpu_seconds, s.energy, s.carbon,
                s.uncovered))`,
    [organizationId, exceptWorkloads],
  );
}

const HOURLY_AMOUNTS = ['gpus', 'gpu_start_offset', 'gpu_microseconds'];
const HOURLY_COLUMNS = HOURLY_AMOUNTS.flatMap((amount) => [
  amount,
  `sampled_${amount}`,
  `busy_${amount}`,
  `energy_${amount}`,
]);

/** The rows of the CTEs `expected` and `stored` found in only one, each with the side it is in. */
const EXPECTED_AGAINST_STORED_SQL = `(SELECT 'expected' AS side, * FROM (SELECT * FROM expected EXCEPT SELECT * FROM stored) missing)
     UNION ALL
     (SELECT 'stored', * FROM (SELECT * FROM stored EXCEPT SELECT * FROM expected) extra)`;

/** Sums of `amount` of runs (with their aggregate's count and utilization sum, and their energy) and of its parts. */
function usageShares(amount: string): string[] {
  return [
    `sum(${amount})`,
    `sum(gpucap_sampled_share(${amount}, sample_count))`,
    `sum(gpucap_busy_share(${amount}, gpu_utilization_sum, sample_count))`,
    `sum(gpucap_energy_share(${amount}, energy_microjoules, gpus, started_at, completed_at))`,
  ];
}

/** Each finished run of organization $1 with what its usage parts need. */
const FINISHED_RUNS_SQL = `
       SELECT w.initiative_id, w.instance_type, w.cluster_id, w.gpu_share_units::bigint AS gpus, a.sample_count, a.gpu_utilization_sum,
              w.energy_microjoules, w.started_at, w.completed_at,
              w.started_at AT TIME ZONE 'UTC' AS s, w.completed_at AT TIME ZONE 'UTC' AS e
       FROM workloads w
       LEFT JOIN metric_aggregates a ON a.organization_id = w.organization_id AND a.workload_id = w.workload_id
       WHERE w.organization_id = $1 AND w.gpu_share_units > 0 AND w.completed_at > w.started_at`;

const DAILY_AMOUNTS = ['gpu_microseconds', 'spanning_gpus'];
const DAILY_COLUMNS = [
  ...DAILY_AMOUNTS,
  ...['sampled_', 'busy_', 'energy_'].flatMap((part) => DAILY_AMOUNTS.map((amount) => `${part}${amount}`)),
];

/**
 * capacity_usage_daily rows of one organization that differ from a recomputation from its workloads
 * (each with its current metric aggregate and settled energy): every UTC day of every finished run,
 * walked one by one, with its GPU-time, spanning GPUs and their sampled, busy and energy parts.
 */
export async function dailyUsageDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  const sums = DAILY_AMOUNTS.map(usageShares);
  const amounts = sums.map(([whole]) => whole);
  const parts = [1, 2, 3].flatMap((part) => sums.map((shares) => shares[part]));
  return dataSource.query(
    `WITH runs AS (${FINISHED_RUNS_SQL}),
     days AS (
       SELECT r.*, d::date AS usage_day,
              (r.gpus * extract(epoch FROM least(r.e, d + interval '1 day') - greatest(r.s, d)) * 1e6)::bigint AS gpu_microseconds,
              CASE WHEN r.s <= d AND r.e >= d + interval '1 day' THEN r.gpus ELSE 0 END AS spanning_gpus
       FROM runs r
       CROSS JOIN generate_series(date_trunc('day', r.s), r.e, interval '1 day') AS d
       WHERE d < r.e
     ),
     expected AS (
       SELECT usage_day, initiative_id, instance_type, cluster_id, ${[...amounts, ...parts].join(', ')}
       FROM days GROUP BY 1, 2, 3, 4
       HAVING ${amounts.map((amount) => `${amount} <> 0`).join(' OR ')}
     ),
     stored AS (
       SELECT usage_day, initiative_id, instance_type, cluster_id, ${DAILY_COLUMNS.join(', ')}
       FROM capacity_usage_daily
       WHERE organization_id = $1 AND (${DAILY_COLUMNS.map((column) => `${column} <> 0`).join(' OR ')})
     )
     ${EXPECTED_AGAINST_STORED_SQL}`,
    [organizationId],
  );
}

/**
 * capacity_usage_hourly rows of one organization that differ from a recomputation from its
 * workloads (each with its current metric aggregate, which aggregateDifferences checks against the
 * samples): every UTC day a finished run overlaps without spanning it, found by walking all its days
 * (the rollup's function looks only at the first and last), hours by epoch arithmetic. GPUs are the
 * workload's share in units of 1/5040 GPU (gpu_share_units), as the rollup counts them.
 */
export async function hourlyUsageDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  return dataSource.query(
    `WITH runs AS (${FINISHED_RUNS_SQL}),
     parts AS (
       SELECT r.*, d::date AS usage_day,
              CASE WHEN r.s > d THEN floor(extract(epoch FROM r.s - d) / 3600) ELSE -1 END AS start_hour,
              CASE WHEN r.e < d + interval '1 day' THEN floor(extract(epoch FROM r.e - d) / 3600) ELSE 24 END AS end_hour,
              -- Integers, as the rollup passes them to gpucap_busy_share (its rounding depends on the scale).
              (r.gpus * extract(epoch FROM greatest(r.s, d) - d) * 1e6)::bigint AS gpu_start_offset,
              (r.gpus * extract(epoch FROM least(r.e, d + interval '1 day') - greatest(r.s, d)) * 1e6)::bigint
                AS gpu_microseconds
       FROM runs r
       CROSS JOIN generate_series(date_trunc('day', r.s), r.e, interval '1 day') AS d
       WHERE d < r.e AND NOT (r.s <= d AND r.e >= d + interval '1 day')
     ),
     expected AS (
       SELECT usage_day, start_hour::int, end_hour::int, initiative_id, instance_type, cluster_id,
              ${HOURLY_AMOUNTS.flatMap(usageShares).join(', ')}
       FROM parts GROUP BY 1, 2, 3, 4, 5, 6
     ),
     stored AS (
       SELECT usage_day, start_hour::int, end_hour::int, initiative_id, instance_type, cluster_id, ${HOURLY_COLUMNS.join(', ')}
       FROM capacity_usage_hourly
       WHERE organization_id = $1 AND (${HOURLY_COLUMNS.map((column) => `${column} <> 0`).join(' OR ')})
     )
     ${EXPECTED_AGAINST_STORED_SQL}`,
    [organizationId],
  );
}

/**
 * Rows of metric_ranked_totals that differ from the same totals recomputed from the stored aggregates
 * (checked against raw samples by `aggregateDifferences`) and the workload rows themselves: the
 * ranked count, the sums of lifetime averages, and the idle GPU-hours of settled workloads, whose
 * GPU-seconds (share units, which gpucap_idle_gpu_hours divides back) are recomputed here from the
 * workload rather than read from the aggregate's copy.
 */
export async function rankedTotalsDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  return dataSource.query(
    `WITH expected AS (
       SELECT w.initiative_id, w.status, count(*) AS workload_count,
              sum(a.gpu_utilization_avg::numeric) AS gpu_sum, sum(a.power_usage_avg::numeric) AS power_sum,
              coalesce(sum(gpucap_idle_gpu_hours(
                w.gpu_share_units * greatest(0, floor(date_part('epoch', w.completed_at - w.started_at))),
                a.gpu_utilization_avg)::numeric) FILTER (WHERE w.status <> 'running'), 0) AS idle_sum
       FROM metric_aggregates a
       JOIN workloads w ON w.organization_id = a.organization_id AND w.workload_id = a.workload_id
       WHERE a.organization_id = $1 AND a.sample_count > 0
       GROUP BY 1, 2
     ),
     stored AS (
       SELECT initiative_id, status, workload_count, gpu_utilization_avg_sum AS gpu_sum,
              power_usage_avg_sum AS power_sum, idle_gpu_hours_sum AS idle_sum
       FROM metric_ranked_totals
       WHERE organization_id = $1
         AND (workload_count <> 0 OR gpu_utilization_avg_sum <> 0 OR power_usage_avg_sum <> 0 OR idle_gpu_hours_sum <> 0)
     )
     SELECT initiative_id, status, to_jsonb(e) AS expected, to_jsonb(s) AS stored
     FROM expected e FULL JOIN stored s USING (initiative_id, status)
     WHERE (e.workload_count, e.gpu_sum, e.power_sum, e.idle_sum)
           IS DISTINCT FROM (s.workload_count, s.gpu_sum, s.power_sum, s.idle_sum)`,
    [organizationId],
  );
}

/**
 * Workload sample summaries of one organization that differ from a recomputation over every stored
 * reading (both stores, not through gpucap_workload_samples): one per finished workload started at
 * or after the retention boundary, of the readings from its start to its end, both included.
 */
export async function workloadSummaryDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  return dataSource.query(
    `WITH expected AS (
       SELECT w.workload_id, e.*
       FROM workloads w
       LEFT JOIN sample_retention r ON r.organization_id = w.organization_id
       CROSS JOIN LATERAL (
         SELECT ${SAMPLE_EVIDENCE_SQL} FROM ${ALL_SAMPLES_SQL} s
         WHERE s.organization_id = w.organization_id AND s.workload_id = w.workload_id
           AND s.sampled_at >= w.started_at AND s.sampled_at <= w.completed_at
       ) e
       WHERE w.organization_id = $1 AND w.completed_at IS NOT NULL AND w.started_at IS NOT NULL
         AND (r.samples_before IS NULL OR w.started_at >= r.samples_before)
     ),
     stored AS (
       SELECT workload_id, sample_count, sampled_seconds, p95_gpu_utilization, p99_memory_utilization,
              top_memory_utilization
       FROM workload_sample_summaries WHERE organization_id = $1
     )
     SELECT coalesce(e.workload_id, s.workload_id) AS workload_id, to_jsonb(e) AS expected, to_jsonb(s) AS stored
     FROM expected e FULL JOIN stored s USING (workload_id)
     WHERE e IS DISTINCT FROM s`,
    [organizationId],
  );
}

/**
 * Workloads whose settled energy (src/rollups/workload-energy/) differs from what
 * gpucap_workload_energy gives from their aggregate now (which aggregateDifferences checks against
 * the samples): none while running.
 */
export async function settledEnergyDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  return dataSource.query(
    `SELECT w.workload_id, to_jsonb(e) AS expected,
            jsonb_build_array(w.energy_microjoules, w.carbon_microjoule_grams_per_kwh, w.uncovered_microjoules) AS stored
     FROM workloads w
     CROSS JOIN LATERAL gpucap_workload_energy(w.organization_id, w.workload_id, w.cluster_id, w.completed_at) e
     WHERE w.organization_id = $1
       AND (w.energy_microjoules, w.carbon_microjoule_grams_per_kwh, w.uncovered_microjoules) IS DISTINCT FROM
           (CASE WHEN w.started_at IS NOT NULL AND w.completed_at IS NULL THEN (NULL::numeric, NULL::numeric, NULL::numeric)
                 ELSE (e.energy_microjoules, e.carbon_microjoule_grams_per_kwh, e.uncovered_microjoules) END)`,
    [organizationId],
  );
}

/**
 * Rows of workload_status_totals that differ from the same totals over the workloads rows: count,
 * settled GPU-seconds, the settled costs' and energies' counts and sums.
 */
export async function statusTotalsDifferences(
  dataSource: DataSource,
  organizationId: string,
): Promise<unknown[]> {
  return dataSource.query(
    `WITH expected AS (
       SELECT initiative_id, status, cluster_id, count(*) AS workload_count,
              coalesce(sum((gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint), 0) AS gpu_seconds_sum,
              count(cost_unit_us) AS costed_count, coalesce(sum(cost_unit_us), 0) AS cost_unit_us_sum,
              count(energy_microjoules) AS energy_count, coalesce(sum(energy_microjoules), 0) AS energy_microjoules_sum
       FROM workloads WHERE organization_id = $1 GROUP BY 1, 2, 3
     ),
     stored AS (
       SELECT initiative_id, status, cluster_id, workload_count, gpu_seconds_sum, costed_count, cost_unit_us_sum,
              energy_count, energy_microjoules_sum
       FROM workload_status_totals
       WHERE organization_id = $1 AND (workload_count <> 0 OR gpu_seconds_sum <> 0 OR costed_count <> 0
         OR cost_unit_us_sum <> 0 OR energy_count <> 0 OR energy_microjoules_sum <> 0)
     )
     ${EXPECTED_AGAINST_STORED_SQL}`,
    [organizationId],
  );
}
