import request from 'supertest';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { Clock } from '../../../src/common/clock';
import { createTestApp, TestApp } from '../../support/test-app';

describe('GET /v1/workloads/:workload_id', () => {
  let testApp: TestApp;
  let organizationId: string;
  let admin: Record<string, string>;
  let member: Record<string, string>;
  let lead: Record<string, string>;
  const runningStart = new Date(Date.now() - 2 * 3600_000 - 30_000);

  beforeAll(async () => {
    testApp = await createTestApp();
    organizationId = await seedOrganization(testApp.dataSource, {
      initiatives: ['init-a', 'init-b', 'init-c'],
    });
    await insertWorkloads(testApp.dataSource, organizationId, [
      {
        workloadId: 'wl-done',
        initiativeId: 'init-a',
        status: 'completed',
        gpuCount: 8,
        name: 'resnet',
        isManaged: false,
        clusterId: 'eks-use1',
        namespace: 'vision',
        instanceType: 'p4d.24xlarge',
        submittedBy: 'alice@x.example',
        submittedAt: '2026-11-20T08:00:00Z',
        startedAt: '2026-11-20T08:02:00Z',
        completedAt: '2026-11-20T10:02:07.900Z',
        exitCode: 0,
      },
      {
        workloadId: 'wl-run',
        initiativeId: 'init-b',
        status: 'running',
        gpuCount: 3,
        submittedAt: new Date(runningStart.getTime() - 60_000),
        startedAt: runningStart,
      },
      { workloadId: 'wl-wait', initiativeId: 'init-c', status: 'pending', gpuCount: 4 },
      {
        workloadId: 'wl-gone',
        initiativeId: 'init-a',
        status: 'cancelled',
        startedAt: null,
        submittedAt: '2026-11-20T08:00:00Z',
        completedAt: '2026-11-20T08:05:00Z',
        exitCode: null,
      },
      {
        workloadId: 'wl-bad',
        initiativeId: 'init-a',
        status: 'failed',
        gpuCount: 2,
        submittedAt: '2026-11-20T08:00:00Z',
        startedAt: '2026-11-20T08:00:00Z',
        completedAt: '2026-11-20T08:00:10Z',
        exitCode: 137,
      },
    ]);
    admin = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
    member = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, {
        role: 'MEMBER',
        initiativeIds: ['init-a', 'init-b'],
      }),
      organizationId,
    );
    lead = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, {
        role: 'TEAM_LEAD',
        initiativeIds: ['init-c'],
      }),
      organizationId,
    );
  });

  afterAll(async () => {
    await testApp.close();
  });

  const get = (path: string, headers = admin) =>
    request(testApp.server).get(`/v1/workloads/${path}`).set(headers);

  it('returns the detail of a completed workload with whole-second duration and GPU hours', async () => {
    const response = await get('wl-done').expect(200);
    expect(response.body.data).toEqual({
      workload_id: 'wl-done',
      name: 'resnet',
      status: 'completed',
      submitted_by: 'alice@x.example',
      initiative_id: 'init-a',
      instance_type: 'p4d.24xlarge',
      gpu_count: 8,
      gpu_share: 8,
      gpu_sharing: null,
      submitted_at: '2026-11-20T08:00:00.000Z',
      started_at: '2026-11-20T08:02:00.000Z',
      wait_seconds: 120,
      completed_at: '2026-11-20T10:02:07.900Z',
      duration_seconds: 7207,
      gpu_hours_used: 16.0156,
      exit_code: 0,
      is_managed: false,
      cluster_id: 'eks-use1',
      namespace: 'vision',
      idle_gpu_hours: null,
      gpu_efficiency: null,
      cost: null,
      energy_kwh: null,
      carbon_kg: null,
      idle_cost: null,
    });
  });

  it('grows a running workload with now', async () => {
    const response = await get('wl-run').expect(200);
    const expected = Math.floor((Date.now() - runningStart.getTime()) / 1000);
    expect(response.body.data.completed_at).toBeNull();
    expect(response.body.data.exit_code).toBeNull();
    expect(response.body.data.duration_seconds).toBeGreaterThanOrEqual(expected - 2);
    expect(response.body.data.duration_seconds).toBeLessThanOrEqual(expected);
    expect(response.body.data.gpu_hours_used).toBeCloseTo(
      (3 * response.body.data.duration_seconds) / 3600,
      4,
    );
    expect(Number.isInteger(response.body.data.duration_seconds)).toBe(true);
  });

  it('computes a running workload at the instant metadata.as_of names, read once per request', async () => {
    // A clock that moves a whole second at every reading (two readings in one request would show),
    // starting an hour ahead so that no answer cached by the tests above is still valid.
    let tick = Date.now() + 3600_000;
    const clock = jest
      .spyOn(testApp.app.get(Clock), 'now')
      .mockImplementation(() => new Date((tick += 1000)));
    try {
      const response = await get('wl-run').expect(200);
      const asOf = Date.parse(response.body.metadata.as_of);
      expect(response.body.data.duration_seconds).toBe(Math.floor((asOf - runningStart.getTime()) / 1000));
    } finally {
      clock.mockRestore();
    }
  });

  it('gives a pending workload and a cancelled-before-start one zero duration', async () => {
    const pending = await get('wl-wait').expect(200);
    expect(pending.body.data).toMatchObject({
      status: 'pending',
      started_at: null,
      completed_at: null,
      exit_code: null,
      duration_seconds: 0,
      gpu_hours_used: 0,
    });
    const cancelled = await get('wl-gone').expect(200);
    expect(cancelled.body.data).toMatchObject({
      started_at: null,
      completed_at: '2026-11-20T08:05:00.000Z',
      duration_seconds: 0,
      gpu_hours_used: 0,
    });
    const failed = await get('wl-bad').expect(200);
    expect(failed.body.data).toMatchObject({ exit_code: 137, duration_seconds: 10, gpu_hours_used: 0.0056 });
  });

  it('answers 404 alike for unknown and out-of-scope workloads', async () => {
    const unknown = await get('wl-nope', member).expect(404);
    const outside = await get('wl-wait', member).expect(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    expect(outside.body.error.code).toBe('NOT_FOUND');
    expect(outside.body.error.details).toEqual(unknown.body.error.details);
    await get('wl-done', lead).expect(404);
    await get('wl-wait', lead).expect(200);
    await get('wl-run', member).expect(200);
  });

  it('never shows another organization’s workload', async () => {
    const other = await seedOrganization(testApp.dataSource, { initiatives: ['init-a'] });
    await insertWorkloads(testApp.dataSource, other, [{ workloadId: 'wl-elsewhere' }]);
    await get('wl-elsewhere').expect(404);
  });

  it.each(['bad%20id', 'a'.repeat(129), 'x%2Fy', 'w%24'])(
    'rejects a malformed id %s in the path',
    async (id) => {
      const response = await get(id).expect(400);
      expect(response.body.error.code).toBe('VALIDATION_ERROR');
      expect(response.body.error.details[0]).toMatchObject({ field: 'workload_id', location: 'path' });
    },
  );

  it('accepts every identifier character and rejects query parameters', async () => {
    await get('Aa0._:-').expect(404);
    const response = await get('wl-done?verbose=true').expect(400);
    expect(response.body.error.details[0]).toMatchObject({ field: 'verbose', location: 'query' });
  });
});
