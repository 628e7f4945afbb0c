import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  WorkloadSeed,
  NO_SAMPLES,
} from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const HOUR = 3_600_000;
/** Asia/Kolkata is UTC+05:30 all year: local midnight is never on a UTC hour. */
const ZONE = 'Asia/Kolkata';
const OFFSET = 5.5 * HOUR;

function localMidnights(now: number) {
  const local = new Date(now + OFFSET);
  const y = local.getUTCFullYear();
  const m = local.getUTCMonth();
  const d = local.getUTCDate();
  const mondayOffset = (local.getUTCDay() + 6) % 7;
  return {
    today: Date.UTC(y, m, d) - OFFSET,
    this_week: Date.UTC(y, m, d - mondayOffset) - OFFSET,
    this_month: Date.UTC(y, m, 1) - OFFSET,
  };
}

describe('GET /v1/workloads/stats', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  async function organizationWith(seeds: WorkloadSeed[], timezone = 'UTC') {
    const organizationId = await seedOrganization(testApp.dataSource, {
      timezone,
      initiatives: ['init-a', 'init-b', 'init-c'],
    });
    await insertWorkloads(testApp.dataSource, organizationId, seeds);
    const token = (role: 'ORG_ADMIN' | 'TEAM_LEAD' | 'MEMBER', initiativeIds: string[] = []) =>
      createApiToken(testApp.dataSource, organizationId, { role, initiativeIds });
    return {
      organizationId,
      admin: authHeaders(await token('ORG_ADMIN'), organizationId),
      member: authHeaders(await token('MEMBER', ['init-a', 'init-b']), organizationId),
      lead: authHeaders(await token('TEAM_LEAD', ['init-c']), organizationId),
    };
  }

  const get = (headers: Record<string, string>, query: Record<string, string> = {}) =>
    request(testApp.server).get('/v1/workloads/stats').query(query).set(headers);

  describe('range boundaries at local midnight (UTC+05:30)', () => {
    it.each(['today', 'this_week', 'this_month'] as const)(
      '%s counts from local 00:00 inclusive',
      async (range) => {
        const boundary = localMidnights(Date.now())[range];
        const org = await organizationWith(
          [
            { submittedAt: new Date(boundary - 1000), status: 'completed' },
            { submittedAt: new Date(boundary), status: 'failed' },
            { submittedAt: new Date(boundary + 1000), status: 'completed' },
          ],
          ZONE,
        );
        const response = await get(org.admin, { time_range: range }).expect(200);
        const inRange = Date.now() - boundary > 1000 ? 2 : 1;
        expect(response.body.data.summary.total_workloads).toBe(inRange);
        expect(response.body.data.range).toEqual({
          time_range: range,
          start: new Date(boundary).toISOString(),
          end: expect.any(String),
        });
      },
    );

    it.each([
      ['last_7_days', 168],
      ['last_30_days', 720],
    ] as const)('%s reaches back exactly %i hours', async (range, hours) => {
      const edge = Date.now() - hours * HOUR;
      const org = await organizationWith(
        [{ submittedAt: new Date(edge - 60_000) }, { submittedAt: new Date(edge + 60_000) }, {}],
        ZONE,
      );
      const response = await get(org.admin, { time_range: range }).expect(200);
      expect(response.body.data.summary.total_workloads).toBe(2);
      const start = Date.parse(response.body.data.range.start);
      const end = Date.parse(response.body.data.range.end);
      expect(end - start).toBe(hours * HOUR);
    });

    it('defaults to last_30_days and treats dates alone as custom [start, end)', async () => {
      const org = await organizationWith([
        { submittedAt: '2026-11-09T23:59:59Z' },
        { submittedAt: '2026-11-10T00:00:00Z' },
        { submittedAt: '2026-11-10T00:00:01Z' },
        { submittedAt: '2026-11-11T23:59:59Z' },
        { submittedAt: '2026-11-12T00:00:00Z' },
        { submittedAt: new Date(Date.now() - HOUR) },
      ]);
      const defaulted = await get(org.admin).expect(200);
      expect(defaulted.body.data.range.time_range).toBe('last_30_days');
      const custom = await get(org.admin, { start_date: '2026-11-10', end_date: '2026-11-12' }).expect(200);
      expect(custom.body.data.range.time_range).toBe('custom');
      expect(custom.body.data.summary.total_workloads).toBe(3);
      const explicit = await get(org.admin, {
        time_range: 'custom',
        start_date: '2026-11-10T05:30:00+05:30',
        end_date: '2026-11-10T00:00:01Z',
      }).expect(200);
      expect(explicit.body.data.summary.total_workloads).toBe(1);
      const empty = await get(org.admin, { start_date: '2026-11-10', end_date: '2026-11-10' }).expect(200);
      expect(empty.body.data).toMatchObject({
        summary: {
          total_workloads: 0,
          total_gpu_hours: 0,
          total_cost: null,
          unpriced_gpu_hours: 0,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          average_duration_seconds: null,
          success_rate: null,
          ...NO_SAMPLES,
        },
        grouped: [],
      });
    });
  });

  describe('figures', () => {
    const day = '2026-11-15T';
    const seeds: WorkloadSeed[] = [
      // init-a: one completed hour on 2 GPUs, one failed minute on 1 GPU
      {
        initiativeId: 'init-a',
        submittedBy: 'carol',
        instanceType: 'g5',
        gpuCount: 2,
        status: 'completed',
        submittedAt: `${day}01:00:00Z`,
        startedAt: `${day}01:00:00Z`,
        completedAt: `${day}02:00:00Z`,
      },
      {
        initiativeId: 'init-a',
        submittedBy: 'bob',
        instanceType: 'p5',
        gpuCount: 1,
        status: 'failed',
        submittedAt: `${day}03:00:00Z`,
        startedAt: `${day}03:00:00Z`,
        completedAt: `${day}03:01:00Z`,
      },
      // init-b: cancelled after 30 s on 4 GPUs, cancelled before start, pending
      {
        initiativeId: 'init-b',
        submittedBy: 'bob',
        instanceType: 'p5',
        gpuCount: 4,
        status: 'cancelled',
        submittedAt: `${day}04:00:00Z`,
        startedAt: `${day}04:00:00Z`,
        completedAt: `${day}04:00:30Z`,
        exitCode: null,
      },
      {
        initiativeId: 'init-b',
        submittedBy: 'bob',
        instanceType: 'g5',
        status: 'cancelled',
        submittedAt: `${day}05:00:00Z`,
        startedAt: null,
        completedAt: `${day}05:10:00Z`,
        exitCode: null,
      },
      {
        initiativeId: 'init-b',
        submittedBy: 'alice',
        instanceType: 'g5',
        status: 'pending',
        submittedAt: `${day}06:00:00Z`,
      },
      // init-c: another completed (2 h, 1 GPU)
      {
        initiativeId: 'init-c',
        submittedBy: 'dave',
        instanceType: 'p5',
        gpuCount: 1,
        status: 'completed',
        submittedAt: `${day}07:00:00Z`,
        startedAt: `${day}07:00:00Z`,
        completedAt: `${day}09:00:00Z`,
      },
    ];
    const range = { start_date: '2026-11-15', end_date: '2026-11-16' };
    /** Every start here is immediate: `started` waits of 0 s, and at most alice's one pending GPU. */
    const queue = (started: number, pending: boolean) => ({
      queue_wait: {
        started,
        avg_seconds: started ? 0 : null,
        p50_seconds: started ? 0 : null,
        p95_seconds: started ? 0 : null,
        max_seconds: started ? 0 : null,
      },
      pending: pending
        ? { count: 1, gpus: 1, gpu_share: 1, oldest_submitted_at: `${day}06:00:00.000Z` }
        : { count: 0, gpus: 0, gpu_share: 0, oldest_submitted_at: null },
    });
    let org: Awaited<ReturnType<typeof organizationWith>>;

    beforeAll(async () => {
      org = await organizationWith(seeds);
    });

    it('summarises the organization for an ORG_ADMIN', async () => {
      const response = await get(org.admin, range).expect(200);
      expect(response.body.data.summary).toEqual({
        total_workloads: 6,
        // 2×3600 + 1×60 + 4×30 + 1×7200 GPU-seconds
        total_gpu_hours: 4.05,
        total_cost: null,
        unpriced_gpu_hours: 4.05,
        idle_cost: null,
        total_energy_kwh: 0,
        total_carbon_kg: 0,
        uncovered_energy_kwh: 0,
        // (3600 + 60 + 30 + 7200) / 4 finished with a start
        average_duration_seconds: 2722.5,
        success_rate: 0.6667,
        ...NO_SAMPLES,
        ...queue(4, true),
      });
      expect(response.body.data.grouped).toEqual([]);
    });

    it('groups by submitted_by ordered by count desc, then key asc', async () => {
      const response = await get(org.admin, { ...range, group_by: 'submitted_by' }).expect(200);
      expect(response.body.data.grouped).toEqual([
        {
          submitted_by: 'bob',
          workload_count: 3,
          gpu_hours: 0.05,
          total_cost: null,
          unpriced_gpu_hours: 0.05,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 0,
          ...NO_SAMPLES,
          ...queue(2, false),
        },
        {
          submitted_by: 'alice',
          workload_count: 1,
          gpu_hours: 0,
          total_cost: null,
          unpriced_gpu_hours: 0,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: null,
          ...NO_SAMPLES,
          ...queue(0, true),
        },
        {
          submitted_by: 'carol',
          workload_count: 1,
          gpu_hours: 2,
          total_cost: null,
          unpriced_gpu_hours: 2,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 1,
          ...NO_SAMPLES,
          ...queue(1, false),
        },
        {
          submitted_by: 'dave',
          workload_count: 1,
          gpu_hours: 2,
          total_cost: null,
          unpriced_gpu_hours: 2,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 1,
          ...NO_SAMPLES,
          ...queue(1, false),
        },
      ]);
    });

    it('groups by initiative_id and instance_type', async () => {
      const byInitiative = await get(org.admin, { ...range, group_by: 'initiative_id' }).expect(200);
      expect(byInitiative.body.data.grouped).toEqual([
        {
          initiative_id: 'init-b',
          workload_count: 3,
          gpu_hours: 0.0333,
          total_cost: null,
          unpriced_gpu_hours: 0.0333,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: null,
          ...NO_SAMPLES,
          ...queue(1, true),
        },
        {
          initiative_id: 'init-a',
          workload_count: 2,
          gpu_hours: 2.0167,
          total_cost: null,
          unpriced_gpu_hours: 2.0167,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 0.5,
          ...NO_SAMPLES,
          ...queue(2, false),
        },
        {
          initiative_id: 'init-c',
          workload_count: 1,
          gpu_hours: 2,
          total_cost: null,
          unpriced_gpu_hours: 2,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 1,
          ...NO_SAMPLES,
          ...queue(1, false),
        },
      ]);
      const byType = await get(org.admin, { ...range, group_by: 'instance_type' }).expect(200);
      expect(byType.body.data.grouped).toEqual([
        {
          instance_type: 'g5',
          workload_count: 3,
          gpu_hours: 2,
          total_cost: null,
          unpriced_gpu_hours: 2,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 1,
          ...NO_SAMPLES,
          ...queue(1, true),
        },
        {
          instance_type: 'p5',
          workload_count: 3,
          gpu_hours: 2.05,
          total_cost: null,
          unpriced_gpu_hours: 2.05,
          idle_cost: null,
          total_energy_kwh: 0,
          total_carbon_kg: 0,
          uncovered_energy_kwh: 0,
          success_rate: 0.5,
          ...NO_SAMPLES,
          ...queue(3, false),
        },
      ]);
    });

    it('limits a MEMBER with two of three initiatives to those', async () => {
      const response = await get(org.member, { ...range, group_by: 'initiative_id' }).expect(200);
      expect(response.body.data.summary).toEqual({
        total_workloads: 5,
        total_gpu_hours: 2.05,
        total_cost: null,
        unpriced_gpu_hours: 2.05,
        idle_cost: null,
        total_energy_kwh: 0,
        total_carbon_kg: 0,
        uncovered_energy_kwh: 0,
        average_duration_seconds: 1230,
        success_rate: 0.5,
        ...NO_SAMPLES,
        ...queue(3, true),
      });
      expect(
        response.body.data.grouped.map((group: { initiative_id: string }) => group.initiative_id),
      ).toEqual(['init-b', 'init-a']);
      const lead = await get(org.lead, range).expect(200);
      expect(lead.body.data.summary).toEqual({
        total_workloads: 1,
        total_gpu_hours: 2,
        total_cost: null,
        unpriced_gpu_hours: 2,
        idle_cost: null,
        total_energy_kwh: 0,
        total_carbon_kg: 0,
        uncovered_energy_kwh: 0,
        average_duration_seconds: 7200,
        success_rate: 1,
        ...NO_SAMPLES,
        ...queue(1, false),
      });
    });

    it('filters to one initiative, 403 outside the scope, nothing for an unknown one', async () => {
      const one = await get(org.member, { ...range, initiative_id: 'init-b' }).expect(200);
      expect(one.body.data.summary).toEqual({
        total_workloads: 3,
        total_gpu_hours: 0.0333,
        total_cost: null,
        unpriced_gpu_hours: 0.0333,
        idle_cost: null,
        total_energy_kwh: 0,
        total_carbon_kg: 0,
        uncovered_energy_kwh: 0,
        average_duration_seconds: 30,
        success_rate: null,
        ...NO_SAMPLES,
        ...queue(1, true),
      });
      const forbidden = await get(org.member, { ...range, initiative_id: 'init-c' }).expect(403);
      expect(forbidden.body.error.code).toBe('FORBIDDEN');
      await get(org.lead, { ...range, initiative_id: 'init-a' }).expect(403);
      const unknown = await get(org.admin, { ...range, initiative_id: 'init-z' }).expect(200);
      expect(unknown.body.data.summary.total_workloads).toBe(0);
    });

    it('counts running workloads up to now and leaves them out of average and success rate', async () => {
      const started = Date.now() - 2 * HOUR;
      const running = await organizationWith([
        {
          status: 'running',
          gpuCount: 4,
          submittedAt: new Date(started - 1000),
          startedAt: new Date(started),
        },
        { status: 'pending', submittedAt: new Date(started) },
      ]);
      const response = await get(running.admin, { time_range: 'today' }).expect(200);
      const summary = response.body.data.summary;
      if (summary.total_workloads === 2) {
        expect(summary.total_gpu_hours).toBeGreaterThanOrEqual(8 - 0.01);
        expect(summary.total_gpu_hours).toBeLessThanOrEqual(8.01);
      }
      const lastWeek = await get(running.admin, { time_range: 'last_7_days' }).expect(200);
      expect(lastWeek.body.data.summary.total_workloads).toBe(2);
      expect(lastWeek.body.data.summary.total_gpu_hours).toBeCloseTo(8, 1);
      expect(lastWeek.body.data.summary.average_duration_seconds).toBeNull();
      expect(lastWeek.body.data.summary.success_rate).toBeNull();
    });
  });

  describe('validation', () => {
    let admin: Record<string, string>;

    beforeAll(async () => {
      admin = (await organizationWith([])).admin;
    });

    it.each([
      [{ time_range: 'custom' }, ['start_date', 'end_date']],
      [{ time_range: 'custom', start_date: '2026-11-01' }, ['end_date']],
      [{ end_date: '2026-11-01' }, ['start_date']],
      [{ time_range: 'today', start_date: '2026-11-01' }, ['start_date']],
      [
        { time_range: 'last_7_days', start_date: '2026-11-01', end_date: '2026-11-02' },
        ['start_date', 'end_date'],
      ],
      [{ start_date: '2026-11-02', end_date: '2026-11-01' }, ['start_date']],
      [{ time_range: 'yesterday' }, ['time_range']],
      [{ group_by: 'status' }, ['group_by']],
      [{ start_date: '2026-11-01T00:00:00' }, ['start_date']],
      [{ range: 'today' }, ['range']],
    ])('rejects %j naming %j', async (query, fields) => {
      const response = await get(admin, query).expect(400);
      expect(response.body.error.code).toBe('VALIDATION_ERROR');
      expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(fields);
      for (const detail of response.body.error.details) expect(detail.location).toBe('query');
    });
  });
});
