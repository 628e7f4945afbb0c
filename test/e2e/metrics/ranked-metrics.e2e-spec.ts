import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type SampleSeed,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const BASE = new Date('2026-02-02T00:00:00.000Z').getTime();

function samples(workloadId: string, values: [number, number, number][]): SampleSeed[] {
  return values.map(([gpu, memory, power], index) => ({
    workloadId,
    at: new Date(BASE + index * MINUTE),
    gpuUtilization: gpu,
    memoryUtilization: memory,
    powerUsage: power,
  }));
}

interface Entry {
  workload_id: string;
  name: string;
  initiative_id: string;
  [metric: string]: unknown;
}

describe('GET /v1/workloads/metrics (ranked)', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp();
    orgId = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    const now = Date.now();
    const finished = (minutes: number) => ({
      status: 'completed' as const,
      submittedAt: new Date(BASE - HOUR),
      startedAt: new Date(BASE),
      completedAt: new Date(BASE + minutes * MINUTE),
    });
    await insertWorkloads(t.dataSource, orgId, [
      { workloadId: 'wl-a', name: 'alpha', gpuCount: 1, ...finished(60) },
      { workloadId: 'wl-b', name: 'bravo', gpuCount: 4, ...finished(30) },
      { workloadId: 'wl-c', name: 'charlie', initiativeId: 'init-b', gpuCount: 2, ...finished(30) },
      { workloadId: 'wl-d', name: 'delta', initiativeId: 'init-b', gpuCount: 8, ...finished(90) },
      {
        workloadId: 'wl-e',
        name: 'echo',
        gpuCount: 2,
        status: 'running',
        submittedAt: new Date(now - 3 * HOUR),
        startedAt: new Date(now - 2 * HOUR),
      },
      { workloadId: 'wl-f', name: 'foxtrot', status: 'pending', submittedAt: new Date(now - HOUR) },
    ]);
    // [gpu_utilization, memory_utilization, power_usage], oldest first; the last one is `current`.
    await insertSamples(t.dataSource, orgId, [
      ...samples('wl-a', [
        [10, 40, 100],
        [30, 40, 300],
      ]),
      ...samples('wl-b', [[50, 10, 1000]]),
      ...samples('wl-c', [
        [20, 60, 0],
        [20, 0, 0],
      ]),
      ...samples('wl-e', [
        [80, 5, 450],
        [60, 15, 451],
      ]),
    ]);
  });

  afterAll(() => t.close());

  const get = (query: string, headers = admin) =>
    request(t.server).get(`/v1/workloads/metrics${query}`).set(headers);

  const ranking = (entries: Entry[], metric: string) =>
    entries.map((entry) => [entry.workload_id, entry[metric]]);

  it('defaults: gpu_utilization, desc, limit 10; ties by workload_id ascending; entry shape', async () => {
    const response = await get('').expect(200);
    expect(response.body.data.workloads[0]).toEqual({
      workload_id: 'wl-e',
      name: 'echo',
      initiative_id: 'init-a',
      gpu_count: 2,
      gpu_share: 2,
      gpu_sharing: null,
      gpu_utilization: { avg: 70, current: 60 },
    });
    expect(ranking(response.body.data.workloads, 'gpu_utilization')).toEqual([
      ['wl-e', { avg: 70, current: 60 }],
      ['wl-b', { avg: 50, current: 50 }],
      ['wl-a', { avg: 20, current: 30 }],
      ['wl-c', { avg: 20, current: 20 }],
    ]);
    expect(response.body.data.scope_average).toEqual({ gpu_utilization: 40 });
    expect(response.body.metadata).toEqual({
      total_count: 4,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
    });
  });

  it('asc keeps ties by workload_id ascending', async () => {
    const response = await get('?order=asc').expect(200);
    expect(response.body.data.workloads.map((e: Entry) => e.workload_id)).toEqual([
      'wl-a',
      'wl-c',
      'wl-b',
      'wl-e',
    ]);
  });

  it.each([
    [
      'memory_utilization',
      'desc',
      [
        ['wl-a', 40, 40],
        ['wl-c', 30, 0],
        ['wl-b', 10, 10],
        ['wl-e', 10, 15],
      ],
      22.5,
    ],
    [
      'memory_utilization',
      'asc',
      [
        ['wl-b', 10, 10],
        ['wl-e', 10, 15],
        ['wl-c', 30, 0],
        ['wl-a', 40, 40],
      ],
      22.5,
    ],
    [
      'power_usage',
      'desc',
      [
        ['wl-b', 1000, 1000],
        ['wl-e', 450.5, 451],
        ['wl-a', 200, 300],
        ['wl-c', 0, 0],
      ],
      412.625,
    ],
    [
      'power_usage',
      'asc',
      [
        ['wl-c', 0, 0],
        ['wl-a', 200, 300],
        ['wl-e', 450.5, 451],
        ['wl-b', 1000, 1000],
      ],
      412.625,
    ],
    [
      'gpu_utilization',
      'desc',
      [
        ['wl-e', 70, 60],
        ['wl-b', 50, 50],
        ['wl-a', 20, 30],
        ['wl-c', 20, 20],
      ],
      40,
    ],
  ] as const)('sort_by=%s order=%s', async (metric, order, expected, average) => {
    const response = await get(`?sort_by=${metric}&order=${order}`).expect(200);
    expect(ranking(response.body.data.workloads, metric)).toEqual(
      expected.map(([id, avg, current]) => [id, { avg, current }]),
    );
    expect(response.body.data.scope_average).toEqual({ [metric]: average });
    expect(response.body.metadata.total_count).toBe(4);
  });

  it('gpu_hours ranks every workload, running ones up to now, pending at 0; avg = current', async () => {
    const desc = await get('?sort_by=gpu_hours').expect(200);
    const entries: Entry[] = desc.body.data.workloads;
    expect(entries.map((e) => e.workload_id)).toEqual(['wl-d', 'wl-e', 'wl-b', 'wl-a', 'wl-c', 'wl-f']);
    const hours = entries.map((e) => e.gpu_hours as { avg: number; current: number });
    expect(hours.map((h) => h.avg === h.current)).toEqual(Array(6).fill(true));
    expect(hours[0].avg).toBe(12);
    expect(hours[1].avg).toBeGreaterThanOrEqual(4);
    expect(hours[1].avg).toBeLessThan(4.05);
    expect(hours.slice(2).map((h) => h.avg)).toEqual([2, 1, 1, 0]);
    expect(desc.body.metadata.total_count).toBe(6);
    expect(desc.body.data.scope_average.gpu_hours).toBeCloseTo((12 + hours[1].avg + 2 + 1 + 1) / 6, 3);

    const asc = await get('?sort_by=gpu_hours&order=asc').expect(200);
    expect(asc.body.data.workloads.map((e: Entry) => e.workload_id)).toEqual([
      'wl-f',
      'wl-a',
      'wl-c',
      'wl-b',
      'wl-e',
      'wl-d',
    ]);
  });

  it('scope_average and total_count do not depend on limit', async () => {
    const response = await get('?limit=1&order=asc&sort_by=power_usage').expect(200);
    expect(ranking(response.body.data.workloads, 'power_usage')).toEqual([['wl-c', { avg: 0, current: 0 }]]);
    expect(response.body.data.scope_average).toEqual({ power_usage: 412.625 });
    expect(response.body.metadata).toEqual({
      total_count: 4,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
    });
    const hours = await get('?limit=2&sort_by=gpu_hours').expect(200);
    expect(hours.body.data.workloads).toHaveLength(2);
    expect(hours.body.metadata.total_count).toBe(6);
  });

  it('filters by status and initiative', async () => {
    const completed = await get('?status=completed').expect(200);
    expect(completed.body.data.workloads.map((e: Entry) => e.workload_id)).toEqual(['wl-b', 'wl-a', 'wl-c']);
    expect(completed.body.data.scope_average).toEqual({ gpu_utilization: 30 });
    const initiative = await get('?initiative_id=init-b&sort_by=gpu_hours').expect(200);
    expect(initiative.body.data.workloads.map((e: Entry) => e.workload_id)).toEqual(['wl-d', 'wl-c']);
    expect(initiative.body.data.scope_average).toEqual({ gpu_hours: 6.5 });
    const unknown = await get('?initiative_id=init-zzz').expect(200);
    expect(unknown.body.data).toEqual({ workloads: [], scope_average: { gpu_utilization: null } });
    expect(unknown.body.metadata).toEqual({
      total_count: 0,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
    });
  });

  it('MEMBER sees only their initiatives; another initiative is 403', async () => {
    const response = await get('', memberOfB).expect(200);
    expect(ranking(response.body.data.workloads, 'gpu_utilization')).toEqual([
      ['wl-c', { avg: 20, current: 20 }],
    ]);
    expect(response.body.data.scope_average).toEqual({ gpu_utilization: 20 });
    expect(response.body.metadata).toEqual({
      total_count: 1,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
    });
    const hours = await get('?sort_by=gpu_hours', memberOfB).expect(200);
    expect(hours.body.metadata.total_count).toBe(2);
    expect(hours.body.data.scope_average).toEqual({ gpu_hours: 6.5 });
    expect((await get('?initiative_id=init-a', memberOfB).expect(403)).body.error.code).toBe('FORBIDDEN');
  });

  it('validates sort_by, order, limit and status', async () => {
    const response = await get('?sort_by=temperature&order=up&limit=0&status=done').expect(400);
    const fields = response.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['limit', 'order', 'sort_by', 'status']);
    await get('?limit=101').expect(400);
    await get('?limit=100').expect(200);
  });
});
