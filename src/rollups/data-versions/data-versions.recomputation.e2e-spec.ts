import type { DataSource } from 'typeorm';
import {
  insertSamples,
  insertWorkloads,
  seedOrganization,
  uniqueId,
  writeAs,
} from '../../../test/support/factories';
import { sealForStore } from '../../../test/support/samples';
import { createTestApp, type TestApp } from '../../../test/support/test-app';
import { VERSIONED_TABLES } from './data-versions.definitions';

/**
 * The data version is what every kept answer is keyed on, so its rule is what this checks: a
 * statement that changes an organization's rows moves that organization's version and no other's,
 * on every table answers are made of, and a statement that changes nothing moves none.
 */
describe('data versions move exactly for the organizations whose rows changed', () => {
  let t: TestApp;
  let changed: string;
  let bystander: string;

  async function versions(dataSource: DataSource): Promise<Record<string, string>> {
    const rows = await dataSource.query<{ organization_id: string; version: string }[]>(
      'SELECT organization_id, version::text FROM organization_data_versions WHERE organization_id = ANY ($1::text[])',
      [[changed, bystander]],
    );
    return Object.fromEntries(rows.map((row) => [row.organization_id, row.version]));
  }

  async function seed(dataSource: DataSource, organizationId: string): Promise<void> {
    await seedOrganization(dataSource, {
      organizationId,
      pools: [{ poolId: 'pool', instanceTypes: ['a100'] }],
      allocations: [{ initiativeId: 'init-a', poolId: 'pool', allocatedGpuHours: 100 }],
      members: [{ subject: 'someone', role: 'MEMBER', initiativeIds: ['init-a'] }],
    });
    await insertWorkloads(dataSource, organizationId, [
      {
        workloadId: 'w',
        initiativeId: 'init-a',
        instanceType: 'a100',
        status: 'completed',
        submittedAt: '2026-10-02T00:00:00Z',
        startedAt: '2026-10-02T00:00:00Z',
        completedAt: '2026-10-02T02:00:00Z',
      },
    ]);
    await insertSamples(dataSource, organizationId, [
      { workloadId: 'w', at: '2026-10-02T00:30:00Z' },
      { workloadId: 'w', at: '2026-10-02T00:31:00Z' },
    ]);
    await writeAs(
      dataSource,
      `INSERT INTO gpu_prices (organization_id, instance_type, effective_from, effective_to, price_per_gpu_hour,
                               currency, minor_units, pricing_model)
       VALUES ($1, 'a100', '2026-01-01', NULL, 2.5, 'EUR', 2, 'on_demand')`,
      [organizationId],
    );
    await dataSource.query(
      `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-east', '2026-01-01', NULL, 350, 1.2)`,
      [organizationId],
    );
    await dataSource.query(
      `INSERT INTO instance_type_gpus (organization_id, instance_type, gpu_model, gpu_memory_gib, mig_capable)
       VALUES ($1, 'a100', 'A100-SXM4-40GB', 40, false)`,
      [organizationId],
    );
    await dataSource.query(
      `INSERT INTO alert_states (organization_id, fingerprint, alertname, initiative_id, labels, annotations, starts_at)
       VALUES ($1, 'f', 'GpuBudgetLow', 'init-a', '{}', '{}', now())`,
      [organizationId],
    );
  }

  beforeAll(async () => {
    t = await createTestApp();
    changed = uniqueId('org-changed');
    bystander = uniqueId('org-bystander');
    for (const organizationId of [changed, bystander]) await seed(t.dataSource, organizationId);
    // October's readings sealed into day blocks; a running workload's reading of now stays a row.
    await sealForStore(t.dataSource, [changed, bystander], 'rows and day blocks');
    const now = Date.now();
    for (const organizationId of [changed, bystander]) {
      await insertWorkloads(t.dataSource, organizationId, [
        {
          workloadId: 'r',
          initiativeId: 'init-a',
          instanceType: 'a100',
          status: 'running',
          startedAt: new Date(now - 3_600_000),
        },
      ]);
      await insertSamples(t.dataSource, organizationId, [{ workloadId: 'r', at: new Date(now - 60_000) }]);
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  it('the definitions name exactly the tables that carry data-version triggers', async () => {
    const rows = await t.dataSource.query<{ table_name: string }[]>(
      `SELECT DISTINCT event_object_table AS table_name FROM information_schema.triggers
       WHERE trigger_name LIKE '%\\_data\\_version\\_%' ORDER BY 1`,
    );
    expect(rows.map((row) => row.table_name)).toEqual(VERSIONED_TABLES.map(({ table }) => table).sort());
  });

  for (const { table } of VERSIONED_TABLES) {
    it(`${table}: an update of one organization's rows moves its version alone; one of no rows moves none`, async () => {
      const [{ count }] = await t.dataSource.query<{ count: number }[]>(
        `SELECT count(*)::int AS count FROM ${table} WHERE organization_id = $1`,
        [changed],
      );
      expect(count).toBeGreaterThan(0);

      const before = await versions(t.dataSource);
      await writeAs(
        t.dataSource,
        `UPDATE ${table} SET organization_id = organization_id WHERE organization_id = $1`,
        [changed],
      );
      const after = await versions(t.dataSource);
      expect(BigInt(after[changed])).toBeGreaterThan(BigInt(before[changed]));
      expect(after[bystander]).toBe(before[bystander]);

      await writeAs(t.dataSource, `DELETE FROM ${table} WHERE organization_id = $1 AND false`, [changed]);
      expect(await versions(t.dataSource)).toEqual(after);
    });
  }
});
