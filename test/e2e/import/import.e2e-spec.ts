import { spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../../../src/database/database-target';
import { ImportRejectedError } from '../../../src/import/import-errors';
import { importDataset } from '../../../src/import/import.service';
import { type Dataset, fixtureDataset, PROJECT_ROOT } from '../../support/import-fixture';
import { ALL_SAMPLES_SQL } from '../../support/samples';

const TABLES = [
  'organizations',
  'initiatives',
  'capacity_pools',
  'pool_instance_types',
  'allocations',
  'members',
  'carbon_intensities',
  'instance_type_gpus',
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

function streamOf(text: string): Readable {
  return Readable.from([text]);
}

async function importJson(data: unknown) {
  return importDataset(dataSource, streamOf(JSON.stringify(data)));
}

/** Every row of every table for the organization, with row versions: any write changes it. */
async function snapshot(organizationId: string): Promise<string> {
  const parts: string[] = [];
  for (const table of TABLES) {
    const [row] = await dataSource.query(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text || xmin::text, '|' ORDER BY t::text), '')) AS sum
       FROM ${table} t WHERE organization_id = $1`,
      [organizationId],
    );
    parts.push(`${table}:${row.n}:${row.sum}`);
  }
  return parts.join(' ');
}

async function rejection(promise: Promise<unknown>): Promise<string[]> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ImportRejectedError);
  return (error as ImportRejectedError).lines();
}

function ndjson(data: Dataset, order: string[]): string {
  const kinds: Record<string, string> = {
    organizations: 'organization',
    initiatives: 'initiative',
    pools: 'pool',
    allocations: 'allocation',
    members: 'member',
    instance_types: 'instance_type',
    workloads: 'workload',
    metric_samples: 'metric_sample',
  };
  return order
    .flatMap((section) =>
      (data[section] ?? []).map((record) => JSON.stringify({ kind: kinds[section], ...record })),
    )
    .join('\n');
}

describe('gpucap import', () => {
  it('imports a valid JSON document with exact values', async () => {
    const { organizationId, data } = fixtureDataset('org-imp');
    const summary = await importJson(data);
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

    const [organization] = await dataSource.query(
      `SELECT name, timezone, budget_period_start, budget_period_end, max_sample_gap_seconds
       FROM organizations WHERE organization_id = $1`,
      [organizationId],
    );
    expect(organization).toEqual({
      name: 'Fixture Robotics',
      timezone: 'Europe/Berlin',
      budget_period_start: new Date('2026-10-01T00:00:00Z'),
      budget_period_end: new Date('2027-01-01T00:00:00Z'),
      max_sample_gap_seconds: 300,
    });
    const intensities = await dataSource.query(
      `SELECT cluster_id, effective_from, effective_to, grams_co2e_per_kwh::text AS grams, pue::text AS pue
       FROM carbon_intensities WHERE organization_id = $1 ORDER BY effective_from`,
      [organizationId],
    );
    expect(intensities).toEqual([
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-20T08:00:00Z'),
        effective_to: new Date('2026-11-20T09:00:00Z'),
        grams: '412.5',
        pue: '1.18',
      },
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-20T09:00:00Z'),
        effective_to: null,
        grams: '0',
        pue: '1',
      },
    ]);
    const initiatives = await dataSource.query(
      `SELECT initiative_id, name FROM initiatives WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(initiatives).toEqual([
      { initiative_id: 'nlp', name: 'NLP \\ Speech, "quoted"' },
      { initiative_id: 'vision', name: 'Vision' },
    ]);
    const types = await dataSource.query(
      `SELECT instance_type, pool_id FROM pool_instance_types WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(types).toEqual([
      { instance_type: 'g5.12xlarge', pool_id: 'a10g' },
      { instance_type: 'g5.48xlarge', pool_id: 'a10g' },
      { instance_type: 'p5.48xlarge', pool_id: 'h100' },
    ]);
    const gpus = await dataSource.query(
      `SELECT instance_type, gpu_model, gpu_memory_gib, mig_capable, mig_profiles
       FROM instance_type_gpus WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(gpus).toEqual([
      {
        instance_type: 'onprem-a100',
        gpu_model: 'A100 80GB PCIe',
        gpu_memory_gib: 80,
        mig_capable: true,
        mig_profiles: [
          { profile: '1g.10gb', memory_gib: 10, compute_slices: 1 },
          { profile: '2g.20gb', memory_gib: 20, compute_slices: 2 },
          { profile: '3g.40gb', memory_gib: 40, compute_slices: 3 },
          { profile: '7g.80gb', memory_gib: 80, compute_slices: 7 },
        ],
      },
      {
        instance_type: 'onprem-l4',
        gpu_model: 'L4 24GB',
        gpu_memory_gib: 24,
        mig_capable: false,
        mig_profiles: [],
      },
    ]);
    const members = await dataSource.query(
      `SELECT subject, role, initiative_ids FROM members WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(members).toEqual([
      { subject: 'alice@fixture.example', role: 'TEAM_LEAD', initiative_ids: ['vision'] },
      { subject: 'bob@fixture.example', role: 'MEMBER', initiative_ids: ['vision', 'nlp'] },
      { subject: 'root@fixture.example', role: 'ORG_ADMIN', initiative_ids: [] },
    ]);
    const allocations = await dataSource.query(
      `SELECT initiative_id, pool_id, allocated_gpu_hours FROM allocations WHERE organization_id = $1 ORDER BY 1`,
      [organizationId],
    );
    expect(allocations).toEqual([
      { initiative_id: 'nlp', pool_id: 'a10g', allocated_gpu_hours: 1234.5 },
      { initiative_id: 'vision', pool_id: 'h100', allocated_gpu_hours: 5000 },
    ]);
    const workloads = await dataSource.query(
      `SELECT workload_id, initiative_id, name, status, submitted_by, instance_type, gpu_count, is_managed,
              cluster_id, namespace, submitted_at, started_at, completed_at, exit_code
       FROM workloads WHERE organization_id = $1 ORDER BY workload_id`,
      [organizationId],
    );
    expect(workloads.map((w: { workload_id: string; status: string }) => [w.workload_id, w.status])).toEqual([
      ['wl-0001', 'completed'],
      ['wl-0002', 'running'],
      ['wl-0003', 'pending'],
      ['wl-0004', 'cancelled'],
      ['wl-0005', 'failed'],
    ]);
    expect(workloads[1]).toEqual({
      workload_id: 'wl-0002',
      initiative_id: 'nlp',
      name: 'bert-finetune',
      status: 'running',
      submitted_by: 'bob@fixture.example',
      instance_type: 'g5.12xlarge',
      gpu_count: 4,
      is_managed: false,
      cluster_id: 'eks-use1',
      namespace: 'nlp',
      submitted_at: new Date('2026-11-21T08:00:00Z'),
      started_at: new Date('2026-11-21T08:05:00Z'),
      completed_at: null,
      exit_code: null,
    });
    expect(workloads[3]).toMatchObject({
      started_at: null,
      completed_at: new Date('2026-11-19T11:00:00Z'),
      exit_code: null,
    });
    const samples = await dataSource.query(
      `SELECT workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage
       FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1 ORDER BY workload_id, sampled_at`,
      [organizationId],
    );
    expect(samples).toEqual([
      {
        workload_id: 'wl-0001',
        sampled_at: new Date('2026-11-20T08:03:00Z'),
        gpu_utilization: 87.5,
        memory_utilization: 61,
        temperature: 71,
        power_usage: 5120,
      },
      {
        workload_id: 'wl-0001',
        sampled_at: new Date('2026-11-20T08:03:30Z'),
        gpu_utilization: 90.25,
        memory_utilization: 62.5,
        temperature: 72.5,
        power_usage: 5200.5,
      },
      {
        workload_id: 'wl-0002',
        sampled_at: new Date('2026-11-21T08:06:00Z'),
        gpu_utilization: 0,
        memory_utilization: 100,
        temperature: 40,
        power_usage: 0,
      },
    ]);
  });

  it('changes nothing when the same file is imported twice', async () => {
    const { organizationId, data } = fixtureDataset('org-imp');
    await importJson(data);
    const before = await snapshot(organizationId);
    const again = await importJson(data);
    expect(Object.values(again.written)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(await snapshot(organizationId)).toBe(before);
  });

  it('updates changed records and replaces pool instance types and member initiatives', async () => {
    const { organizationId, data } = fixtureDataset('org-imp');
    await importJson(data);
    data.pools[1].instance_types = ['g5.48xlarge', 'g6.12xlarge'];
    data.members[1].initiative_ids = ['nlp'];
    data.workloads[1] = {
      ...data.workloads[1],
      status: 'completed',
      completed_at: '2026-11-21T09:00:00Z',
      exit_code: 0,
    };
    data.metric_samples[0].gpu_utilization = 50;
    const summary = await importJson(data);
    expect(summary.written).toMatchObject({
      pools: 2,
      members: 1,
      workloads: 1,
      metric_samples: 1,
      initiatives: 0,
    });
    const types = await dataSource.query(
      `SELECT instance_type FROM pool_instance_types WHERE organization_id = $1 AND pool_id = 'a10g' ORDER BY 1`,
      [organizationId],
    );
    expect(types).toEqual([{ instance_type: 'g5.48xlarge' }, { instance_type: 'g6.12xlarge' }]);
    const [member] = await dataSource.query(
      `SELECT initiative_ids FROM members WHERE organization_id = $1 AND subject = 'bob@fixture.example'`,
      [organizationId],
    );
    expect(member.initiative_ids).toEqual(['nlp']);
    const [sample] = await dataSource.query(
      `SELECT gpu_utilization FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1 AND sampled_at = '2026-11-20T08:03:00Z'`,
      [organizationId],
    );
    expect(sample.gpu_utilization).toBe(50);
  });

  describe('rejects a file with one bad record and writes nothing', () => {
    const cases: [string, (data: Dataset, organizationId: string) => void, string][] = [
      ['unknown status', (d) => (d.workloads[2].status = 'queued'), 'workloads[2]: status must be one of'],
      [
        'times out of order',
        (d) => (d.workloads[0].started_at = '2026-11-20T07:00:00Z'),
        'workloads[0]: started_at must not be before submitted_at',
      ],
      [
        'status inconsistent with times',
        (d) => (d.workloads[1].completed_at = '2026-11-21T09:00:00Z'),
        'workloads[1]: completed_at must be null for a running workload',
      ],
      [
        'percentage out of range',
        (d) => (d.metric_samples[2].gpu_utilization = 100.1),
        'metric_samples[2]: gpu_utilization must be a number from 0 to 100',
      ],
      [
        'derived field',
        (d) => (d.workloads[0].gpu_hours_used = 16),
        'workloads[0]: gpu_hours_used is derived by the service and cannot be imported',
      ],
      ['unknown field', (d) => (d.pools[0].region = 'us-east-1'), "pools[0]: unknown field 'region'"],
      [
        'bad time zone',
        (d) => (d.organizations[0].timezone = 'Moon/Base'),
        'organizations[0]: timezone must be an IANA',
      ],
      [
        'timestamp without offset',
        (d) => (d.metric_samples[0].timestamp = '2026-11-20T08:03:00'),
        'metric_samples[0]: timestamp must be an ISO 8601 timestamp with an offset',
      ],
      [
        'bad identifier',
        (d) => (d.workloads[4].workload_id = 'wl 5'),
        'workloads[4]: workload_id must be an identifier',
      ],
      [
        'instance type in two pools',
        (d) => (d.pools[1].instance_types = ['g5.12xlarge', 'p5.48xlarge']),
        "pools[1]: instance type 'p5.48xlarge' is already in pool 'h100'",
      ],
      [
        'unknown initiative',
        (d) => (d.workloads[3].initiative_id = 'speech'),
        "workloads[3]: initiative 'speech' does not exist in organization",
      ],
      [
        'sample of an unknown workload',
        (d) => (d.metric_samples[1].workload_id = 'wl-9999'),
        "metric_samples[1]: workload 'wl-9999' does not exist in organization",
      ],
      [
        'initiative of another organization',
        (d, organizationId) => {
          d.organizations.push({ ...d.organizations[0], organization_id: `${organizationId}-b` });
          d.initiatives.push({
            organization_id: `${organizationId}-b`,
            initiative_id: 'speech',
            name: 'Speech',
          });
          d.allocations[0].initiative_id = 'speech';
        },
        `allocations[0]: initiative 'speech' belongs to organization '`,
      ],
      [
        'repeated sample',
        (d) => {
          const sample = { ...d.metric_samples[0], timestamp: '2026-11-20T09:00:00Z' };
          d.metric_samples.push(sample, { ...sample, gpu_utilization: 1 });
        },
        'metric_samples[4]: repeats the sample of workload',
      ],
    ];

    it.each(cases)('%s', async (_name, breakIt, expected) => {
      const { organizationId, data } = fixtureDataset('org-imp');
      await importJson(data);
      const before = await snapshot(organizationId);
      data.organizations[0].name = 'Changed name';
      data.workloads[0].name = 'changed';
      breakIt(data, organizationId);
      const lines = await rejection(importJson(data));
      expect(lines.join('\n')).toContain(expected);
      expect(await snapshot(organizationId)).toBe(before);
    });

    it('reports every bad record, not only the first', async () => {
      const { organizationId, data } = fixtureDataset('org-imp');
      data.workloads[1].gpu_count = -1;
      data.workloads[3].status = 'paused';
      data.metric_samples[0].power_usage = -5;
      const lines = await rejection(importJson(data));
      expect(lines).toEqual([
        'workloads[1]: gpu_count must be an integer from 0 to 100000',
        'workloads[3]: status must be one of pending, running, completed, failed, cancelled (unknown status "paused")',
        'metric_samples[0]: power_usage must be a number greater than or equal to 0',
      ]);
      expect(await snapshot(organizationId)).toBe(
        TABLES.map((table) => `${table}:0:${'d41d8cd98f00b204e9800998ecf8427e'}`).join(' '),
      );
    });
  });

  it('imports NDJSON in any order and names lines in errors', async () => {
    const { organizationId, data } = fixtureDataset('org-imp');
    const text = ndjson(data, [
      'metric_samples',
      'workloads',
      'instance_types',
      'members',
      'allocations',
      'pools',
      'initiatives',
      'organizations',
    ]);
    const summary = await importDataset(dataSource, streamOf(`${text}\n`));
    expect(summary.format).toBe('ndjson');
    expect(summary.written.workloads).toBe(5);
    expect(summary.written.instance_types).toBe(2);
    const [{ n }] = await dataSource.query(
      `SELECT count(*)::int AS n FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1`,
      [organizationId],
    );
    expect(n).toBe(3);

    const broken = text.split('\n');
    broken[4] = broken[4].replace('"status":"running"', '"status":"sleeping"');
    broken.splice(6, 0, '{not json');
    const lines = await rejection(importDataset(dataSource, streamOf(broken.join('\n'))));
    expect(lines[0]).toMatch(/^line 5: status must be one of/);
    expect(lines[1]).toMatch(/^line 7: is not valid JSON/);
  });

  it('reads standard input through the command line and exits non-zero on a bad file', () => {
    const { organizationId, data } = fixtureDataset('org-imp');
    const env = { ...process.env, DATABASE_URL: process.env.GPUCAP_TEST_DATABASE_URL };
    const ok = spawnSync('node', ['bin/gpucap.js', 'import', '-'], {
      cwd: PROJECT_ROOT,
      env,
      input: ndjson(data, [
        'organizations',
        'initiatives',
        'pools',
        'allocations',
        'members',
        'workloads',
        'metric_samples',
      ]),
      encoding: 'utf8',
    });
    expect(ok.stderr).toContain('Imported 18 records');
    expect(ok.status).toBe(0);

    data.workloads[0].status = 'weird';
    const bad = spawnSync('node', ['bin/gpucap.js', 'import', '-'], {
      cwd: PROJECT_ROOT,
      env,
      input: JSON.stringify(data),
      encoding: 'utf8',
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('Import rejected, nothing was written:');
    expect(bad.stderr).toContain('workloads[0]: status must be one of');
    expect(bad.stderr).not.toMatch(/\s+at .*\.ts:\d+/);
    expect(organizationId).toBeTruthy();
  });
});
