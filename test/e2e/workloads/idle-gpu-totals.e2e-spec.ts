import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  writeAs,
  type SampleSeed,
  type WorkloadRow,
  type WorkloadSeed,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * Idle GPU-hours and efficiency of sets of workloads — statistics (summary, groups, timeline) and
 * capacity (summary, pools, initiatives) — equal a recomputation from the raw rows and readings
 * made here, for an ORG_ADMIN and a MEMBER, before and after samples and workloads change.
 */

const HOUR = 3_600_000;
const NOW = new Date('2026-05-04T12:00:00.000Z');
/** Mid-day, so the capacity window starts inside an edge day and covers one whole day before today. */
const PERIOD_START = new Date('2026-05-02T09:30:00.000Z');

const at = (iso: string) => new Date(iso);

const WORKLOADS: WorkloadSeed[] = [
  // Inside the whole day 2026-05-03.
  {
    workloadId: 'a-idle',
    initiativeId: 'init-a',
    instanceType: 'type-1',
    gpuCount: 8,
    ...ran('2026-05-03T06:00Z', 10),
  },
  {
    workloadId: 'b-busy',
    initiativeId: 'init-b',
    instanceType: 'type-1',
    gpuCount: 8,
    ...ran('2026-05-03T06:00Z', 10),
  },
  {
    workloadId: 'b-half',
    initiativeId: 'init-b',
    instanceType: 'type-2',
    gpuCount: 1,
    ...ran('2026-05-03T20:00Z', 2),
  },
  {
    workloadId: 'a-silent',
    initiativeId: 'init-a',
    instanceType: 'type-2',
    gpuCount: 4,
    ...ran('2026-05-03T01:00Z', 5),
  },
  // Across every day of the window: spans the first edge day and the whole day, ends inside today.
  {
    workloadId: 'a-long',
    initiativeId: 'init-a',
    instanceType: 'type-2',
    gpuCount: 2,
    ...ran('2026-05-01T12:00Z', 66),
  },
  // Starts inside the first edge day before the window opens, ends after it opened.
  {
    workloadId: 'b-edge',
    initiativeId: 'init-b',
    instanceType: 'type-1',
    gpuCount: 3,
    ...ran('2026-05-02T08:00Z', 4),
  },
  {
    workloadId: 'b-running',
    initiativeId: 'init-b',
    instanceType: 'type-1',
    gpuCount: 4,
    status: 'running',
    submittedAt: at('2026-05-04T06:00Z'),
    startedAt: at('2026-05-04T07:00Z'),
  },
];

function ran(start: string, hours: number): WorkloadSeed {
  const startedAt = new Date(start);
  return {
    status: 'completed',
    submittedAt: new Date(startedAt.getTime() - 60_000),
    startedAt,
    completedAt: new Date(startedAt.getTime() + hours * HOUR),
    exitCode: 0,
  };
}

/** GPU utilization readings per workload (`a-silent` has none). */
const READINGS: Record<string, number[]> = {
  'a-idle': [5, 15, 10],
  'b-busy': [90, 95, 100],
  'b-half': [50, 50],
  'a-long': [30, 70, 20, 40],
  'b-edge': [60],
  'b-running': [0, 20],
};

interface Figures {
  sampled: number;
  idle: number;
  efficiency: number | null;
}

interface Share {
  row: WorkloadRow;
  /** GPU-seconds counted (floor of the run so far for statistics; exact overlap for capacity). */
  gpuSeconds: number;
}

function figuresOf(shares: Share[], readings: Record<string, number[]>): Figures {
  let sampled = 0;
  let busy = 0;
  for (const { row, gpuSeconds } of shares) {
    const values = readings[row.workloadId];
    if (!values?.length) continue;
    sampled += gpuSeconds;
    busy += (gpuSeconds * values.reduce((a, b) => a + b, 0)) / values.length / 100;
  }
  return {
    sampled: sampled / 3600,
    idle: (sampled - busy) / 3600,
    efficiency: sampled ? busy / sampled : null,
  };
}

/** Statistics count a workload's whole run (up to now when running), floor seconds, by submission. */
function statsShare(row: WorkloadRow): Share {
  const end = row.completedAt ?? NOW;
  return { row, gpuSeconds: row.gpuCount * Math.floor((end.getTime() - row.startedAt!.getTime()) / 1000) };
}

/** Capacity counts the part of a run inside the period so far. */
function capacityShare(row: WorkloadRow): Share {
  const from = Math.max(row.startedAt!.getTime(), PERIOD_START.getTime());
  const to = Math.min((row.completedAt ?? NOW).getTime(), NOW.getTime());
  return { row, gpuSeconds: (row.gpuCount * Math.max(0, to - from)) / 1000 };
}

function expectFigures(actual: Record<string, unknown>, expected: Figures) {
  expect(actual.sampled_gpu_hours).toBeCloseTo(expected.sampled, 4);
  expect(actual.idle_gpu_hours).toBeCloseTo(expected.idle, 4);
  if (expected.efficiency === null) expect(actual.gpu_efficiency).toBeNull();
  else expect(actual.gpu_efficiency).toBeCloseTo(expected.efficiency, 4);
}

describe('idle GPU-hours and efficiency of statistics and capacity', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;
  let rows: WorkloadRow[];
  const readings: Record<string, number[]> = { ...READINGS };

  beforeAll(async () => {
    t = await createTestApp();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    orgId = await seedOrganization(t.dataSource, {
      budgetPeriodStart: PERIOD_START,
      budgetPeriodEnd: '2026-06-01T00:00:00Z',
      pools: [
        { poolId: 'pool-1', instanceTypes: ['type-1'] },
        { poolId: 'pool-2', instanceTypes: ['type-2'] },
      ],
      allocations: [
        { initiativeId: 'init-a', poolId: 'pool-2', allocatedGpuHours: 500 },
        { initiativeId: 'init-b', poolId: 'pool-1', allocatedGpuHours: 500 },
      ],
    });
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    rows = await insertWorkloads(t.dataSource, orgId, WORKLOADS);
    await insertSamples(t.dataSource, orgId, samplesOf(READINGS));
  });

  afterAll(() => t.close());

  function samplesOf(values: Record<string, number[]>): SampleSeed[] {
    return Object.entries(values).flatMap(([workloadId, list]) => {
      const row = rows.find((candidate) => candidate.workloadId === workloadId)!;
      return list.map((gpuUtilization, index) => ({
        workloadId,
        at: new Date(row.startedAt!.getTime() + (index + 1) * 60_000),
        gpuUtilization,
      }));
    });
  }

  const inScope = (initiatives: string[] | null) =>
    rows.filter((row) => initiatives === null || initiatives.includes(row.initiativeId));

  async function expectStats(headers: Record<string, string>, initiatives: string[] | null) {
    const { body } = await request(t.server)
      .get('/v1/workloads/stats')
      .query({ start_date: '2026-05-01', end_date: '2026-05-05', group_by: 'initiative_id', interval: 'day' })
      .set(headers)
      .expect(200);
    const visible = inScope(initiatives);
    expectFigures(body.data.summary, figuresOf(visible.map(statsShare), readings));
    for (const group of body.data.grouped) {
      const own = visible.filter((row) => row.initiativeId === group.initiative_id);
      expectFigures(group, figuresOf(own.map(statsShare), readings));
    }
    expect(body.data.grouped.map((group: { initiative_id: string }) => group.initiative_id).sort()).toEqual(
      [...new Set(visible.map((row) => row.initiativeId))].sort(),
    );
    expect(body.data.timeline).toHaveLength(4);
    for (const bucket of body.data.timeline) {
      const start = new Date(bucket.bucket_start).getTime();
      const inBucket = visible.filter(
        (row) => row.submittedAt.getTime() >= start && row.submittedAt.getTime() < start + 24 * HOUR,
      );
      expectFigures(bucket, figuresOf(inBucket.map(statsShare), readings));
    }
  }

  async function expectCapacity(headers: Record<string, string>, initiatives: string[] | null) {
    const { body } = await request(t.server).get('/v1/capacity').set(headers).expect(200);
    const visible = inScope(initiatives);
    expectFigures(body.data.summary, figuresOf(visible.map(capacityShare), readings));
    for (const pool of body.data.pools) {
      const types = pool.pool_id === 'pool-1' ? ['type-1'] : ['type-2'];
      const own = visible.filter((row) => types.includes(row.instanceType));
      expectFigures(pool, figuresOf(own.map(capacityShare), readings));
    }
    expect(body.data.initiatives).toHaveLength(initiatives?.length ?? 2);
    for (const initiative of body.data.initiatives) {
      const own = visible.filter((row) => row.initiativeId === initiative.initiative_id);
      expectFigures(initiative, figuresOf(own.map(capacityShare), readings));
    }
  }

  it('equal the recomputation, for an ORG_ADMIN and a MEMBER', async () => {
    // A guard that the data exercises every part: idle time is there, and some is not sampled.
    const all = figuresOf(rows.map(statsShare), readings);
    expect(all.idle).toBeGreaterThan(10);
    expect(rows.map(statsShare).reduce((sum, share) => sum + share.gpuSeconds, 0) / 3600).toBeGreaterThan(
      all.sampled,
    );
    await expectStats(admin, null);
    await expectStats(memberOfB, ['init-b']);
    await expectCapacity(admin, null);
    await expectCapacity(memberOfB, ['init-b']);
  });

  it('follow new readings, a workload moved to another initiative, and one removed', async () => {
    readings['a-silent'] = [80];
    readings['a-idle'] = [...READINGS['a-idle'], 95, 99];
    await insertSamples(t.dataSource, orgId, [
      { workloadId: 'a-silent', at: new Date('2026-05-03T01:30:00Z'), gpuUtilization: 80 },
      { workloadId: 'a-idle', at: new Date('2026-05-03T07:00:00Z'), gpuUtilization: 95 },
      { workloadId: 'a-idle', at: new Date('2026-05-03T07:01:00Z'), gpuUtilization: 99 },
    ]);
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET initiative_id = 'init-b' WHERE organization_id = $1 AND workload_id = 'a-long'`,
      [orgId],
    );
    rows.find((row) => row.workloadId === 'a-long')!.initiativeId = 'init-b';
    await writeAs(
      t.dataSource,
      `DELETE FROM workloads WHERE organization_id = $1 AND workload_id = 'b-half'`,
      [orgId],
    );
    rows = rows.filter((row) => row.workloadId !== 'b-half');
    await expectStats(admin, null);
    await expectStats(memberOfB, ['init-b']);
    await expectCapacity(admin, null);
    await expectCapacity(memberOfB, ['init-b']);
  });
});
