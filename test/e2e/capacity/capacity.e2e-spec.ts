import request from 'supertest';
import {
  createApiToken,
  authHeaders,
  insertWorkloads,
  seedOrganization,
  NO_SAMPLES,
} from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Hand-made organization, figures worked out by hand (GPU hours):
 * period starts mid-day about 20 days ago; no running workload, so every figure is exact.
 *
 *   alpha  pool-a 100 allocated: w1 20 + w10 2 + w11 14 (burn window) = 36
 *          pool-b  50 allocated: w2 12 (4 GPUs × the 3 h inside the period of a 33 h run)
 *   beta   pool-a  10 allocated: w3 24 + w7 42 (burn window) = 66 → overrun
 *          unowned type tx:       w4 5 (summary and initiative only)
 *   gamma  nothing allocated, only a pending workload
 *   w5 ran before the period; w9 was cancelled before starting.
 */
/** Idle figures and energy of use without samples: capacity carries both beside its GPU-hours. */
const UNSAMPLED_USE = { ...NO_SAMPLES, total_energy_kwh: 0 };

describe('GET /v1/capacity', () => {
  let testApp: TestApp;
  let organizationId: string;
  let periodStart: Date;
  let now: number;

  beforeAll(async () => {
    testApp = await createTestApp();
    now = Date.now();
    periodStart = new Date(Math.floor((now - 20 * DAY) / DAY) * DAY + 10.5 * HOUR);
    const at = (offsetMs: number) => new Date(periodStart.getTime() + offsetMs);
    const ago = (offsetMs: number) => new Date(now - offsetMs);
    organizationId = await seedOrganization(testApp.dataSource, {
      budgetPeriodStart: periodStart,
      budgetPeriodEnd: at(60 * DAY),
      initiatives: ['alpha', 'beta', 'gamma'],
      pools: [
        { poolId: 'pool-a', name: 'Pool A', instanceTypes: ['ta2', 'ta1'] },
        { poolId: 'pool-b', name: 'Pool B', instanceTypes: ['tb'] },
        { poolId: 'pool-c', name: 'Pool C (idle)', instanceTypes: ['tc'] },
      ],
      allocations: [
        { initiativeId: 'alpha', poolId: 'pool-a', allocatedGpuHours: 100 },
        { initiativeId: 'alpha', poolId: 'pool-b', allocatedGpuHours: 50 },
        { initiativeId: 'beta', poolId: 'pool-a', allocatedGpuHours: 10 },
      ],
    });
    const finished = (
      initiativeId: string,
      instanceType: string,
      gpuCount: number,
      startedAt: Date,
      hours: number,
      status: 'completed' | 'failed' | 'cancelled' = 'completed',
    ) => ({
      initiativeId,
      instanceType,
      gpuCount,
      status,
      submittedAt: startedAt,
      startedAt,
      completedAt: new Date(startedAt.getTime() + hours * HOUR),
    });
    await insertWorkloads(testApp.dataSource, organizationId, [
      finished('alpha', 'ta1', 2, at(1 * DAY), 10),
      finished('alpha', 'tb', 4, at(-30 * HOUR), 33, 'failed'),
      finished('beta', 'ta2', 3, at(2 * DAY), 8),
      finished('beta', 'tx', 1, at(3 * DAY), 5),
      finished('alpha', 'ta1', 5, at(-3 * DAY), 24),
      finished('beta', 'ta1', 6, ago(3 * DAY), 7),
      { initiativeId: 'gamma', instanceType: 'tb', status: 'pending', submittedAt: ago(HOUR) },
      {
        initiativeId: 'alpha',
        instanceType: 'ta2',
        status: 'cancelled',
        submittedAt: at(DAY),
        startedAt: null,
        completedAt: at(DAY + HOUR),
      },
      finished('alpha', 'ta1', 1, at(4 * DAY), 2, 'cancelled'),
      finished('alpha', 'ta1', 4, ago(2 * DAY), 3.5),
    ]);
  });

  afterAll(async () => {
    await testApp.close();
  });

  async function getCapacity(
    token: string,
    query: Record<string, string> = {},
    expectedStatus = 200,
  ): Promise<{ body: CapacityBody; before: number; after: number }> {
    const before = Date.now();
    const response = await request(testApp.server)
      .get('/v1/capacity')
      .query(query)
      .set(authHeaders(token, organizationId))
      .expect(expectedStatus);
    return { body: response.body as CapacityBody, before, after: Date.now() };
  }

  const adminToken = () => createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' });

  /** A projection is "now + days", taken from the server's clock: it lies between our two readings. */
  function expectProjection(value: string | null, days: number, before: number, after: number) {
    expect(value).not.toBeNull();
    const time = new Date(value as string).getTime();
    expect(new Date(time).toISOString()).toBe(value);
    expect(time).toBeGreaterThanOrEqual(before + days * DAY - 1);
    expect(time).toBeLessThanOrEqual(after + days * DAY + 1);
  }

  // Exact statuses are checked in capacity-burn-down and the budgetFigures unit tests.
  const BUDGET_STATUS = expect.stringMatching(/^(on_track|at_risk|exhausted)$/);

  const zeros = {
    allocated_gpu_hours: 0,
    used_gpu_hours: 0,
    used_cost: null,
    idle_cost: null,
    allocated_cost: null,
    unpriced_gpu_hours: 0,
    remaining_gpu_hours: 0,
    burn_rate_gpu_hours_per_day: 0,
    projected_exhaustion_date: null,
    budget_status: 'on_track',
    ...UNSAMPLED_USE,
  };

  it('gives an ORG_ADMIN the whole organization with exact figures', async () => {
    const { body, before, after } = await getCapacity(await adminToken());
    const data = body.data;
    expect(data.organization_id).toBe(organizationId);
    expect(data.period).toEqual({
      start: periodStart.toISOString(),
      end: new Date(periodStart.getTime() + 60 * DAY).toISOString(),
    });
    expect(data.summary).toEqual({
      total_allocated_gpu_hours: 160,
      total_used_gpu_hours: 119,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 119,
      total_remaining_gpu_hours: 41,
      current_active_gpus: 0,
      current_active_gpu_share: 0,
      burn_rate_gpu_hours_per_day: 8,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expectProjection(data.summary.projected_exhaustion_date, 41 / 8, before, after);

    expect(data.initiatives.map((initiative) => initiative.initiative_id)).toEqual([
      'alpha',
      'beta',
      'gamma',
    ]);
    const [alpha, beta, gamma] = data.initiatives;
    expect(alpha).toEqual({
      initiative_id: 'alpha',
      name: 'Initiative alpha',
      allocated_gpu_hours: 150,
      used_gpu_hours: 48,
      used_cost: null,
      idle_cost: null,
      allocated_cost: null,
      unpriced_gpu_hours: 48,
      remaining_gpu_hours: 102,
      burn_rate_gpu_hours_per_day: 2,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expectProjection(alpha.projected_exhaustion_date, 51, before, after);
    // Overrun: remaining is negative and the budget is exhausted already (now).
    expect(beta).toEqual({
      initiative_id: 'beta',
      name: 'Initiative beta',
      allocated_gpu_hours: 10,
      used_gpu_hours: 71,
      used_cost: null,
      idle_cost: null,
      allocated_cost: null,
      unpriced_gpu_hours: 71,
      remaining_gpu_hours: -61,
      burn_rate_gpu_hours_per_day: 6,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expectProjection(beta.projected_exhaustion_date, 0, before, after);
    expect(gamma).toEqual({ initiative_id: 'gamma', name: 'Initiative gamma', ...zeros });

    // pool-c has neither allocation nor usage; the unowned type tx is in no pool.
    expect(data.pools.map((pool) => pool.pool_id)).toEqual(['pool-a', 'pool-b']);
    const [poolA, poolB] = data.pools;
    expect(poolA).toEqual({
      pool_id: 'pool-a',
      name: 'Pool A',
      instance_types: ['ta1', 'ta2'],
      allocated_gpu_hours: 110,
      used_gpu_hours: 102,
      used_cost: null,
      idle_cost: null,
      allocated_cost: null,
      unpriced_gpu_hours: 102,
      remaining_gpu_hours: 8,
      burn_rate_gpu_hours_per_day: 8,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
      // Nothing pending on ta1/ta2; the two runs submitted in the last 7 days started at once.
      pending_gpu_share: 0,
      queue_wait_p95_seconds: 0,
    });
    expectProjection(poolA.projected_exhaustion_date, 1, before, after);
    expect(poolB).toEqual({
      pool_id: 'pool-b',
      name: 'Pool B',
      instance_types: ['tb'],
      allocated_gpu_hours: 50,
      used_gpu_hours: 12,
      used_cost: null,
      idle_cost: null,
      allocated_cost: null,
      unpriced_gpu_hours: 12,
      remaining_gpu_hours: 38,
      burn_rate_gpu_hours_per_day: 0,
      projected_exhaustion_date: null,
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
      // gamma's pending GPU on tb; nothing on tb was submitted in the last 7 days.
      pending_gpu_share: 1,
      queue_wait_p95_seconds: null,
    });
  });

  it('limits a TEAM_LEAD to their initiatives everywhere, the summary included', async () => {
    const token = await createApiToken(testApp.dataSource, organizationId, {
      role: 'TEAM_LEAD',
      initiativeIds: ['beta'],
    });
    const { body } = await getCapacity(token);
    expect(body.data.summary).toEqual({
      total_allocated_gpu_hours: 10,
      total_used_gpu_hours: 71,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 71,
      total_remaining_gpu_hours: -61,
      current_active_gpus: 0,
      current_active_gpu_share: 0,
      burn_rate_gpu_hours_per_day: 6,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expect(body.data.initiatives.map((initiative) => initiative.initiative_id)).toEqual(['beta']);
    expect(body.data.pools).toEqual([
      expect.objectContaining({
        pool_id: 'pool-a',
        allocated_gpu_hours: 10,
        used_gpu_hours: 66,
        used_cost: null,
        idle_cost: null,
        allocated_cost: null,
        unpriced_gpu_hours: 66,
        remaining_gpu_hours: -56,
        burn_rate_gpu_hours_per_day: 6,
      }),
    ]);
  });

  it('limits a MEMBER to their initiatives everywhere, the summary included', async () => {
    const token = await createApiToken(testApp.dataSource, organizationId, {
      role: 'MEMBER',
      initiativeIds: ['alpha', 'gamma'],
    });
    const { body, before, after } = await getCapacity(token);
    expect(body.data.summary).toEqual({
      total_allocated_gpu_hours: 150,
      total_used_gpu_hours: 48,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 48,
      total_remaining_gpu_hours: 102,
      current_active_gpus: 0,
      current_active_gpu_share: 0,
      burn_rate_gpu_hours_per_day: 2,
      projected_exhaustion_date: expect.any(String),
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expect(body.data.initiatives.map((initiative) => initiative.initiative_id)).toEqual(['alpha', 'gamma']);
    expect(body.data.pools).toEqual([
      {
        pool_id: 'pool-a',
        name: 'Pool A',
        instance_types: ['ta1', 'ta2'],
        allocated_gpu_hours: 100,
        used_gpu_hours: 36,
        used_cost: null,
        idle_cost: null,
        allocated_cost: null,
        unpriced_gpu_hours: 36,
        remaining_gpu_hours: 64,
        burn_rate_gpu_hours_per_day: 2,
        projected_exhaustion_date: expect.any(String),
        budget_status: BUDGET_STATUS,
        ...UNSAMPLED_USE,
        pending_gpu_share: 0,
        queue_wait_p95_seconds: 0,
      },
      expect.objectContaining({ pool_id: 'pool-b', allocated_gpu_hours: 50, used_gpu_hours: 12 }),
    ]);
    expectProjection(body.data.pools[0].projected_exhaustion_date, 32, before, after);
  });

  it('gives a MEMBER of no initiative nothing at all', async () => {
    const token = await createApiToken(testApp.dataSource, organizationId, { role: 'MEMBER' });
    const { body } = await getCapacity(token);
    expect(body.data.summary).toEqual({
      total_allocated_gpu_hours: 0,
      total_used_gpu_hours: 0,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 0,
      total_remaining_gpu_hours: 0,
      current_active_gpus: 0,
      current_active_gpu_share: 0,
      burn_rate_gpu_hours_per_day: 0,
      projected_exhaustion_date: null,
      budget_status: BUDGET_STATUS,
      ...UNSAMPLED_USE,
    });
    expect(body.data.pools).toEqual([]);
    expect(body.data.initiatives).toEqual([]);
  });

  it('filters by initiative_id: only that initiative, its pools and its figures', async () => {
    const { body } = await getCapacity(await adminToken(), { initiative_id: 'alpha' });
    expect(body.data.summary).toMatchObject({
      total_allocated_gpu_hours: 150,
      total_used_gpu_hours: 48,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 48,
      total_remaining_gpu_hours: 102,
    });
    expect(body.data.initiatives).toEqual([expect.objectContaining({ initiative_id: 'alpha' })]);
    expect(
      body.data.pools.map((pool) => [pool.pool_id, pool.allocated_gpu_hours, pool.used_gpu_hours]),
    ).toEqual([
      ['pool-a', 100, 36],
      ['pool-b', 50, 12],
    ]);
  });

  it('filters by pool_id: every initiative in scope, figures limited to the pool, unowned usage left out', async () => {
    const { body, before, after } = await getCapacity(await adminToken(), { pool_id: 'pool-a' });
    expect(body.data.summary).toMatchObject({
      total_allocated_gpu_hours: 110,
      total_used_gpu_hours: 102,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 102,
      total_remaining_gpu_hours: 8,
      burn_rate_gpu_hours_per_day: 8,
    });
    expectProjection(body.data.summary.projected_exhaustion_date, 1, before, after);
    expect(body.data.pools.map((pool) => pool.pool_id)).toEqual(['pool-a']);
    expect(
      body.data.initiatives.map((initiative) => [
        initiative.initiative_id,
        initiative.allocated_gpu_hours,
        initiative.used_gpu_hours,
        initiative.remaining_gpu_hours,
      ]),
    ).toEqual([
      ['alpha', 100, 36, 64],
      ['beta', 10, 66, -56],
      ['gamma', 0, 0, 0],
    ]);
  });

  it('combines both filters', async () => {
    const { body } = await getCapacity(await adminToken(), { initiative_id: 'alpha', pool_id: 'pool-b' });
    expect(body.data.summary).toMatchObject({
      total_allocated_gpu_hours: 50,
      total_used_gpu_hours: 12,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 12,
      total_remaining_gpu_hours: 38,
    });
    expect(body.data.initiatives).toEqual([
      {
        initiative_id: 'alpha',
        name: 'Initiative alpha',
        allocated_gpu_hours: 50,
        used_gpu_hours: 12,
        used_cost: null,
        idle_cost: null,
        allocated_cost: null,
        unpriced_gpu_hours: 12,
        remaining_gpu_hours: 38,
        burn_rate_gpu_hours_per_day: 0,
        projected_exhaustion_date: null,
        budget_status: BUDGET_STATUS,
        ...UNSAMPLED_USE,
      },
    ]);
    expect(body.data.pools.map((pool) => pool.pool_id)).toEqual(['pool-b']);
  });

  it('counts only the part of a straddling workload inside the period', async () => {
    const { body } = await getCapacity(await adminToken(), { pool_id: 'pool-b', initiative_id: 'alpha' });
    // w2: 4 GPUs for 33 h, 30 h of them before the period start.
    expect(body.data.pools[0].used_gpu_hours).toBe(12);
  });

  it('matches nothing for an unknown pool, and nothing for an ORG_ADMIN naming an unknown initiative', async () => {
    const token = await adminToken();
    const unknownPool = (await getCapacity(token, { pool_id: 'no-such-pool' })).body.data;
    expect(unknownPool.pools).toEqual([]);
    expect(unknownPool.summary.total_used_gpu_hours).toBe(0);
    expect(unknownPool.initiatives.map((initiative) => initiative.used_gpu_hours)).toEqual([0, 0, 0]);

    const unknownInitiative = (await getCapacity(token, { initiative_id: 'no-such-initiative' })).body.data;
    expect(unknownInitiative.initiatives).toEqual([]);
    expect(unknownInitiative.pools).toEqual([]);
    expect(unknownInitiative.summary.total_allocated_gpu_hours).toBe(0);
  });

  it('refuses an initiative outside the caller’s scope with 403', async () => {
    const token = await createApiToken(testApp.dataSource, organizationId, {
      role: 'TEAM_LEAD',
      initiativeIds: ['beta'],
    });
    const { body } = await getCapacity(token, { initiative_id: 'alpha' }, 403);
    expect(body).toMatchObject({ error: { code: 'FORBIDDEN' } });
  });

  it('rejects an unknown query parameter and a malformed pool id with 400', async () => {
    const token = await adminToken();
    const unknown = await getCapacity(token, { pool: 'pool-a' }, 400);
    expect(unknown.body).toMatchObject({
      error: {
        code: 'VALIDATION_ERROR',
        details: [expect.objectContaining({ field: 'pool', location: 'query' })],
      },
    });
    const malformed = await getCapacity(token, { pool_id: 'pool a/b' }, 400);
    expect(malformed.body).toMatchObject({
      error: { details: [expect.objectContaining({ field: 'pool_id', location: 'query' })] },
    });
  });
});

describe('GET /v1/capacity in the OpenAPI document', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('describes the filters and the response fields', async () => {
    const response = await request(testApp.server).get('/v1/openapi.json').expect(200);
    const document = response.body as {
      paths: Record<string, { get: { parameters: { name: string }[] } }>;
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    };
    const parameters = document.paths['/v1/capacity'].get.parameters.map((parameter) => parameter.name);
    expect(parameters).toEqual(expect.arrayContaining(['initiative_id', 'pool_id']));
    expect(Object.keys(document.components.schemas.CapacityReportDto.properties)).toEqual(
      expect.arrayContaining(['organization_id', 'summary', 'pools', 'initiatives', 'period']),
    );
    expect(Object.keys(document.components.schemas.CapacityPoolDto.properties)).toEqual(
      expect.arrayContaining([
        'pool_id',
        'name',
        'instance_types',
        'used_gpu_hours',
        'projected_exhaustion_date',
      ]),
    );
  });
});

describe('GET /v1/capacity with running workloads', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('accrues running workloads up to now, from the period start at the earliest', async () => {
    const now = Date.now();
    const organizationId = await seedOrganization(testApp.dataSource, {
      budgetPeriodStart: new Date(now - 10 * DAY),
      budgetPeriodEnd: new Date(now + 20 * DAY),
      initiatives: ['alpha'],
      pools: [{ poolId: 'pool-a', instanceTypes: ['ta'] }],
      allocations: [{ initiativeId: 'alpha', poolId: 'pool-a', allocatedGpuHours: 1000 }],
    });
    await insertWorkloads(testApp.dataSource, organizationId, [
      {
        status: 'running',
        initiativeId: 'alpha',
        instanceType: 'ta',
        gpuCount: 2,
        submittedAt: new Date(now - 2 * HOUR),
        startedAt: new Date(now - 2 * HOUR),
      },
      {
        status: 'running',
        initiativeId: 'alpha',
        instanceType: 'ta',
        gpuCount: 1,
        submittedAt: new Date(now - 11 * DAY),
        startedAt: new Date(now - 11 * DAY),
      },
    ]);
    const token = await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const response = await request(testApp.server)
      .get('/v1/capacity')
      .set(authHeaders(token, organizationId))
      .expect(200);
    const data = (response.body as CapacityBody).data;
    // 2 GPUs × 2 h, plus 1 GPU × the 240 h since the period start (not the 264 h it has run).
    expect(data.summary.current_active_gpus).toBe(3);
    expect(data.summary.current_active_gpu_share).toBe(3);
    expect(data.summary.total_used_gpu_hours).toBeCloseTo(244, 2);
    expect(data.summary.total_remaining_gpu_hours).toBeCloseTo(756, 2);
    expect(data.pools[0].used_gpu_hours).toBeCloseTo(244, 2);
    // Burn window: 4 h + 168 h over 7 days.
    expect(data.initiatives[0].burn_rate_gpu_hours_per_day).toBeCloseTo(172 / 7, 2);
  });

  it('counts nothing used before the period begins, and still shows the allocations', async () => {
    const now = Date.now();
    const organizationId = await seedOrganization(testApp.dataSource, {
      budgetPeriodStart: new Date(now + DAY),
      budgetPeriodEnd: new Date(now + 30 * DAY),
      initiatives: ['alpha'],
      pools: [{ poolId: 'pool-a', instanceTypes: ['ta'] }],
      allocations: [{ initiativeId: 'alpha', poolId: 'pool-a', allocatedGpuHours: 10 }],
    });
    await insertWorkloads(testApp.dataSource, organizationId, [
      {
        status: 'running',
        initiativeId: 'alpha',
        instanceType: 'ta',
        gpuCount: 2,
        submittedAt: new Date(now - 2 * HOUR),
        startedAt: new Date(now - 2 * HOUR),
      },
    ]);
    const token = await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const response = await request(testApp.server)
      .get('/v1/capacity')
      .set(authHeaders(token, organizationId))
      .expect(200);
    const data = (response.body as CapacityBody).data;
    expect(data.summary).toMatchObject({
      total_allocated_gpu_hours: 10,
      total_used_gpu_hours: 0,
      total_used_cost: null,
      idle_cost: null,
      total_allocated_cost: null,
      unpriced_gpu_hours: 0,
      total_remaining_gpu_hours: 10,
      current_active_gpus: 2,
      current_active_gpu_share: 2,
    });
    expect(data.pools).toEqual([expect.objectContaining({ pool_id: 'pool-a', used_gpu_hours: 0 })]);
  });
});

interface Figures {
  allocated_gpu_hours: number;
  used_gpu_hours: number;
  remaining_gpu_hours: number;
  burn_rate_gpu_hours_per_day: number;
  projected_exhaustion_date: string | null;
}

interface CapacityBody {
  data: {
    organization_id: string;
    summary: {
      total_allocated_gpu_hours: number;
      total_used_gpu_hours: number;
      total_remaining_gpu_hours: number;
      current_active_gpus: number;
      current_active_gpu_share: number;
      burn_rate_gpu_hours_per_day: number;
      projected_exhaustion_date: string | null;
    };
    pools: (Figures & { pool_id: string; name: string; instance_types: string[] })[];
    initiatives: (Figures & { initiative_id: string; name: string })[];
    period: { start: string; end: string };
  };
  error?: unknown;
}
