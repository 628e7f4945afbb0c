import { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../../../src/database/database-target';
import { ImportFormatError, ImportRejectedError } from '../../../src/import/import-errors';
import { importDataset } from '../../../src/import/import.service';
import { type Dataset, fixtureDataset } from '../../support/import-fixture';
import { ALL_SAMPLES_SQL } from '../../support/samples';

const KINDS =
  'organization, initiative, pool, allocation, member, price, carbon_intensity, instance_type, workload, metric_sample';
const REVERSED = [
  'metric_samples',
  'workloads',
  'instance_types',
  'carbon_intensity',
  'prices',
  'members',
  'allocations',
  'pools',
  'initiatives',
  'organizations',
];

let dataSource: DataSource;

beforeAll(async () => {
  dataSource = await openDataSource(process.env.GPUCAP_TEST_DATABASE_URL as string, 4);
});

afterAll(async () => {
  await dataSource.destroy();
});

function reordered(data: Dataset, order: string[]): Dataset {
  return Object.fromEntries(order.map((section) => [section, data[section]]));
}

async function rowCounts(organizationId: string): Promise<Record<string, number>> {
  const [counts] = await dataSource.query(
    `SELECT (SELECT count(*)::int FROM organizations WHERE organization_id = $1) AS organizations,
            (SELECT count(*)::int FROM workloads WHERE organization_id = $1) AS workloads,
            (SELECT count(*)::int FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1) AS samples`,
    [organizationId],
  );
  return counts;
}

async function failure(text: string): Promise<unknown> {
  return importDataset(dataSource, Readable.from([text])).then(
    () => null,
    (caught: unknown) => caught,
  );
}

describe('gpucap import, streamed', () => {
  it('imports a JSON document whose sections come children first', async () => {
    const { organizationId, data } = fixtureDataset('org-stream');
    const text = JSON.stringify(reordered(data, REVERSED));
    const summary = await importDataset(dataSource, Readable.from([text.slice(0, 100), text.slice(100)]));
    expect(summary.format).toBe('json');
    expect(summary.records).toEqual({
      organizations: 1,
      initiatives: 2,
      pools: 2,
      allocations: 2,
      members: 3,
      prices: 2,
      carbon_intensity: 2,
      instance_types: 2,
      workloads: 5,
      metric_samples: 3,
    });
    expect(await rowCounts(organizationId)).toEqual({ organizations: 1, workloads: 5, samples: 3 });
    const samples = await dataSource.query(
      `SELECT workload_id, sampled_at, gpu_utilization FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1 ORDER BY 2`,
      [organizationId],
    );
    expect(samples).toEqual([
      { workload_id: 'wl-0001', sampled_at: new Date('2026-11-20T08:03:00Z'), gpu_utilization: 87.5 },
      { workload_id: 'wl-0001', sampled_at: new Date('2026-11-20T08:03:30Z'), gpu_utilization: 90.25 },
      { workload_id: 'wl-0002', sampled_at: new Date('2026-11-21T08:06:00Z'), gpu_utilization: 0 },
    ]);
  });

  it('names records by section and index in a reordered document that breaks a rule', async () => {
    const { organizationId, data } = fixtureDataset('org-stream');
    data.workloads[2].gpu_count = -1;
    const error = await failure(JSON.stringify(reordered(data, REVERSED)));
    expect(error).toBeInstanceOf(ImportRejectedError);
    expect((error as ImportRejectedError).lines()).toEqual([
      'workloads[2]: gpu_count must be an integer from 0 to 100000',
    ]);
    expect(await rowCounts(organizationId)).toEqual({ organizations: 0, workloads: 0, samples: 0 });
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'rejects the NDJSON kind %s with the list of kinds and writes nothing',
    async (kind) => {
      const { organizationId, data } = fixtureDataset('org-stream');
      const lines = [
        JSON.stringify({ kind: 'organization', ...data.organizations[0] }),
        JSON.stringify({ kind, ...data.initiatives[0] }),
      ];
      const error = await failure(lines.join('\n'));
      expect(error).toBeInstanceOf(ImportRejectedError);
      expect((error as ImportRejectedError).lines()).toEqual([`line 2: "kind" must be one of ${KINDS}`]);
      expect(await rowCounts(organizationId)).toEqual({ organizations: 0, workloads: 0, samples: 0 });
    },
  );

  it('rejects a document with a section named constructor and writes nothing', async () => {
    const { organizationId, data } = fixtureDataset('org-stream');
    const error = await failure(JSON.stringify({ ...data, constructor: [] }));
    expect(error).toBeInstanceOf(ImportFormatError);
    expect((error as Error).message).toBe(
      "unknown section 'constructor' (sections: organizations, initiatives, pools, allocations, members, prices, carbon_intensity, instance_types, workloads, metric_samples)",
    );
    expect(await rowCounts(organizationId)).toEqual({ organizations: 0, workloads: 0, samples: 0 });
  });
});
