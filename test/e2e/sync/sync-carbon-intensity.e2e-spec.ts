import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseSyncConfig, SyncConfigError } from '../../../src/ingest/sync-config';
import { syncOnce } from '../../../src/ingest/sync-runner';
import { importDocument, uniqueId } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * A sync config's `carbon_intensity` records are import records written through the loader on every
 * run, as `prices` are: the example config's period lands in carbon_intensities, a second run writes
 * nothing (the data version stays), hourly periods replace nothing else, an overlapping period fails
 * the run in one line naming the stored period, writing nothing, and a bad record stops the config.
 */
const EXAMPLES = join(__dirname, '../../../examples');

describe('gpucap sync: carbon_intensity', () => {
  let t: TestApp;
  let organizationId: string;
  const configOf = (patch: (document: Record<string, unknown>) => void = () => undefined) => {
    const text = readFileSync(join(EXAMPLES, 'sync.yaml'), 'utf8').split('org-example').join(organizationId);
    const document = parseYaml(text) as Record<string, unknown>;
    patch(document);
    return parseSyncConfig(document, EXAMPLES);
  };
  const intensities = () =>
    t.dataSource.query(
      `SELECT cluster_id, effective_from, effective_to, grams_co2e_per_kwh::text AS grams, pue::text AS pue
       FROM carbon_intensities WHERE organization_id = $1 ORDER BY cluster_id, effective_from`,
      [organizationId],
    );
  const version = async () => {
    const [row] = await t.dataSource.query(
      'SELECT version::text AS version FROM organization_data_versions WHERE organization_id = $1',
      [organizationId],
    );
    return row.version as string;
  };

  beforeAll(async () => {
    t = await createTestApp();
    organizationId = uniqueId('org-sync-carbon');
    const organization = readFileSync(join(EXAMPLES, 'organization.json'), 'utf8')
      .split('org-example')
      .join(organizationId);
    await importDocument(t.dataSource, JSON.parse(organization) as object);
  });

  afterAll(() => t.close());

  it('writes the example config’s carbon intensity, and nothing the second time', async () => {
    const run = { dataSource: t.dataSource, config: configOf(), inCluster: false };
    expect((await syncOnce(run)).every((report) => report.ok)).toBe(true);
    expect(await intensities()).toEqual([
      {
        cluster_id: 'hpc1',
        effective_from: new Date('2026-01-01T00:00:00Z'),
        effective_to: null,
        grams: '350',
        pue: '1.25',
      },
    ]);
    const before = await version();
    await syncOnce(run);
    expect(await version()).toBe(before);
  });

  it('takes hourly periods of another cluster beside it', async () => {
    const config = configOf((document) => {
      const [example] = document.carbon_intensity as Record<string, unknown>[];
      document.carbon_intensity = [
        example,
        ...[0, 1, 2].map((hour) => ({
          organization_id: organizationId,
          cluster_id: 'eks-west',
          effective_from: `2026-11-20T0${hour}:00:00Z`,
          effective_to: `2026-11-20T0${hour + 1}:00:00Z`,
          grams_co2e_per_kwh: 200 + hour,
        })),
      ];
    });
    const reports = await syncOnce({ dataSource: t.dataSource, config, inCluster: false });
    expect(reports.every((report) => report.ok)).toBe(true);
    expect(
      (await intensities()).map((row: { cluster_id: string; grams: string; pue: string }) => [
        row.cluster_id,
        row.grams,
        row.pue,
      ]),
    ).toEqual([
      ['eks-west', '200', '1'],
      ['eks-west', '201', '1'],
      ['eks-west', '202', '1'],
      ['hpc1', '350', '1.25'],
    ]);
  });

  it('fails the run on a period that overlaps a stored one, writing nothing', async () => {
    const config = configOf((document) => {
      const [example] = document.carbon_intensity as Record<string, unknown>[];
      document.carbon_intensity = [
        { ...example, effective_from: '2026-06-01T00:00:00Z', grams_co2e_per_kwh: 90 },
      ];
    });
    const before = await intensities();
    const reports = await syncOnce({ dataSource: t.dataSource, config, inCluster: false });
    expect(reports.every((report) => !report.ok)).toBe(true);
    expect(reports[0].error).toBe(
      `rejected, nothing written: carbon_intensity: its period overlaps the stored carbon intensity of cluster 'hpc1' from 2026-01-01T00:00:00Z to open end in organization '${organizationId}' (periods of one cluster must not overlap; re-send that period with an earlier effective_to)`,
    );
    expect(await intensities()).toEqual(before);
  });

  it.each([
    [
      (record: Record<string, unknown>) => ({ ...record, pue: 0.8 }),
      'carbon_intensity[0]: pue must be a number greater than or equal to 1 (power usage effectiveness: facility power over IT power)',
    ],
    [
      (record: Record<string, unknown>) => ({ ...record, organization_id: 'org-other' }),
      "carbon_intensity[0].organization_id must be the config's organization_id",
    ],
  ])('refuses a bad record in the config, naming it (%#)', (change, message) => {
    const parse = () =>
      configOf((document) => {
        const [example] = document.carbon_intensity as Record<string, unknown>[];
        document.carbon_intensity = [change(example)];
      });
    expect(parse).toThrow(SyncConfigError);
    expect(parse).toThrow(message);
  });

  it('refuses a carbon_intensity key that is not a list', () => {
    expect(() =>
      configOf((document) => {
        document.carbon_intensity = { cluster_id: 'hpc1' };
      }),
    ).toThrow('carbon_intensity must be a list of carbon intensity records (the import format)');
  });
});
