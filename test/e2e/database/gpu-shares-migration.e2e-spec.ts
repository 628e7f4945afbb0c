import { DataSource } from 'typeorm';
import { migrations } from '../../../migrations';
import { migrate, openDataSource } from '../../../src/database/database-target';
import { dataSourceOptions, MIGRATION_BOUNDS } from '../../../src/database/data-source-options';
import { rollupResidue } from '../../support/rollup-residue';
import {
  createDatabase,
  dropDatabase,
  TEST_DATABASE_PREFIX,
  withDatabaseName,
} from '../../support/test-database';

/**
 * Migration …22000 on a database that already holds whole-GPU workloads, samples and their rollups
 * (written under the schema before it): every stored amount becomes share units, and the rollups are
 * then exactly what the new triggers would build from the same raw rows.
 */
const ORG = 'org-migrated';
const HOUR = 3_600_000;
/** Integer amounts: scaled exactly. */
const ROLLUP_AMOUNTS: Record<string, string> = {
  capacity_usage_daily: 'gpu_microseconds + spanning_gpus + sampled_gpu_microseconds',
  capacity_usage_hourly: 'gpus + gpu_start_offset + gpu_microseconds + sampled_gpu_microseconds',
  workload_period_rollups: 'gpu_seconds_sum + sampled_gpu_seconds_sum',
  workload_status_totals: 'gpu_seconds_sum',
  metric_aggregates: 'coalesce(settled_gpu_seconds, 0)',
};
/** Numeric quotients, rebuilt rather than scaled: equal to the last digits of the division's precision. */
const BUSY_AMOUNTS: Record<string, string> = {
  capacity_usage_daily: 'busy_gpu_microseconds',
  capacity_usage_hourly: 'busy_gpu_microseconds',
  workload_period_rollups: 'busy_gpu_seconds_sum',
};

describe('migration 1763800022000 (GPU shares) on existing data', () => {
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL as string;
  const name = `${TEST_DATABASE_PREFIX}share_migration_${process.pid}_${Date.now().toString(36)}`;
  const url = withDatabaseName(serverUrl, name);
  let dataSource: DataSource;

  beforeAll(async () => {
    await createDatabase(serverUrl, name);
    const before = migrations.slice(
      0,
      migrations.findIndex((migration) => migration.name === 'GpuShares1763800022000'),
    );
    const old = await new DataSource({
      ...dataSourceOptions(url, MIGRATION_BOUNDS),
      migrations: before,
    }).initialize();
    try {
      await old.runMigrations({ transaction: 'each' });
      await writeWholeGpuData(old);
    } finally {
      await old.destroy();
    }
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await dropDatabase(serverUrl, name);
  });

  it('scales every stored amount by 5040 and leaves the rollups equal to what the new triggers build', async () => {
    const sumsBefore = await rollupSums(url);
    expect(sumsBefore.capacity_usage_daily).not.toBe('0');
    expect(sumsBefore.metric_aggregates).not.toBe('0');

    expect(await migrate(url)).toContain('GpuShares1763800022000');
    dataSource = await openDataSource(url, 2);

    const sumsAfter = await rollupSums(url);
    for (const table of Object.keys(ROLLUP_AMOUNTS)) {
      const [{ scaled }] = await dataSource.query('SELECT ($1::numeric * 5040)::text AS scaled', [
        sumsBefore[table],
      ]);
      const [{ equal }] = await dataSource.query('SELECT $1::numeric = $2::numeric AS equal', [
        scaled,
        sumsAfter[table],
      ]);
      expect({ table, before: sumsBefore[table], after: sumsAfter[table], equal }).toEqual({
        table,
        before: sumsBefore[table],
        after: sumsAfter[table],
        equal: true,
      });
    }
    for (const [table, amount] of Object.entries(BUSY_AMOUNTS)) {
      const [{ before, after }] = await dataSource.query(
        `SELECT ($1::numeric * 5040)::float8 AS before, coalesce(sum(${amount}), 0)::float8 AS after
         FROM ${table} WHERE organization_id = $2`,
        [sumsBefore[`busy:${table}`], ORG],
      );
      expect(before).toBeGreaterThan(0);
      expect({ table, ratio: after / before }).toEqual({ table, ratio: expect.closeTo(1, 12) });
    }
    const [{ mismatched }] = await dataSource.query(
      `SELECT count(*)::int AS mismatched FROM workloads
       WHERE gpu_share_units <> gpu_count * 5040 OR share_units IS NOT NULL OR gpu_sharing_mode IS NOT NULL`,
    );
    expect(mismatched).toBe(0);
    // Deleting every raw row through the new triggers nets each rollup to zero only if what the
    // migration scaled is exactly what they subtract.
    expect(await rollupResidue(dataSource, ORG)).toEqual({});
  });
});

async function rollupSums(url: string): Promise<Record<string, string>> {
  const dataSource = await openDataSource(url, 1);
  try {
    const sums: Record<string, string> = {};
    for (const [table, amount] of Object.entries(ROLLUP_AMOUNTS)) {
      const [{ total }] = await dataSource.query(
        `SELECT coalesce(sum(${amount}), 0)::numeric::text AS total FROM ${table} WHERE organization_id = $1`,
        [ORG],
      );
      sums[table] = total;
    }
    for (const [table, amount] of Object.entries(BUSY_AMOUNTS)) {
      const [{ total }] = await dataSource.query(
        `SELECT coalesce(sum(${amount}), 0)::text AS total FROM ${table} WHERE organization_id = $1`,
        [ORG],
      );
      sums[`busy:${table}`] = total;
    }
    return sums;
  } finally {
    await dataSource.destroy();
  }
}

/** Workloads of every status and GPU count, some spanning UTC days, some with samples: the old columns only. */
async function writeWholeGpuData(dataSource: DataSource): Promise<void> {
  const now = Date.now();
  await dataSource.transaction(async (manager) => {
    await manager.query('SELECT gpucap_lock_organizations($1::text[])', [[ORG]]);
    await manager.query(
      `INSERT INTO organizations (organization_id, name, timezone, budget_period_start, budget_period_end)
       VALUES ($1, 'Migrated', 'UTC', $2, $3)`,
      [ORG, new Date(now - 20 * 24 * HOUR), new Date(now + 40 * 24 * HOUR)],
    );
    await manager.query(
      `INSERT INTO initiatives (organization_id, initiative_id, name) VALUES ($1, 'a', 'A'), ($1, 'b', 'B')`,
      [ORG],
    );
    for (let index = 0; index < 60; index += 1) {
      const submitted = now - (index % 9) * 17 * HOUR - index * 60_000;
      const status = ['completed', 'failed', 'cancelled', 'running', 'pending'][index % 5];
      const started = status === 'pending' ? null : new Date(submitted + 5 * 60_000);
      const completed =
        status === 'running' || status === 'pending'
          ? null
          : new Date(submitted + ((index % 7) + 1) * 7 * HOUR);
      await manager.query(
        `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
           gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code)
         VALUES ($1, $2, $3, 'job', $4, 'someone', $5, $6, true, 'c1', 'ns', $7, $8, $9, $10)`,
        [
          ORG,
          `wl-${index}`,
          index % 2 ? 'a' : 'b',
          status,
          index % 3 ? 'p5.48xlarge' : 'g6.12xlarge',
          [1, 2, 4, 8, 0][index % 5],
          new Date(submitted),
          started,
          completed,
          status === 'completed' ? 0 : status === 'failed' ? 1 : null,
        ],
      );
    }
  });
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
    new Date(now - 30 * 24 * HOUR),
    new Date(now),
  ]);
  await dataSource.transaction(async (manager) => {
    await manager.query('SELECT gpucap_lock_organizations($1::text[])', [[ORG]]);
    await manager.query(
      `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization,
         temperature, power_usage)
       SELECT w.organization_id, w.workload_id, w.started_at + make_interval(mins => k * 7),
              (k * 13 + length(w.workload_id) * 7) % 100, 40, 60, 300
       FROM workloads w CROSS JOIN generate_series(0, 5) AS k
       WHERE w.organization_id = $1 AND w.started_at IS NOT NULL AND w.started_at + make_interval(mins => k * 7) < now()`,
      [ORG],
    );
  });
}
