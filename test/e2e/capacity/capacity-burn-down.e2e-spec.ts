import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  type WorkloadRow,
  type WorkloadSeed,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// The period starts mid-day; New York's DST starts on 8 March, so that local day lasts 23 hours.
const PERIOD_START = new Date('2026-03-06T09:30:00.000Z');
const PERIOD_END = new Date('2026-04-01T04:00:00.000Z');
const NOW = new Date('2026-03-11T16:20:00.000Z');
const LOCAL_DAYS = [
  { date: '2026-03-06', from: PERIOD_START, to: new Date('2026-03-07T05:00:00.000Z') },
  {
    date: '2026-03-07',
    from: new Date('2026-03-07T05:00:00.000Z'),
    to: new Date('2026-03-08T05:00:00.000Z'),
  },
  {
    date: '2026-03-08',
    from: new Date('2026-03-08T05:00:00.000Z'),
    to: new Date('2026-03-09T04:00:00.000Z'),
  },
  {
    date: '2026-03-09',
    from: new Date('2026-03-09T04:00:00.000Z'),
    to: new Date('2026-03-10T04:00:00.000Z'),
  },
  {
    date: '2026-03-10',
    from: new Date('2026-03-10T04:00:00.000Z'),
    to: new Date('2026-03-11T04:00:00.000Z'),
  },
  { date: '2026-03-11', from: new Date('2026-03-11T04:00:00.000Z'), to: NOW },
];

/** Runs that start before the period, span local and UTC midnights, end inside a day, and still run (from before the period too). */
function workloadSeeds(): WorkloadSeed[] {
  const types = ['p5.48xlarge', 'p4d.24xlarge', 'g5.xlarge'];
  const seeds: WorkloadSeed[] = [];
  for (let index = 0; index < 24; index += 1) {
    const start = new Date(PERIOD_START.getTime() - 7 * HOUR + index * 5 * HOUR + index * 7 * MINUTE);
    const running = index % 7 === 3 || index === 0;
    seeds.push({
      workloadId: `bd-${index}`,
      initiativeId: index % 2 === 0 ? 'init-a' : 'init-b',
      instanceType: types[index % types.length],
      gpuCount: 1 + (index % 8),
      status: running ? 'running' : 'completed',
      submittedAt: new Date(start.getTime() - MINUTE),
      startedAt: start,
      completedAt: running ? null : new Date(start.getTime() + (3 + (index % 5) * 9) * HOUR + index * MINUTE),
    });
  }
  return seeds;
}

/** GPU hours of the rows inside [from, to), running ones up to NOW. */
function usedBetween(rows: WorkloadRow[], from: Date, to: Date): number {
  let gpuMs = 0;
  for (const row of rows) {
    if (!row.startedAt) continue;
    const end = Math.min((row.completedAt ?? NOW).getTime(), to.getTime());
    const start = Math.max(row.startedAt.getTime(), from.getTime());
    if (end > start) gpuMs += row.gpuCount * (end - start);
  }
  return gpuMs / HOUR;
}

function expectedDaily(rows: WorkloadRow[], allocated: number) {
  let cumulative = 0;
  return LOCAL_DAYS.map((day) => {
    const used = usedBetween(rows, day.from, day.to);
    cumulative += used;
    return {
      date: day.date,
      used_gpu_hours: used,
      cumulative_used_gpu_hours: cumulative,
      remaining_gpu_hours: allocated - cumulative,
    };
  });
}

function expectDailyClose(
  actual: Record<string, number | string>[],
  expected: Record<string, number | string>[],
) {
  expect(actual.map((day) => day.date)).toEqual(expected.map((day) => day.date));
  actual.forEach((day, index) => {
    for (const key of ['used_gpu_hours', 'cumulative_used_gpu_hours', 'remaining_gpu_hours']) {
      expect(day[key] as number).toBeCloseTo(expected[index][key] as number, 3);
    }
  });
}

describe('GET /v1/capacity?interval=day', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;
  let rows: WorkloadRow[];
  const ALLOCATIONS = [
    { initiativeId: 'init-a', poolId: 'h100', allocatedGpuHours: 900 },
    { initiativeId: 'init-b', poolId: 'h100', allocatedGpuHours: 150 },
    { initiativeId: 'init-b', poolId: 'a100', allocatedGpuHours: 5000 },
  ];

  beforeAll(async () => {
    t = await createTestApp();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    orgId = await seedOrganization(t.dataSource, {
      timezone: 'America/New_York',
      budgetPeriodStart: PERIOD_START,
      budgetPeriodEnd: PERIOD_END,
      pools: [
        { poolId: 'h100', instanceTypes: ['p5.48xlarge'] },
        { poolId: 'a100', instanceTypes: ['p4d.24xlarge'] },
      ],
      allocations: ALLOCATIONS,
    });
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    rows = await insertWorkloads(t.dataSource, orgId, workloadSeeds());
  });

  afterAll(() => t.close());

  it('gives the use of every local day of the period so far, equal to a recomputation from raw rows', async () => {
    const { body } = await request(t.server).get('/v1/capacity?interval=day').set(admin).expect(200);
    const data = body.data;
    expectDailyClose(data.summary.daily, expectedDaily(rows, 6050));
    const ofType = (type: string) => rows.filter((row) => row.instanceType === type);
    expectDailyClose(
      data.pools.find((pool: { pool_id: string }) => pool.pool_id === 'h100').daily,
      expectedDaily(ofType('p5.48xlarge'), 1050),
    );
    expectDailyClose(
      data.pools.find((pool: { pool_id: string }) => pool.pool_id === 'a100').daily,
      expectedDaily(ofType('p4d.24xlarge'), 5000),
    );
    for (const [initiative, allocated] of [
      ['init-a', 900],
      ['init-b', 5150],
    ] as const) {
      const entry = data.initiatives.find((i: { initiative_id: string }) => i.initiative_id === initiative);
      expectDailyClose(
        entry.daily,
        expectedDaily(
          rows.filter((row) => row.initiativeId === initiative),
          allocated,
        ),
      );
    }
    // The last day's cumulative use is the period's use, as the figures without interval say.
    expect(data.summary.daily[5].cumulative_used_gpu_hours).toBeCloseTo(data.summary.total_used_gpu_hours, 3);
  });

  it('says when 50, 75 and 90 % of an allocation were reached, and flags the budget', async () => {
    const { body } = await request(t.server).get('/v1/capacity?interval=day').set(admin).expect(200);
    const pool = body.data.pools.find((entry: { pool_id: string }) => entry.pool_id === 'h100');
    const expected = expectedDaily(
      rows.filter((row) => row.instanceType === 'p5.48xlarge'),
      1050,
    );
    const crossings = [50, 75, 90]
      .map((percent) => {
        const target = (1050 * percent) / 100;
        const index = expected.findIndex((day) => day.cumulative_used_gpu_hours >= target);
        if (index < 0) return null;
        const before = index === 0 ? 0 : expected[index - 1].cumulative_used_gpu_hours;
        const day = LOCAL_DAYS[index];
        const at =
          day.from.getTime() +
          ((day.to.getTime() - day.from.getTime()) * (target - before)) / expected[index].used_gpu_hours;
        return { percent, at };
      })
      .filter((crossing) => crossing !== null);
    expect(crossings.length).toBeGreaterThan(0);
    expect(pool.thresholds_crossed.map((c: { percent: number }) => c.percent)).toEqual(
      crossings.map((c) => c.percent),
    );
    pool.thresholds_crossed.forEach((crossing: { crossed_at: string }, index: number) => {
      expect(Math.abs(new Date(crossing.crossed_at).getTime() - crossings[index].at)).toBeLessThan(1000);
    });
    const used = usedBetween(
      rows.filter((row) => row.instanceType === 'p5.48xlarge'),
      PERIOD_START,
      NOW,
    );
    expect(pool.budget_status).toBe(
      used >= 1050
        ? 'exhausted'
        : pool.projected_exhaustion_date < PERIOD_END.toISOString()
          ? 'at_risk'
          : 'on_track',
    );
  });

  it('keeps a MEMBER to its initiatives, daily figures included', async () => {
    const { body } = await request(t.server).get('/v1/capacity?interval=day').set(memberOfB).expect(200);
    const own = rows.filter((row) => row.initiativeId === 'init-b');
    expectDailyClose(body.data.summary.daily, expectedDaily(own, 5150));
    expect(body.data.initiatives.map((i: { initiative_id: string }) => i.initiative_id)).toEqual(['init-b']);
  });

  it('adds budget_status always, and daily figures only when asked', async () => {
    const { body } = await request(t.server).get('/v1/capacity').set(admin).expect(200);
    expect(body.data.summary).not.toHaveProperty('daily');
    expect(body.data.summary).not.toHaveProperty('thresholds_crossed');
    for (const entry of [body.data.summary, ...body.data.pools, ...body.data.initiatives]) {
      expect(['on_track', 'at_risk', 'exhausted']).toContain(entry.budget_status);
    }
    const bad = await request(t.server).get('/v1/capacity?interval=week').set(admin).expect(400);
    expect(bad.body.error.details).toEqual([
      expect.objectContaining({ field: 'interval', location: 'query' }),
    ]);
  });
});
