import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type SampleSeed,
  type WorkloadRow,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const NOW = new Date('2026-05-04T12:00:00.000Z');

/** Utilization readings per workload; `silent` has none and is ranked by neither figure. */
const READINGS: Record<string, number[]> = {
  'idle-big': [5, 15, 10],
  'busy-big': [90, 95, 100],
  'half-small': [50, 50],
  'tie-a': [20],
  'tie-b': [20],
  'running-idle': [0, 20],
};

interface Expected {
  workloadId: string;
  initiativeId: string;
  idle: number;
  efficiency: number;
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** Idle GPU-hours and efficiency recomputed from the rows and their readings. */
function expected(rows: WorkloadRow[]): Expected[] {
  return rows
    .filter((row) => READINGS[row.workloadId])
    .map((row) => {
      const readings = READINGS[row.workloadId];
      const efficiency = readings.reduce((a, b) => a + b, 0) / readings.length / 100;
      const end = row.completedAt ?? NOW;
      const seconds = row.startedAt ? Math.floor((end.getTime() - row.startedAt.getTime()) / 1000) : 0;
      const gpuHours = (row.gpuCount * seconds) / 3600;
      return {
        workloadId: row.workloadId,
        initiativeId: row.initiativeId,
        idle: gpuHours * (1 - efficiency),
        efficiency,
      };
    });
}

describe('idle GPU-hours and efficiency', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;
  let rows: WorkloadRow[];

  beforeAll(async () => {
    t = await createTestApp();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    orgId = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    const finished = (start: number, hours: number) => ({
      status: 'completed' as const,
      submittedAt: new Date(start - MINUTE),
      startedAt: new Date(start),
      completedAt: new Date(start + hours * HOUR),
    });
    const day = NOW.getTime() - 30 * HOUR;
    rows = await insertWorkloads(t.dataSource, orgId, [
      { workloadId: 'idle-big', gpuCount: 8, ...finished(day, 10) },
      { workloadId: 'busy-big', gpuCount: 8, initiativeId: 'init-b', ...finished(day, 10) },
      { workloadId: 'half-small', gpuCount: 1, ...finished(day, 2) },
      { workloadId: 'tie-a', gpuCount: 2, initiativeId: 'init-b', ...finished(day, 3) },
      { workloadId: 'tie-b', gpuCount: 2, initiativeId: 'init-b', ...finished(day, 3) },
      {
        workloadId: 'running-idle',
        gpuCount: 4,
        status: 'running',
        submittedAt: new Date(NOW.getTime() - 6 * HOUR),
        startedAt: new Date(NOW.getTime() - 5 * HOUR),
      },
      { workloadId: 'silent', gpuCount: 8, ...finished(day, 20) },
    ]);
    const samples: SampleSeed[] = Object.entries(READINGS).flatMap(([workloadId, values]) =>
      values.map((value, index) => ({
        workloadId,
        at: new Date(day + (index + 1) * MINUTE),
        gpuUtilization: value,
      })),
    );
    await insertSamples(t.dataSource, orgId, samples);
  });

  afterAll(() => t.close());

  it('gives each workload its idle GPU-hours and efficiency, null without samples', async () => {
    for (const figure of expected(rows)) {
      const { body } = await request(t.server)
        .get(`/v1/workloads/${figure.workloadId}`)
        .set(admin)
        .expect(200);
      expect(body.data.gpu_efficiency).toBeCloseTo(figure.efficiency, 4);
      expect(body.data.idle_gpu_hours).toBeCloseTo(figure.idle, 3);
    }
    const silent = await request(t.server).get('/v1/workloads/silent').set(admin).expect(200);
    expect(silent.body.data).toMatchObject({
      idle_gpu_hours: null,
      gpu_efficiency: null,
      gpu_hours_used: 160,
    });
  });

  it('ranks by idle GPU-hours, ties by workload_id, the sampled workloads only', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/metrics?sort_by=idle_gpu_hours&limit=100')
      .set(admin)
      .expect(200);
    const all = expected(rows).sort((a, b) => b.idle - a.idle || (a.workloadId < b.workloadId ? -1 : 1));
    expect(body.data.workloads.map((entry: { workload_id: string }) => entry.workload_id)).toEqual(
      all.map((figure) => figure.workloadId),
    );
    body.data.workloads.forEach(
      (entry: { idle_gpu_hours: { avg: number; current: number } }, index: number) => {
        expect(entry.idle_gpu_hours.avg).toBeCloseTo(all[index].idle, 3);
        expect(entry.idle_gpu_hours.current).toBe(entry.idle_gpu_hours.avg);
      },
    );
    expect(body.metadata.total_count).toBe(6);
    expect(body.data.scope_average.idle_gpu_hours).toBeCloseTo(all.reduce((s, f) => s + f.idle, 0) / 6, 3);
  });

  it('ranks running workloads by idle GPU-hours up to now, and honours order and scope', async () => {
    const running = await request(t.server)
      .get('/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running')
      .set(admin)
      .expect(200);
    expect(running.body.data.workloads).toEqual([
      expect.objectContaining({ workload_id: 'running-idle', idle_gpu_hours: { avg: 18, current: 18 } }),
    ]);
    const member = await request(t.server)
      .get('/v1/workloads/metrics?sort_by=idle_gpu_hours&order=asc')
      .set(memberOfB)
      .expect(200);
    const own = expected(rows)
      .filter((figure) => figure.initiativeId === 'init-b')
      .sort((a, b) => a.idle - b.idle || (a.workloadId < b.workloadId ? -1 : 1));
    expect(member.body.data.workloads.map((entry: { workload_id: string }) => entry.workload_id)).toEqual(
      own.map((figure) => figure.workloadId),
    );
    expect(member.body.metadata.total_count).toBe(3);
  });

  it('ranks by efficiency as utilization ÷ 100', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/metrics?sort_by=gpu_efficiency&order=asc&limit=3')
      .set(admin)
      .expect(200);
    expect(body.data.workloads).toEqual([
      {
        workload_id: 'idle-big',
        name: 'training-job',
        initiative_id: 'init-a',
        gpu_count: 8,
        gpu_share: 8,
        gpu_sharing: null,
        gpu_efficiency: { avg: 0.1, current: 0.1 },
      },
      {
        workload_id: 'running-idle',
        name: 'training-job',
        initiative_id: 'init-a',
        gpu_count: 4,
        gpu_share: 4,
        gpu_sharing: null,
        gpu_efficiency: { avg: 0.1, current: 0.2 },
      },
      {
        workload_id: 'tie-a',
        name: 'training-job',
        initiative_id: 'init-b',
        gpu_count: 2,
        gpu_share: 2,
        gpu_sharing: null,
        gpu_efficiency: { avg: 0.2, current: 0.2 },
      },
    ]);
    const all = expected(rows);
    expect(body.data.scope_average.gpu_efficiency).toBeCloseTo(
      round4(all.reduce((s, f) => s + f.efficiency, 0) / all.length),
      4,
    );
  });
});
