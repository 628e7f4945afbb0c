import type { DataSource } from 'typeorm';
import { openDataSource } from '../../../src/database/database-target';
import { DEMO_ORGANIZATION_ID, writeDemoData } from '../../../src/demo/demo-data';
import { ALL_SAMPLES_SQL } from '../../support/samples';

const TABLES = [
  'organizations',
  'initiatives',
  'capacity_pools',
  'pool_instance_types',
  'allocations',
  'members',
  'workloads',
  'metric_samples',
];

let dataSource: DataSource;

beforeAll(async () => {
  dataSource = await openDataSource(process.env.GPUCAP_TEST_DATABASE_URL as string, 4);
});

afterAll(async () => {
  await dataSource.destroy();
});

async function snapshot(): Promise<string> {
  const parts: string[] = [];
  for (const table of TABLES) {
    const [row] = await dataSource.query(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text || xmin::text, '|' ORDER BY t::text), '')) AS sum
       FROM ${table} t WHERE organization_id = $1`,
      [DEMO_ORGANIZATION_ID],
    );
    parts.push(`${table}:${row.n}:${row.sum}`);
  }
  return parts.join(' ');
}

describe('gpucap demo-data', () => {
  it('writes a realistic organization and running it again with the same seed changes nothing', async () => {
    const now = new Date('2026-11-22T03:00:00Z');
    const summary = await writeDemoData(dataSource, { workloads: 300, seed: 5, now });
    expect(summary).toMatchObject({ organizationId: 'org-demo', workloads: 300 });
    expect(summary.samples).toBeGreaterThan(0);
    const before = await snapshot();
    await writeDemoData(dataSource, { workloads: 300, seed: 5, now });
    expect(await snapshot()).toBe(before);

    const [organization] = await dataSource.query(
      `SELECT name, timezone, budget_period_start, budget_period_end FROM organizations WHERE organization_id = $1`,
      [DEMO_ORGANIZATION_ID],
    );
    // The quarter from New York's midnight (EDT) to New York's midnight (EST).
    expect(organization).toEqual({
      name: 'Demo Robotics',
      timezone: 'America/New_York',
      budget_period_start: new Date('2026-10-01T04:00:00Z'),
      budget_period_end: new Date('2027-01-01T05:00:00Z'),
    });
    const [counts] = await dataSource.query(
      `SELECT (SELECT count(*)::int FROM initiatives WHERE organization_id = $1) AS initiatives,
              (SELECT count(*)::int FROM members WHERE organization_id = $1) AS members,
              (SELECT count(*)::int FROM capacity_pools WHERE organization_id = $1) AS pools,
              (SELECT count(*)::int FROM workloads WHERE organization_id = $1) AS workloads,
              (SELECT count(*)::int FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1) AS samples`,
      [DEMO_ORGANIZATION_ID],
    );
    expect(counts).toEqual({
      initiatives: 6,
      members: 40,
      pools: 4,
      workloads: 300,
      samples: summary.samples,
    });
  });
});
