import request from 'supertest';
import type { DataSource } from 'typeorm';
import { authHeaders, createApiToken, seedOrganization, writeAs } from '../../../test/support/factories';
import { dailyUsageDifferences, hourlyUsageDifferences } from '../../../test/support/rollup-residue';
import { runBackfillParts } from '../../../test/support/backfills';
import { createTestApp, TestApp } from '../../../test/support/test-app';
import { runCostLateralSql } from '../../common/cost';
import { settledCostsBackfill } from '../../database/backfills/1763800036000-settled-costs';
import { clusterKeysBackfill } from '../../database/backfills/1763800042000-cluster-keys';
import { workloadEnergyBackfill } from '../../database/backfills/1763800043000-workload-energy';
import { RECOSTED_TABLE } from '../workload-costs/workload-costs.definitions';

/**
 * The share columns for kind `k` (a SQL integer 0-5) of `count` devices: whole GPUs, MIG 1g/2g/3g of a
 * seven-slice GPU (720/1440/2160 units of 1/5040 GPU), one of four time-sliced or MPS replicas (1260).
 */
function shareSql(k: string, count: string): string {
  return `CASE WHEN (${k}) = 0 THEN NULL ELSE (${count}) * (ARRAY[720, 1440, 2160, 1260, 1260])[${k}] END,
          (ARRAY[NULL, 'mig', 'mig', 'mig', 'time-slicing', 'mps'])[1 + (${k})],
          (ARRAY[NULL, '1g.10gb', '2g.20gb', '3g.40gb', NULL, NULL])[1 + (${k})],
          CASE WHEN (${k}) >= 4 THEN 4 END`;
}

const SHARE_COLUMNS = 'share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas';

/** Every column a writer sets (gpu_share_units is generated: it takes no value). */
const WORKLOAD_COLUMNS = `organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
  gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code, ${SHARE_COLUMNS}`;

/** The generated number of a `gen-N` workload, for SQL. */
const GENERATED_NUMBER = `substring(workload_id FROM 5)::int`;

/**
 * Generated workloads of one organization over ~40 days, every status, several people and types,
 * whole GPUs, MIG slices and shared replicas.
 */
async function generate(
  dataSource: DataSource,
  organizationId: string,
  count: number,
  offset = 0,
): Promise<void> {
  await writeAs(
    dataSource,
    `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
       gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code,
       ${SHARE_COLUMNS})
     SELECT $1, 'gen-' || g, 'init-' || (1 + g % 3), 'job', st, 'user' || (g % 7), 'type-' || (g % 4), 1 + g % 8,
            g % 3 <> 0, 'c-' || (g % 3), 'n', sub,
            CASE WHEN st = 'pending' OR (st = 'cancelled' AND g % 2 = 0) THEN NULL ELSE sub + interval '7 seconds' END,
            CASE WHEN st IN ('pending', 'running') THEN NULL
                 ELSE sub + interval '7 seconds' + (g * 37 % 9000) * interval '1 second' + interval '0.4 seconds' END,
            CASE st WHEN 'completed' THEN 0 WHEN 'failed' THEN 1 ELSE NULL END,
            ${shareSql('g % 6', '1 + g % 8')}
     FROM (SELECT g, timestamptz '2026-10-01T00:00:00Z' + (g * 7919 % 3456000) * interval '1 second' AS sub,
                  (ARRAY['completed','completed','completed','failed','cancelled','running','pending'])[1 + g % 7] AS st
           FROM generate_series($2::int, $3::int) g) s`,
    [organizationId, offset + 1, offset + count],
  );
}

/**
 * Samples for four workloads in five (every status), a different utilization each: the idle parts
 * of the rollups move with them. `round` changes their values on a second call.
 */
async function generateSamples(dataSource: DataSource, organizationId: string, round = 0): Promise<void> {
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
    '2026-09-30T00:00:00Z',
    '2026-11-15T00:00:00Z',
  ]);
  await writeAs(
    dataSource,
    `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization,
       temperature, power_usage)
     SELECT w.organization_id, w.workload_id, w.submitted_at + k * interval '1 minute',
            (w.gpu_count * 13 + k * 29 + $2::int * 41) % 101 + 0.25, 40, 60, 300
     FROM workloads w CROSS JOIN generate_series(0, 2) k
     WHERE w.organization_id = $1 AND hashtext(w.workload_id) % 5 <> 0
     ON CONFLICT (organization_id, workload_id, sampled_at) DO UPDATE SET gpu_utilization = excluded.gpu_utilization`,
    [organizationId, round],
  );
}

/**
 * Each workload's energy, carbon and uncovered energy of organization $1 from its raw samples
 * (docs/api.md, "Energy and carbon"): a sample's power held until the next, or for the last until
 * completed_at, at most the cap, weighed by the intensity period of the workload's cluster covering
 * the sample's time. Without completed_at the last sample holds nothing. Joined as a MATERIALIZED
 * CTE: the planner may otherwise run it again for every workload.
 */
const RAW_ENERGY_SQL = `
  SELECT r.workload_id, sum(r.microjoules) AS energy, coalesce(sum(r.microjoules * r.intensity), 0) AS carbon,
         coalesce(sum(r.microjoules) FILTER (WHERE r.intensity IS NULL), 0) AS uncovered
  FROM (SELECT h.workload_id,
               h.power_usage::numeric * greatest(0, least(h.microseconds, o.max_sample_gap_seconds * 1000000)) AS microjoules,
               (SELECT c.pue * c.grams_co2e_per_kwh FROM carbon_intensities c
                WHERE c.organization_id = h.organization_id AND c.cluster_id = h.cluster_id AND c.effective_from <= h.sampled_at
                  AND (c.effective_to IS NULL OR h.sampled_at < c.effective_to)) AS intensity
        FROM (SELECT s.organization_id, s.workload_id, s.sampled_at, s.power_usage, sw.cluster_id,
                     round(extract(epoch FROM coalesce(lead(s.sampled_at) OVER (PARTITION BY s.workload_id ORDER BY s.sampled_at),
                                                       sw.completed_at) - s.sampled_at) * 1000000) AS microseconds
              FROM metric_samples s
              JOIN workloads sw ON sw.organization_id = s.organization_id AND sw.workload_id = s.workload_id
              WHERE s.organization_id = $1) AS h
        JOIN organizations o ON o.organization_id = h.organization_id
        -- The last sample of a workload without completed_at holds nothing.
        WHERE h.microseconds IS NOT NULL) AS r
  GROUP BY r.workload_id`;

/** Workloads whose settled energy differs from RAW_ENERGY_SQL (running ones: none settled). */
async function settledEnergyDifferences(dataSource: DataSource, organizationId: string): Promise<number> {
  const [{ differences }] = await dataSource.query<{ differences: number }[]>(
    `WITH raw AS MATERIALIZED (${RAW_ENERGY_SQL})
     SELECT count(*)::int AS differences
     FROM workloads w LEFT JOIN raw USING (workload_id)
     WHERE w.organization_id = $1 AND (w.energy_microjoules, w.carbon_microjoule_grams_per_kwh, w.uncovered_microjoules)
       IS DISTINCT FROM (CASE WHEN w.started_at IS NOT NULL AND w.completed_at IS NULL
                              THEN (NULL::numeric, NULL::numeric, NULL::numeric)
                              WHEN EXISTS (SELECT 1 FROM metric_samples s WHERE s.organization_id = $1 AND s.workload_id = w.workload_id)
                              THEN (coalesce(raw.energy, 0), coalesce(raw.carbon, 0), coalesce(raw.uncovered, 0))
                              ELSE (NULL::numeric, NULL::numeric, NULL::numeric) END)`,
    [organizationId],
  );
  return differences;
}

/** The rollups must equal the aggregation of the raw rows, key by key (capacity's daily and hourly ones too). */
async function rollupDifferences(dataSource: DataSource, organizationId: string): Promise<number> {
  const hourly = await hourlyUsageDifferences(dataSource, organizationId);
  const daily = await dailyUsageDifferences(dataSource, organizationId);
  return (await periodRollupDifferences(dataSource, organizationId)) + hourly.length + daily.length;
}

/**
 * workload_period_rollups: per UTC day and hour, by nothing, submitter and instance type; per UTC day
 * only, by submitter of managed and of unmanaged workloads. GPU-seconds in share units (1/5040 GPU).
 */
async function periodRollupDifferences(dataSource: DataSource, organizationId: string): Promise<number> {
  const [row] = await dataSource.query(
    `WITH energy AS MATERIALIZED (${RAW_ENERGY_SQL}),
     raw AS (
       SELECT organization_id, p.period, d.dimension,
              date_trunc(p.period, submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS bucket_start,
              initiative_id, d.dimension_value,
              ${['pending', 'running', 'completed', 'failed', 'cancelled'].map((s) => `count(*) FILTER (WHERE status = '${s}')::bigint`).join(', ')},
              count(*) FILTER (WHERE status IN ('completed','failed','cancelled') AND started_at IS NOT NULL)::bigint,
              coalesce(sum(floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
              coalesce(sum(gpu_share_units * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
              -- Idle parts from raw samples, with the rollups' own rounding functions.
              coalesce(sum(gpucap_sampled_share(gpu_seconds, sampled.n)), 0)::bigint,
              coalesce(sum(gpucap_busy_share(gpu_seconds, sampled.utilization, sampled.n)), 0)::numeric,
              -- Money from the price periods as a request prices a run (src/common/cost.ts), not
              -- from the amounts the workloads carry: the running ones accrue at read time.
              coalesce(sum(price.price_unit_us) FILTER (WHERE NOT running), 0),
              coalesce(sum(w.gpu_share_units * price.whole_priced_us) FILTER (WHERE NOT running), 0),
              coalesce(sum(gpucap_sampled_share(price.whole_price_unit_us, sampled.n)
                           - gpucap_busy_share(price.whole_price_unit_us, sampled.utilization, sampled.n))
                       FILTER (WHERE completed_at IS NOT NULL AND started_at IS NOT NULL), 0),
              w.cluster_id,
              -- Energy from the raw samples; the running ones' is read where answered.
              coalesce(sum(energy.energy) FILTER (WHERE NOT running), 0),
              coalesce(sum(energy.carbon) FILTER (WHERE NOT running), 0),
              coalesce(sum(energy.uncovered) FILTER (WHERE NOT running), 0)
       FROM (SELECT *, coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds,
                    started_at IS NOT NULL AND completed_at IS NULL AS running
             FROM workloads WHERE organization_id = $1) AS w
       ${runCostLateralSql('w', 'now()', 'price')}
       LEFT JOIN energy USING (workload_id)
       LEFT JOIN (SELECT workload_id, count(*) AS n, sum(gpu_utilization::numeric) AS utilization
                  FROM metric_samples WHERE organization_id = $1 GROUP BY workload_id) AS sampled USING (workload_id)
       CROSS JOIN (VALUES ('day'), ('hour')) AS p (period)
       CROSS JOIN LATERAL (VALUES ('none', ''), ('submitted_by', submitted_by), ('instance_type', instance_type),
                                  (CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END,
                                   submitted_by))
         AS d (dimension, dimension_value)
       WHERE NOT (p.period = 'hour' AND d.dimension LIKE '%managed_submitted_by')
       GROUP BY 1, 2, 3, 4, 5, 6, w.cluster_id),
     rolled AS (SELECT * FROM workload_period_rollups WHERE organization_id = $1)
     SELECT (SELECT count(*) FROM (SELECT * FROM raw EXCEPT SELECT * FROM rolled) a)
          + (SELECT count(*) FROM (SELECT * FROM rolled EXCEPT SELECT * FROM raw) b) AS differences,
            (SELECT count(*) FROM rolled) AS rolled_rows`,
    [organizationId],
  );
  expect(Number(row.rolled_rows)).toBeGreaterThan(0);
  return Number(row.differences);
}

/**
 * Price periods that cut through the generated runs: type-0 changes price at a fraction of a second
 * into a run's second, type-1 has a gap (runs in it have no cost), type-2 starts mid-range and
 * type-3 has none.
 */
const PRICES = [
  ['type-0', '2026-09-01T00:00:00Z', '2026-10-12T06:00:00.25Z', '2.35'],
  ['type-0', '2026-10-12T06:00:00.25Z', null, '3.1'],
  ['type-1', '2026-09-01T00:00:00Z', '2026-10-20T00:00:00Z', '0.7'],
  ['type-1', '2026-10-22T00:00:00Z', null, '0.9'],
  ['type-2', '2026-10-15T12:00:00Z', null, '1.05'],
] as const;

/** The summed columns of workload_period_rollups before cluster_id, in table order (the energy's follow it). */
const MERGED_SUMS = [
  'pending_count',
  'running_count',
  'completed_count',
  'failed_count',
  'cancelled_count',
  'finished_count',
  'duration_seconds_sum',
  'gpu_seconds_sum',
  'sampled_gpu_seconds_sum',
  'busy_gpu_seconds_sum',
  'cost_unit_us_sum',
  'priced_whole_unit_us_sum',
  'idle_cost_unit_us_sum',
];

/** Upserts price periods ($2: a JSON array of [instance type, from, to, price]) of organization $1. */
const PRICE_UPSERT = `INSERT INTO gpu_prices (organization_id, instance_type, effective_from, effective_to, price_per_gpu_hour,
                             currency, minor_units, pricing_model)
     SELECT $1, p->>0, (p->>1)::timestamptz, (p->>2)::timestamptz, (p->>3)::numeric, 'EUR', 2, 'on_demand'
     FROM jsonb_array_elements($2::jsonb) p
     ON CONFLICT (organization_id, instance_type, effective_from) DO UPDATE
       SET effective_to = excluded.effective_to, price_per_gpu_hour = excluded.price_per_gpu_hour`;

/** Carbon intensity periods: c-1 changes mid-range, c-2 is covered only for a while, c-0 never. */
const INTENSITIES = [
  ['c-1', '2026-09-01T00:00:00Z', '2026-10-20T00:00:30Z', '300', '1.2'],
  ['c-1', '2026-10-20T00:00:30Z', null, '450', '1'],
  ['c-2', '2026-10-10T00:00:00Z', '2026-10-25T00:00:00Z', '210', '1.1'],
] as const;

/** Inserts carbon intensity periods ($2: a JSON array of [cluster, from, to, g/kWh, pue]) of organization $1. */
const INTENSITY_INSERT = `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
     SELECT $1, p->>0, (p->>1)::timestamptz, (p->>2)::timestamptz, (p->>3)::numeric, (p->>4)::numeric
     FROM jsonb_array_elements($2::jsonb) p`;

/** Workloads whose settled amounts differ from pricing their run now (src/common/cost.ts). */
async function settledCostDifferences(dataSource: DataSource, organizationId: string): Promise<number> {
  const [{ differences }] = await dataSource.query<{ differences: number }[]>(
    `SELECT count(*)::int AS differences
     FROM workloads w ${runCostLateralSql('w', 'now()', 'price')}
     WHERE w.organization_id = $1 AND (w.cost_unit_us, w.priced_cost_unit_us, w.priced_whole_unit_us, w.whole_cost_unit_us)
       IS DISTINCT FROM (CASE WHEN w.started_at IS NOT NULL AND w.completed_at IS NULL
         THEN (NULL::numeric, NULL::numeric, NULL::numeric, NULL::numeric)
         ELSE (CASE WHEN price.price_count > 0
                         AND price.priced_us >= coalesce(round(date_part('epoch', w.completed_at - w.started_at) * 1e6), 0)
                    THEN price.price_unit_us END,
               price.price_unit_us, w.gpu_share_units * price.whole_priced_us, price.whole_price_unit_us) END)`,
    [organizationId],
  );
  return differences;
}

interface RawStats {
  group_key: string | null;
  workload_count: number;
  gpu_hours: number;
  average: number | null;
  success_rate: number | null;
  energy: Record<string, number>;
}

/** Each workload's energy from its raw samples (RAW_ENERGY_SQL), exact, as JSON for rawStats. */
async function rawEnergies(dataSource: DataSource, organizationId: string): Promise<string> {
  return JSON.stringify(await dataSource.query(RAW_ENERGY_SQL, [organizationId]));
}

/**
 * Statistics straight from raw rows, the reference the rollup-backed endpoint must equal: GPU-hours are
 * the physical share held (units / 5040) × hours; energy from `energies` (rawEnergies).
 */
async function rawStats(
  dataSource: DataSource,
  organizationId: string,
  from: string,
  to: string,
  groupBy: string | null,
  initiatives: string[] | null,
  energies: string,
  at: Date = new Date(),
): Promise<RawStats[]> {
  const key = groupBy ?? 'NULL::text';
  return dataSource.query(
    `SELECT ${key} AS group_key, count(*)::int AS workload_count,
       round((sum(gpu_share_units * CASE WHEN status = 'running' THEN floor(extract(epoch FROM $5::timestamptz - started_at))
                                   ELSE coalesce(floor(extract(epoch FROM completed_at - started_at)), 0) END)
              / 5040.0 / 3600.0)::numeric, 4)::float8 AS gpu_hours,
       round((avg(floor(extract(epoch FROM completed_at - started_at)))
              FILTER (WHERE status IN ('completed','failed','cancelled') AND started_at IS NOT NULL))::numeric, 4)::float8
         AS average,
       round((count(*) FILTER (WHERE status = 'completed')::numeric
              / nullif(count(*) FILTER (WHERE status IN ('completed', 'failed')), 0)), 4)::float8 AS success_rate,
       -- Energy of every workload, the running ones' so far: RAW_ENERGY_SQL holds their last sample for nothing.
       jsonb_build_object('total_energy_kwh', round(coalesce(sum(raw.energy), 0) / 3600000000000, 4)::float8,
                          'total_carbon_kg', round(coalesce(sum(raw.carbon), 0) / 3600000000000000, 4)::float8,
                          'uncovered_energy_kwh', round(coalesce(sum(raw.uncovered), 0) / 3600000000000, 4)::float8) AS energy
     FROM workloads
     LEFT JOIN jsonb_to_recordset($6::jsonb) AS raw (workload_id text, energy numeric, carbon numeric, uncovered numeric)
       USING (workload_id)
     WHERE organization_id = $1 AND submitted_at >= $2 AND submitted_at < $3
       AND ($4::text[] IS NULL OR initiative_id = ANY($4))
     GROUP BY ${key} ORDER BY count(*) DESC, ${key} COLLATE "C"`,
    [organizationId, from, to, initiatives, at, energies],
  );
}

describe('workload rollup: exact equality with raw rows', () => {
  let testApp: TestApp;
  let organizationId: string;
  let admin: Record<string, string>;
  let member: Record<string, string>;

  beforeAll(async () => {
    // Re-sending 7,000 samples moves the idle parts of every rollup in one statement: seconds, near the
    // service's 10 s limit on a loaded machine. This file holds exactness, not speed.
    testApp = await createTestApp({ DATABASE_STATEMENT_TIMEOUT_MS: '60000' });
    organizationId = await seedOrganization(testApp.dataSource, {
      initiatives: ['init-1', 'init-2', 'init-3'],
    });
    await generate(testApp.dataSource, organizationId, 3000);
    await generateSamples(testApp.dataSource, organizationId);
    // After the workloads: the price triggers settle what is already stored.
    await writeAs(testApp.dataSource, PRICE_UPSERT, [organizationId, JSON.stringify(PRICES)]);
    // And after the samples: the intensity triggers re-weigh what is stored.
    await writeAs(testApp.dataSource, INTENSITY_INSERT, [organizationId, JSON.stringify(INTENSITIES)]);
    admin = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
    member = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, {
        role: 'MEMBER',
        initiativeIds: ['init-1', 'init-3'],
      }),
      organizationId,
    );
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('matches after a bulk insert', async () => {
    const kinds = await testApp.dataSource.query(
      `SELECT DISTINCT gpu_share_units / gpu_count AS units FROM workloads WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(kinds.map((kind: { units: number }) => kind.units)).toEqual([720, 1260, 1440, 2160, 5040]);
    expect(await rollupDifferences(testApp.dataSource, organizationId)).toBe(0);
    expect(await settledCostDifferences(testApp.dataSource, organizationId)).toBe(0);
    expect(await settledEnergyDifferences(testApp.dataSource, organizationId)).toBe(0);
    const [{ weighed, uncovered }] = await testApp.dataSource.query(
      `SELECT count(*) FILTER (WHERE carbon_microjoule_grams_per_kwh > 0)::int AS weighed,
              count(*) FILTER (WHERE uncovered_microjoules > 0)::int AS uncovered
       FROM workloads WHERE organization_id = $1`,
      [organizationId],
    );
    expect(weighed).toBeGreaterThan(300);
    expect(uncovered).toBeGreaterThan(300);
    // Capacity spreads that energy over the runs' days and hours: its rows are checked above.
    const [{ days, hours }] = await testApp.dataSource.query(
      `SELECT (SELECT count(*) FROM capacity_usage_daily WHERE organization_id = $1 AND energy_gpu_microseconds > 0)::int AS days,
              (SELECT count(*) FROM capacity_usage_hourly WHERE organization_id = $1 AND energy_gpu_start_offset > 0)::int AS hours`,
      [organizationId],
    );
    expect(days).toBeGreaterThan(100);
    expect(hours).toBeGreaterThan(100);
    const [{ costed }] = await testApp.dataSource.query(
      `SELECT count(*) FILTER (WHERE cost_unit_us > 0)::int AS costed FROM workloads WHERE organization_id = $1`,
      [organizationId],
    );
    expect(costed).toBeGreaterThan(300);
  });

  it('re-costs exactly the workloads a price change touches, and reports how many', async () => {
    const ds = testApp.dataSource;
    const snapshot = () =>
      ds.query<{ workload_id: string; amounts: string }[]>(
        `SELECT workload_id, (cost_unit_us, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us)::text AS amounts
         FROM workloads WHERE organization_id = $1 ORDER BY workload_id`,
        [organizationId],
      );
    const changes: [sql: string, parameters: unknown[]][] = [
      // A first price for the type that had none.
      [PRICE_UPSERT, [organizationId, JSON.stringify([['type-3', '2026-10-05T00:00:00Z', null, '4']])]],
      // A price changed.
      [PRICE_UPSERT, [organizationId, JSON.stringify([['type-0', '2026-10-12T06:00:00.25Z', null, '2.9']])]],
      // A gap closed.
      [
        PRICE_UPSERT,
        [organizationId, JSON.stringify([['type-1', '2026-10-20T00:00:00Z', '2026-10-22T00:00:00Z', '0.8']])],
      ],
      // A type's prices removed.
      [`DELETE FROM gpu_prices WHERE organization_id = $1 AND instance_type = 'type-2'`, [organizationId]],
    ];
    for (const [sql, parameters] of changes) {
      const before = await snapshot();
      const recosted = await ds.transaction(async (manager) => {
        await manager.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
        await manager.query(sql, parameters);
        const [{ count }] = await manager.query(
          `SELECT count(*)::int AS count FROM pg_temp.${RECOSTED_TABLE}`,
        );
        return count as number;
      });
      const after = await snapshot();
      const changed = after.filter((row, index) => row.amounts !== before[index].amounts).length;
      expect(changed).toBeGreaterThan(0);
      expect(recosted).toBe(changed);
      expect(await settledCostDifferences(ds, organizationId)).toBe(0);
      expect(await rollupDifferences(ds, organizationId)).toBe(0);
    }
  });

  it('are settled by the backfill, a month at a time, for workloads stored before the amounts', async () => {
    const ds = testApp.dataSource;
    // What the migration leaves: no amounts on the workloads, so none in the rollups.
    await writeAs(
      ds,
      `UPDATE workloads SET cost_unit_us = NULL, priced_cost_unit_us = NULL, priced_whole_unit_us = NULL,
         whole_cost_unit_us = NULL WHERE organization_id = $1`,
      [organizationId],
    );
    expect(await settledCostDifferences(ds, organizationId)).toBeGreaterThan(0);
    expect(await rollupDifferences(ds, organizationId)).toBeGreaterThan(0);
    expect(await runBackfillParts(ds, settledCostsBackfill, organizationId)).toBeGreaterThan(1);
    expect(await settledCostDifferences(ds, organizationId)).toBe(0);
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
  });

  it('settle energy again when intensities or the cap change, and by the backfill for workloads stored before it', async () => {
    // Each change re-settles many workloads and each check recomputes every sample's part: not quick.
    const ds = testApp.dataSource;
    const changes: [sql: string, parameters: unknown[]][] = [
      [
        `UPDATE carbon_intensities SET grams_co2e_per_kwh = 520 WHERE organization_id = $1 AND cluster_id = 'c-2'`,
        [organizationId],
      ],
      [
        `DELETE FROM carbon_intensities WHERE organization_id = $1 AND cluster_id = 'c-1' AND effective_to IS NULL`,
        [organizationId],
      ],
      [
        INTENSITY_INSERT,
        [organizationId, JSON.stringify([['c-0', '2026-10-05T00:00:00Z', null, '90', '1.3']])],
      ],
      [`UPDATE organizations SET max_sample_gap_seconds = 45 WHERE organization_id = $1`, [organizationId]],
    ];
    for (const [sql, parameters] of changes) {
      await writeAs(ds, sql, parameters);
      expect(await settledEnergyDifferences(ds, organizationId)).toBe(0);
      expect(await rollupDifferences(ds, organizationId)).toBe(0);
    }
    // What the migration leaves: no energy on the workloads, so none in the rollups.
    await writeAs(
      ds,
      `UPDATE workloads SET energy_microjoules = NULL, carbon_microjoule_grams_per_kwh = NULL, uncovered_microjoules = NULL
       WHERE organization_id = $1`,
      [organizationId],
    );
    expect(await settledEnergyDifferences(ds, organizationId)).toBeGreaterThan(0);
    expect(await rollupDifferences(ds, organizationId)).toBeGreaterThan(0);
    expect(await runBackfillParts(ds, workloadEnergyBackfill, organizationId)).toBeGreaterThan(1);
    expect(await settledEnergyDifferences(ds, organizationId)).toBe(0);
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
  }, 120_000);

  it('are rebuilt with their clusters by the key backfill, a month at a time', async () => {
    const ds = testApp.dataSource;
    // What the migration leaves: every row under the empty cluster, as the old key summed them.
    await ds.query(
      `WITH merged AS (
         DELETE FROM workload_period_rollups WHERE organization_id = $1 RETURNING *)
       INSERT INTO workload_period_rollups
       SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value,
              ${MERGED_SUMS.map((column) => `sum(${column})`).join(', ')}, '',
              sum(energy_microjoules_sum), sum(carbon_microjoule_grams_per_kwh_sum), sum(uncovered_microjoules_sum)
       FROM merged GROUP BY 1, 2, 3, 4, 5, 6`,
      [organizationId],
    );
    expect(await rollupDifferences(ds, organizationId)).toBeGreaterThan(0);
    expect(await runBackfillParts(ds, clusterKeysBackfill, organizationId)).toBeGreaterThan(1);
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
  });

  it('matches after updates, deletes, an upsert import and a second identical import', async () => {
    const ds = testApp.dataSource;
    await writeAs(
      ds,
      `UPDATE workloads SET status = 'completed', completed_at = started_at + interval '99 seconds', exit_code = 0
       WHERE organization_id = $1 AND status = 'running' AND workload_id LIKE 'gen-1%'`,
      [organizationId],
    );
    await writeAs(
      ds,
      `UPDATE workloads SET initiative_id = 'init-2', submitted_by = 'moved', submitted_at = submitted_at - interval '3 days'
       WHERE organization_id = $1 AND workload_id LIKE 'gen-2%' AND status <> 'running'`,
      [organizationId],
    );
    // Moved to another cluster: its rows leave one cluster's keys for another's.
    await writeAs(
      ds,
      `UPDATE workloads SET cluster_id = 'c-moved' WHERE organization_id = $1 AND workload_id LIKE 'gen-7%'`,
      [organizationId],
    );
    await writeAs(ds, `DELETE FROM workloads WHERE organization_id = $1 AND workload_id LIKE 'gen-3%'`, [
      organizationId,
    ]);
    // The same devices shared otherwise: only the share changes (whole ↔ MIG ↔ replicas).
    await writeAs(
      ds,
      `UPDATE workloads SET (${SHARE_COLUMNS}) = (SELECT ${shareSql(`(${GENERATED_NUMBER} + 3) % 6`, 'gpu_count')})
       WHERE organization_id = $1 AND workload_id LIKE 'gen-6%'`,
      [organizationId],
    );
    expect(await rollupDifferences(ds, organizationId)).toBe(0);

    // Samples re-sent with other values, some removed: aggregates change, the idle parts follow.
    await generateSamples(ds, organizationId, 1);
    await writeAs(
      ds,
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id LIKE 'gen-5%' AND sampled_at > (
         SELECT submitted_at FROM workloads w WHERE w.organization_id = $1 AND w.workload_id = metric_samples.workload_id)`,
      [organizationId],
    );
    expect(await rollupDifferences(ds, organizationId)).toBe(0);

    // An import: upsert by id, half existing (changed: more devices, shared otherwise), half new, fires
    // INSERT and UPDATE statement triggers.
    const upsert = `INSERT INTO workloads AS w (organization_id, workload_id, initiative_id, name, status, submitted_by,
         instance_type, gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code,
         ${SHARE_COLUMNS})
       SELECT organization_id, workload_id, initiative_id, name, status, submitted_by, 'type-new', gpu_count + 1,
              NOT is_managed, cluster_id, namespace, submitted_at + interval '5 hours', started_at + interval '5 hours',
              completed_at + interval '5 hours', exit_code, ${shareSql(`(${GENERATED_NUMBER} + 1) % 6`, 'gpu_count + 1')}
       FROM workloads WHERE organization_id = $1 AND workload_id LIKE 'gen-4%'
       UNION ALL
       SELECT $1, 'new-' || g, 'init-3', 'job', 'completed', 'newbie', 'type-0', 2, true, 'c', 'n',
              timestamptz '2026-10-20T23:30:00Z' + g * interval '1 minute',
              timestamptz '2026-10-20T23:31:00Z' + g * interval '1 minute',
              timestamptz '2026-10-21T00:31:00Z' + g * interval '1 minute', 0, ${shareSql('g % 6', '2')}
       FROM generate_series(1, 200) g
       ON CONFLICT (organization_id, workload_id) DO UPDATE SET
         instance_type = excluded.instance_type, gpu_count = excluded.gpu_count, is_managed = excluded.is_managed,
         submitted_at = excluded.submitted_at, started_at = excluded.started_at, completed_at = excluded.completed_at,
         share_units = excluded.share_units, gpu_sharing_mode = excluded.gpu_sharing_mode,
         gpu_sharing_profile = excluded.gpu_sharing_profile, gpu_sharing_replicas = excluded.gpu_sharing_replicas`;
    await writeAs(ds, upsert, [organizationId]);
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
    await generateSamples(ds, organizationId, 2);
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
    await writeAs(
      ds,
      `INSERT INTO workloads (${WORKLOAD_COLUMNS}) SELECT ${WORKLOAD_COLUMNS} FROM workloads
       WHERE organization_id = $1 AND workload_id LIKE 'new-%'
       ON CONFLICT (organization_id, workload_id) DO UPDATE SET name = excluded.name`,
      [organizationId],
    );
    expect(await rollupDifferences(ds, organizationId)).toBe(0);
    expect(await settledCostDifferences(ds, organizationId)).toBe(0);
    expect(await settledEnergyDifferences(ds, organizationId)).toBe(0);
  });

  const ranges = [
    ['2026-10-01', '2026-11-15'],
    ['2026-10-03T07:13:00Z', '2026-10-29T16:45:30.5Z'],
    ['2026-10-20T23:59:59Z', '2026-10-21T00:00:01Z'],
    ['2026-10-05T10:00:00Z', '2026-10-05T11:00:00Z'],
    ['2026-10-10', '2026-10-11'],
  ];

  it.each(ranges)(
    'stats from %s to %s equal the raw computation for every grouping and scope',
    async (from, to) => {
      const energies = await rawEnergies(testApp.dataSource, organizationId);
      for (const [headers, initiatives] of [
        [admin, null],
        [member, ['init-1', 'init-3']],
      ] as const) {
        for (const groupBy of [null, 'submitted_by', 'initiative_id', 'instance_type', 'cluster_id']) {
          const query: Record<string, string> = { start_date: from, end_date: to };
          if (groupBy) query.group_by = groupBy;
          const before = new Date(Date.now() - 1000);
          const response = await request(testApp.server)
            .get('/v1/workloads/stats')
            .query(query)
            .set(headers)
            .expect(200);
          const raw = await rawStats(
            testApp.dataSource,
            organizationId,
            from,
            to,
            groupBy,
            initiatives ? [...initiatives] : null,
            energies,
          );
          const summary = (
            await rawStats(
              testApp.dataSource,
              organizationId,
              from,
              to,
              null,
              initiatives ? [...initiatives] : null,
              energies,
            )
          )[0];
          const summaryBefore = (
            await rawStats(
              testApp.dataSource,
              organizationId,
              from,
              to,
              null,
              initiatives ? [...initiatives] : null,
              energies,
              before,
            )
          )[0];
          expect(response.body.data.summary.total_workloads).toBe(summary?.workload_count ?? 0);
          const energy = summary?.energy ?? {
            total_energy_kwh: 0,
            total_carbon_kg: 0,
            uncovered_energy_kwh: 0,
          };
          expect(response.body.data.summary).toMatchObject(energy);
          expect(response.body.data.summary.average_duration_seconds).toBe(summary?.average ?? null);
          expect(response.body.data.summary.success_rate).toBe(summary?.success_rate ?? null);
          // Running workloads grow with the clock: the answer lies between the raw figure computed
          // at a moment before the request and the one computed after it.
          expect(response.body.data.summary.total_gpu_hours).toBeGreaterThanOrEqual(
            (summaryBefore?.gpu_hours ?? 0) - 0.0001,
          );
          expect(response.body.data.summary.total_gpu_hours).toBeLessThanOrEqual(
            (summary?.gpu_hours ?? 0) + 0.0001,
          );
          if (groupBy) {
            expect(
              response.body.data.grouped.map((group: Record<string, unknown>) => [
                group[groupBy],
                group.workload_count,
                group.success_rate,
                {
                  total_energy_kwh: group.total_energy_kwh,
                  total_carbon_kg: group.total_carbon_kg,
                  uncovered_energy_kwh: group.uncovered_energy_kwh,
                },
              ]),
            ).toEqual(raw.map((row) => [row.group_key, row.workload_count, row.success_rate, row.energy]));
            const rawBefore = await rawStats(
              testApp.dataSource,
              organizationId,
              from,
              to,
              groupBy,
              initiatives ? [...initiatives] : null,
              energies,
              before,
            );
            for (const group of response.body.data.grouped as Record<string, string & number>[]) {
              const low = rawBefore.find((row) => row.group_key === group[groupBy])?.gpu_hours ?? 0;
              const high = raw.find((row) => row.group_key === group[groupBy])?.gpu_hours ?? 0;
              expect(group.gpu_hours).toBeGreaterThanOrEqual(low - 0.0001);
              expect(group.gpu_hours).toBeLessThanOrEqual(high + 0.0001);
            }
          }
        }
      }
    },
  );

  it.each([
    [{}],
    [{ status: 'completed' }],
    [{ submitted_by: 'user3' }],
    [{ is_managed: 'false', initiative_id: 'init-1' }],
    [{ start_date: '2026-10-03T07:13:00Z', end_date: '2026-10-29T16:45:30.5Z' }],
    [{ start_date: '2026-10-10', end_date: '2026-10-12', status: 'failed' }],
    [{ start_date: '2026-10-20T23:59:59Z', end_date: '2026-10-21T00:00:01Z' }],
    [{ end_date: '2026-10-15T12:00:00+02:00', submitted_by: 'user1' }],
    [{ is_managed: 'true' }],
    [{ is_managed: 'false', start_date: '2026-10-04T05:00:00Z', status: 'completed' }],
    [
      {
        is_managed: 'true',
        submitted_by: 'user2',
        status: 'completed',
        start_date: '2026-10-03T07:13:00Z',
        end_date: '2026-10-29T16:45:30.5Z',
      },
    ],
    [{ submitted_by: 'user1', status: 'completed', start_date: '2026-10-05T10:30:00Z' }],
  ])('list total_count for %j equals a raw count (admin and member)', async (filters) => {
    for (const [headers, initiatives] of [
      [admin, null],
      [member, ['init-1', 'init-3']],
    ] as const) {
      const response = await request(testApp.server)
        .get('/v1/workloads')
        .query({ ...filters, limit: 1 })
        .set(headers)
        .expect(200);
      const f = filters as Record<string, string>;
      const [raw] = await testApp.dataSource.query(
        `SELECT count(*)::int AS n FROM workloads WHERE organization_id = $1
           AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR submitted_by = $3)
           AND ($4::boolean IS NULL OR is_managed = $4) AND ($5::text IS NULL OR initiative_id = $5)
           AND ($6::timestamptz IS NULL OR submitted_at >= $6) AND ($7::timestamptz IS NULL OR submitted_at < $7)
           AND ($8::text[] IS NULL OR initiative_id = ANY($8))`,
        [
          organizationId,
          f.status ?? null,
          f.submitted_by ?? null,
          f.is_managed ?? null,
          f.initiative_id ?? null,
          f.start_date ?? null,
          f.end_date ?? null,
          initiatives ? [...initiatives] : null,
        ],
      );
      expect(response.body.metadata.total_count).toBe(raw.n);
      expect(raw.n).toBeGreaterThan(0);
    }
  });
});
