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
import { SAMPLE_STORES, sealForStore } from '../../support/samples';

const MS = 1;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const END = new Date('2026-03-10T12:00:00.000Z').getTime();
const START = END - 50 * HOUR;

/** gpu_utilization v; the other metrics follow it so every one is checked with distinct numbers. */
function sample(workloadId: string, at: number, v: number): SampleSeed {
  return {
    workloadId,
    at: new Date(at),
    gpuUtilization: v,
    memoryUtilization: v / 2,
    temperature: 50 + v,
    powerUsage: v * 10,
  };
}

describe.each(SAMPLE_STORES)('GET /v1/workloads/:workload_id/metrics, readings in %s', (store) => {
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
    await insertWorkloads(t.dataSource, orgId, [
      {
        workloadId: 'finished',
        gpuCount: 8,
        status: 'completed',
        submittedAt: new Date(START - HOUR),
        startedAt: new Date(START),
        completedAt: new Date(END),
      },
      {
        workloadId: 'running',
        initiativeId: 'init-b',
        gpuCount: 2,
        status: 'running',
        submittedAt: new Date(now - 4 * HOUR),
        startedAt: new Date(now - 3 * HOUR),
      },
      {
        workloadId: 'quarter',
        gpuCount: 8,
        status: 'completed',
        submittedAt: new Date(END - 3 * HOUR),
        startedAt: new Date(END - 3 * HOUR),
        completedAt: new Date(END),
      },
      { workloadId: 'pending', status: 'pending', submittedAt: new Date(now - HOUR) },
      { workloadId: 'silent', status: 'completed', submittedAt: new Date(END - 3 * HOUR) },
    ]);
    await insertSamples(t.dataSource, orgId, [
      sample('finished', START - MS, 1),
      sample('finished', START, 2),
      sample('finished', END - 24 * HOUR - MS, 3),
      sample('finished', END - 24 * HOUR, 4),
      sample('finished', END - 6 * HOUR - MS, 5),
      sample('finished', END - 6 * HOUR, 6),
      sample('finished', END - HOUR - MS, 7),
      sample('finished', END - HOUR, 8),
      sample('finished', END - 30 * MINUTE, 90),
      sample('finished', END, 10),
      sample('finished', END + MS, 11),
      sample('running', now - 61 * MINUTE, 99),
      sample('running', now - 59 * MINUTE, 40),
      sample('running', now - MINUTE, 60),
      sample('quarter', END - 2 * HOUR, 25),
    ]);
    await sealForStore(t.dataSource, [orgId], store);
  });

  afterAll(() => t.close());

  const get = (id: string, query = '', headers = admin) =>
    request(t.server).get(`/v1/workloads/${id}/metrics${query}`).set(headers);

  it('defaults to last_1h and all five metrics; both window edges are in, 1 ms outside is out', async () => {
    const response = await get('finished').expect(200);
    expect(response.body.data).toEqual({
      workload_id: 'finished',
      time_range: 'last_1h',
      metrics: {
        gpu_utilization: { avg: 36, min: 8, max: 90, current: 10 },
        memory_utilization: { avg: 18, min: 4, max: 45, current: 5 },
        temperature: { avg: 86, min: 58, max: 140, current: 60 },
        power_usage: { avg: 360, min: 80, max: 900, current: 100 },
        gpu_usage: { avg: 2.88, min: 0.64, max: 7.2, current: 0.8 },
      },
    });
  });

  it.each([
    ['last_6h', { avg: 24.2, min: 6, max: 90, current: 10 }],
    ['last_24h', { avg: 18.5714, min: 4, max: 90, current: 10 }],
    ['job_lifetime', { avg: 15, min: 2, max: 90, current: 10 }],
  ])('%s of a finished workload ends at completed_at', async (range, expected) => {
    const response = await get('finished', `?time_range=${range}&metrics=gpu_utilization`).expect(200);
    expect(response.body.data).toEqual({
      workload_id: 'finished',
      time_range: range,
      metrics: { gpu_utilization: expected },
    });
  });

  it('a running workload: the window ends now, current is the latest sample', async () => {
    const response = await get('running', '?metrics=gpu_utilization,gpu_usage').expect(200);
    expect(response.body.data.metrics).toEqual({
      gpu_utilization: { avg: 50, min: 40, max: 60, current: 60 },
      gpu_usage: { avg: 1, min: 0.8, max: 1.2, current: 1.2 },
    });
    const lifetime = await get('running', '?time_range=job_lifetime&metrics=gpu_utilization').expect(200);
    expect(lifetime.body.data.metrics.gpu_utilization).toEqual({
      avg: 66.3333,
      min: 40,
      max: 99,
      current: 60,
    });
  });

  it('gpu_usage = gpu_count × utilization / 100: 8 GPUs at 25 % is 2.0', async () => {
    const response = await get('quarter', '?time_range=last_6h&metrics=gpu_usage').expect(200);
    expect(response.body.data.metrics).toEqual({ gpu_usage: { avg: 2, min: 2, max: 2, current: 2 } });
  });

  it('no sample in the window: all four are null (pending job_lifetime, silent workload, empty window)', async () => {
    const nulls = { avg: null, min: null, max: null, current: null };
    for (const [id, range] of [
      ['pending', 'job_lifetime'],
      ['pending', 'last_24h'],
      ['silent', 'job_lifetime'],
      ['quarter', 'last_1h'],
    ]) {
      const response = await get(id, `?time_range=${range}&metrics=temperature,gpu_usage`).expect(200);
      expect(response.body.data.metrics).toEqual({ temperature: nulls, gpu_usage: nulls });
    }
  });

  it('repeats in metrics are ignored', async () => {
    const response = await get('finished', '?metrics=gpu_usage,power_usage,gpu_usage').expect(200);
    expect(Object.keys(response.body.data.metrics).sort()).toEqual(['gpu_usage', 'power_usage']);
  });

  it('a repeated metrics parameter names the union of its lists', async () => {
    const repeated = await get('finished', '?metrics=gpu_usage&metrics=power_usage,gpu_usage').expect(200);
    const listed = await get('finished', '?metrics=gpu_usage,power_usage').expect(200);
    expect(Object.keys(repeated.body.data.metrics).sort()).toEqual(['gpu_usage', 'power_usage']);
    expect(repeated.body.data).toEqual(listed.body.data);
    const unknown = await get('finished', '?metrics=gpu_usage&metrics=fan').expect(400);
    expect(unknown.body.error.details).toEqual([
      expect.objectContaining({ field: 'metrics', location: 'query', value: 'gpu_usage,fan' }),
    ]);
  });

  it('unknown metric names are a 400 naming them', async () => {
    const response = await get('finished', '?metrics=gpu_utilization,gpu_temp,fan').expect(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(response.body.error.details).toHaveLength(1);
    const [detail] = response.body.error.details;
    expect(detail).toMatchObject({
      field: 'metrics',
      location: 'query',
      value: 'gpu_utilization,gpu_temp,fan',
    });
    expect(detail.issue).toContain("'gpu_temp'");
    expect(detail.issue).toContain("'fan'");
    expect(detail.issue).not.toContain("'gpu_utilization'");
  });

  it('rejects a bad time_range, an empty metrics list and unknown parameters, all at once', async () => {
    const response = await get('finished', '?time_range=last_2h&metrics=&foo=1').expect(400);
    const fields = response.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['foo', 'metrics', 'time_range']);
  });

  it('404 for an unknown workload and one outside the caller scope; 400 for a malformed id', async () => {
    expect((await get('nope').expect(404)).body.error.code).toBe('NOT_FOUND');
    expect((await get('finished', '', memberOfB).expect(404)).body.error.code).toBe('NOT_FOUND');
    const inScope = await get('running', '?metrics=gpu_utilization', memberOfB).expect(200);
    expect(inScope.body.data.metrics.gpu_utilization.current).toBe(60);
    const malformed = await get('bad%20id!').expect(400);
    expect(malformed.body.error.details[0]).toMatchObject({ field: 'workload_id', location: 'path' });
  });
});
