import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  type WorkloadRow,
  type WorkloadSeed,
  NO_SAMPLES,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';
import { queueFiguresOf } from './queue-figures';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const NOW = new Date('2026-03-12T00:00:00.000Z');

/** New York's local midnights from 6 to 11 March 2026: DST starts on the 8th, so that day lasts 23 hours. */
const NEW_YORK_DAYS = [
  '2026-03-06T05:00:00.000Z',
  '2026-03-07T05:00:00.000Z',
  '2026-03-08T05:00:00.000Z',
  '2026-03-09T04:00:00.000Z',
  '2026-03-10T04:00:00.000Z',
  '2026-03-11T04:00:00.000Z',
];

/** Workloads on both sides of every boundary, in two initiatives, with every status. */
function workloadSeeds(): WorkloadSeed[] {
  const seeds: WorkloadSeed[] = [];
  const statuses = ['completed', 'failed', 'cancelled', 'running', 'pending'] as const;
  let index = 0;
  for (const boundary of NEW_YORK_DAYS) {
    for (const offset of [-61 * MINUTE, -1000, 0, 17 * MINUTE, 5 * HOUR + 3 * MINUTE]) {
      const submittedAt = new Date(new Date(boundary).getTime() + offset);
      const status = statuses[index % statuses.length];
      const finished = status === 'completed' || status === 'failed' || status === 'cancelled';
      seeds.push({
        workloadId: `tl-${index}`,
        initiativeId: index % 3 === 0 ? 'init-b' : 'init-a',
        submittedBy: index % 2 === 0 ? 'alice@example.com' : 'bob@example.com',
        gpuCount: 1 + (index % 4),
        status,
        submittedAt,
        startedAt: status === 'pending' ? null : new Date(submittedAt.getTime() + 2 * MINUTE),
        completedAt: finished ? new Date(submittedAt.getTime() + (37 + index) * MINUTE) : null,
        exitCode: status === 'completed' ? 0 : status === 'failed' ? 3 : null,
      });
      index += 1;
    }
  }
  return seeds;
}

function gpuSeconds(row: WorkloadRow): number {
  if (!row.startedAt) return 0;
  const end = row.completedAt ?? NOW;
  return row.gpuCount * Math.floor((end.getTime() - row.startedAt.getTime()) / 1000);
}

interface Totals {
  total_workloads: number;
  total_gpu_hours: number;
  total_cost: null;
  unpriced_gpu_hours: number;
  idle_cost: null;
  total_energy_kwh: number;
  total_carbon_kg: number;
  uncovered_energy_kwh: number;
  success_rate: number | null;
}

function totalsOf(rows: WorkloadRow[]): Totals {
  const completed = rows.filter((row) => row.status === 'completed').length;
  const failed = rows.filter((row) => row.status === 'failed').length;
  return {
    total_workloads: rows.length,
    total_gpu_hours: round4(rows.reduce((sum, row) => sum + gpuSeconds(row), 0) / 3600),
    total_cost: null,
    unpriced_gpu_hours: round4(rows.reduce((sum, row) => sum + gpuSeconds(row), 0) / 3600),
    idle_cost: null,
    total_energy_kwh: 0,
    total_carbon_kg: 0,
    uncovered_energy_kwh: 0,
    success_rate: completed + failed === 0 ? null : round4(completed / (completed + failed)),
  };
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** The timeline recomputed from the rows: a workload in the bucket where it was submitted. */
function expectedTimeline(rows: WorkloadRow[], boundaries: string[], groupKey?: 'initiative_id') {
  return boundaries.slice(0, -1).map((start, index) => {
    const end = boundaries[index + 1];
    const inBucket = rows.filter(
      (row) => row.submittedAt >= new Date(start) && row.submittedAt < new Date(end),
    );
    const bucket: Record<string, unknown> = {
      bucket_start: start,
      bucket_end: end,
      ...totalsOf(inBucket),
      ...NO_SAMPLES,
      ...queueFiguresOf(inBucket),
    };
    if (groupKey) {
      const keys = [...new Set(inBucket.map((row) => row.initiativeId))];
      bucket.grouped = keys
        .map((key) => {
          const own = inBucket.filter((row) => row.initiativeId === key);
          const { total_workloads, total_gpu_hours, success_rate } = totalsOf(own);
          return {
            initiative_id: key,
            workload_count: total_workloads,
            gpu_hours: total_gpu_hours,
            total_cost: null,
            unpriced_gpu_hours: total_gpu_hours,
            idle_cost: null,
            total_energy_kwh: 0,
            total_carbon_kg: 0,
            uncovered_energy_kwh: 0,
            success_rate,
            ...NO_SAMPLES,
            ...queueFiguresOf(own),
          };
        })
        .sort((a, b) => b.workload_count - a.workload_count || (a.initiative_id < b.initiative_id ? -1 : 1));
    }
    return bucket;
  });
}

describe('GET /v1/workloads/stats?interval=', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfA: Record<string, string>;
  let rows: WorkloadRow[];

  beforeAll(async () => {
    t = await createTestApp();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    orgId = await seedOrganization(t.dataSource, { timezone: 'America/New_York' });
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfA = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-a'] }),
      orgId,
    );
    rows = await insertWorkloads(t.dataSource, orgId, workloadSeeds());
  });

  afterAll(() => t.close());

  const range = `start_date=${NEW_YORK_DAYS[0]}&end_date=${NEW_YORK_DAYS[NEW_YORK_DAYS.length - 1]}`;

  it('cuts a custom range into local days across a DST change, each equal to a recomputation', async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?${range}&interval=day`)
      .set(admin)
      .expect(200);
    expect(body.data.timeline).toEqual(expectedTimeline(rows, NEW_YORK_DAYS));
    const eighth = body.data.timeline[2];
    expect(new Date(eighth.bucket_end).getTime() - new Date(eighth.bucket_start).getTime()).toBe(23 * HOUR);
  });

  it('sums its buckets to the summary, and groups each bucket like the summary', async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?${range}&interval=day&group_by=initiative_id`)
      .set(admin)
      .expect(200);
    const timeline = body.data.timeline as Totals[];
    expect(timeline.reduce((sum, bucket) => sum + bucket.total_workloads, 0)).toBe(
      body.data.summary.total_workloads,
    );
    expect(round4(timeline.reduce((sum, bucket) => sum + bucket.total_gpu_hours, 0))).toBeCloseTo(
      body.data.summary.total_gpu_hours,
      3,
    );
    expect(body.data.timeline).toEqual(expectedTimeline(rows, NEW_YORK_DAYS, 'initiative_id'));
  });

  it('gives hours in absolute time and keeps every workload once', async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?${range}&interval=hour`)
      .set(admin)
      .expect(200);
    const hours: string[] = [];
    for (
      let at = new Date(NEW_YORK_DAYS[0]).getTime();
      at <= new Date(NEW_YORK_DAYS[5]).getTime();
      at += HOUR
    ) {
      hours.push(new Date(at).toISOString());
    }
    expect(body.data.timeline).toHaveLength(hours.length - 1);
    expect(body.data.timeline).toEqual(expectedTimeline(rows, hours));
  });

  it('starts weeks on local Mondays and covers the whole range', async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?${range}&interval=week`)
      .set(admin)
      .expect(200);
    // Monday 2 March 00:00 EST and Monday 9 March 00:00 EDT, then the end of that week.
    const weeks = ['2026-03-02T05:00:00.000Z', '2026-03-09T04:00:00.000Z', '2026-03-16T04:00:00.000Z'];
    const inRange = rows.filter(
      (row) => row.submittedAt >= new Date(NEW_YORK_DAYS[0]) && row.submittedAt < new Date(NEW_YORK_DAYS[5]),
    );
    expect(body.data.timeline).toEqual(expectedTimeline(inRange, weeks));
  });

  it("counts only a MEMBER's initiatives", async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?${range}&interval=day&group_by=initiative_id`)
      .set(memberOfA)
      .expect(200);
    const own = rows.filter((row) => row.initiativeId === 'init-a');
    expect(body.data.timeline).toEqual(expectedTimeline(own, NEW_YORK_DAYS, 'initiative_id'));
  });

  it('leaves the answer as it was without interval', async () => {
    const { body } = await request(t.server).get(`/v1/workloads/stats?${range}`).set(admin).expect(200);
    expect(body.data).not.toHaveProperty('timeline');
    expect(Object.keys(body.data).sort()).toEqual(['grouped', 'range', 'summary']);
  });

  it('refuses more than 11,000 buckets and unknown intervals, naming interval', async () => {
    const tooMany = await request(t.server)
      .get('/v1/workloads/stats?start_date=2024-01-01&end_date=2026-01-01&interval=hour')
      .set(admin)
      .expect(400);
    expect(tooMany.body.error.details).toEqual([
      expect.objectContaining({ field: 'interval', location: 'query' }),
    ]);
    const unknown = await request(t.server).get('/v1/workloads/stats?interval=month').set(admin).expect(400);
    expect(unknown.body.error.details).toEqual([
      expect.objectContaining({ field: 'interval', location: 'query' }),
    ]);
  });

  it('gives no bucket for an empty range', async () => {
    const { body } = await request(t.server)
      .get(`/v1/workloads/stats?start_date=${NEW_YORK_DAYS[1]}&end_date=${NEW_YORK_DAYS[1]}&interval=day`)
      .set(admin)
      .expect(200);
    expect(body.data.timeline).toEqual([]);
  });
});
