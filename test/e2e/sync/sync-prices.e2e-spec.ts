import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseSyncConfig } from '../../../src/ingest/sync-config';
import { syncOnce } from '../../../src/ingest/sync-runner';
import { importDocument, uniqueId } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * A sync config's `prices` and `instance_types` are import records written through the loader on
 * every run: the example config's price lands in gpu_prices and its GPU facts in instance_type_gpus,
 * a second run writes nothing, and an overlapping price fails the
 * run in one line naming the stored period, writing nothing.
 */
const EXAMPLES = join(__dirname, '../../../examples');

describe('gpucap sync: prices', () => {
  let t: TestApp;
  let organizationId: string;
  const configOf = (patch: (document: Record<string, unknown>) => void = () => undefined) => {
    const text = readFileSync(join(EXAMPLES, 'sync.yaml'), 'utf8').split('org-example').join(organizationId);
    const document = parseYaml(text) as Record<string, unknown>;
    patch(document);
    return parseSyncConfig(document, EXAMPLES);
  };
  const prices = () =>
    t.dataSource.query(
      `SELECT instance_type, price_per_gpu_hour::text AS price, currency, pricing_model FROM gpu_prices
       WHERE organization_id = $1 ORDER BY instance_type, effective_from`,
      [organizationId],
    );

  beforeAll(async () => {
    t = await createTestApp();
    organizationId = uniqueId('org-sync-prices');
    const organization = readFileSync(join(EXAMPLES, 'organization.json'), 'utf8')
      .split('org-example')
      .join(organizationId);
    await importDocument(t.dataSource, JSON.parse(organization) as object);
  });

  afterAll(() => t.close());

  it('writes the example config prices and GPU facts, and nothing the second time', async () => {
    const run = { dataSource: t.dataSource, config: configOf(), inCluster: false };
    expect((await syncOnce(run)).every((report) => report.ok)).toBe(true);
    expect(await prices()).toEqual([
      { instance_type: 'hpc1-a100', price: '1.85', currency: 'EUR', pricing_model: 'internal' },
    ]);
    const gpus = await t.dataSource.query(
      `SELECT instance_type, gpu_model, gpu_memory_gib, mig_capable, jsonb_array_length(mig_profiles) AS profiles
       FROM instance_type_gpus WHERE organization_id = $1`,
      [organizationId],
    );
    expect(gpus).toEqual([
      {
        instance_type: 'hpc1-a100',
        gpu_model: 'A100 80GB',
        gpu_memory_gib: 80,
        mig_capable: true,
        profiles: 6,
      },
    ]);
    const [{ version }] = await t.dataSource.query(
      'SELECT version FROM organization_data_versions WHERE organization_id = $1',
      [organizationId],
    );
    await syncOnce(run);
    const [again] = await t.dataSource.query(
      'SELECT version FROM organization_data_versions WHERE organization_id = $1',
      [organizationId],
    );
    expect(again.version).toBe(version);
  });

  it('fails the run on a price that overlaps a stored one, writing nothing', async () => {
    const config = configOf((document) => {
      const [price] = document.prices as Record<string, unknown>[];
      document.prices = [{ ...price, effective_from: '2026-06-01T00:00:00Z', price_per_gpu_hour: 2 }];
    });
    const reports = await syncOnce({ dataSource: t.dataSource, config, inCluster: false });
    expect(reports.every((report) => !report.ok)).toBe(true);
    expect(JSON.stringify(reports)).toContain('overlaps the stored price of instance type');
    expect(await prices()).toHaveLength(1);
  });
});
