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

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
// Not aligned to any step, so the first and last buckets are partial.
const STARTED = new Date('2026-03-09T06:02:17.000Z').getTime();
const COMPLETED = STARTED + 6 * HOUR + 7 * MINUTE;
const GPU_COUNT = 4;

/** A deterministic stream of readings every 37 s with a gap of 20 minutes, so some buckets are empty. */
function readings(): SampleSeed[] {
  const samples: SampleSeed[] = [];
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  for (let at = STARTED; at <= COMPLETED; at += 37_000) {
    if (at > STARTED + 2 * HOUR && at < STARTED + 2 * HOUR + 20 * MINUTE) continue;
    samples.push({
      workloadId: 'series-job',
      at: new Date(at),
      gpuUtilization: Math.round(next() * 10_000) / 100,
      memoryUtilization: Math.round(next() * 10_000) / 100,
      temperature: 40 + Math.round(next() * 400) / 10,
      powerUsage: 100 + Math.round(next() * 60_000) / 100,
    });
  }
  return samples;
}

type Metric = 'gpu_utilization' | 'memory_utilization' | 'temperature' | 'power_usage' | 'gpu_usage';
const FIELD: Record<Metric, keyof SampleSeed> = {
  gpu_utilization: 'gpuUtilization',
  memory_utilization: 'memoryUtilization',
  temperature: 'temperature',
  power_usage: 'powerUsage',
  gpu_usage: 'gpuUtilization',
};

function valueOf(sample: SampleSeed, metric: Metric): number {
  const value = sample[FIELD[metric]] as number;
  return metric === 'gpu_usage' ? (value * GPU_COUNT) / 100 : value;
}

/** The series recomputed from the raw readings: every epoch-aligned bucket overlapping [start, end]. */
function expectedSeries(
  samples: SampleSeed[],
  start: number,
  end: number,
  stepMs: number,
  metrics: Metric[],
) {
  const points = [];
  for (let bucket = Math.floor(start / stepMs) * stepMs; bucket <= end; bucket += stepMs) {
    const inBucket = samples.filter((s) => {
      const at = new Date(s.at).getTime();
      return at >= bucket && at < bucket + stepMs && at >= start && at <= end;
    });
    const point: Record<string, unknown> = {
      timestamp: new Date(bucket).toISOString(),
      sample_count: inBucket.length,
    };
    for (const metric of metrics) {
      const values = inBucket.map((s) => valueOf(s, metric));
      point[metric] =
        values.length === 0
          ? { avg: null, min: null, max: null }
          : {
              avg: round4(values.reduce((a, b) => a + b, 0) / values.length),
              min: round4(Math.min(...values)),
              max: round4(Math.max(...values)),
            };
    }
    points.push(point);
  }
  return points;
}

/** PostgreSQL's percentile_cont: linear interpolation between the closest ranks. */
function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = fraction * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return round4(sorted[low] + (sorted[high] - sorted[low]) * (rank - low));
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** Sums in a different order may differ in the last of four decimals. */
function expectClose(actual: unknown, expected: unknown): void {
  if (typeof expected === 'number') {
    expect(typeof actual).toBe('number');
    expect(Math.abs((actual as number) - expected)).toBeLessThanOrEqual(0.00011);
  } else if (expected && typeof expected === 'object') {
    expect(Object.keys(actual as object).sort()).toEqual(Object.keys(expected).sort());
    for (const [key, value] of Object.entries(expected)) {
      expectClose((actual as Record<string, unknown>)[key], value);
    }
  } else {
    expect(actual).toEqual(expected);
  }
}

describe.each(SAMPLE_STORES)('GET /v1/workloads/:workload_id/metrics?step=, readings in %s', (store) => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;
  const samples = readings();

  beforeAll(async () => {
    t = await createTestApp();
    orgId = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    await insertWorkloads(t.dataSource, orgId, [
      {
        workloadId: 'series-job',
        gpuCount: GPU_COUNT,
        status: 'completed',
        submittedAt: new Date(STARTED - HOUR),
        startedAt: new Date(STARTED),
        completedAt: new Date(COMPLETED),
      },
      {
        workloadId: 'month-long',
        status: 'completed',
        submittedAt: new Date(STARTED - 40 * 24 * HOUR),
        startedAt: new Date(STARTED - 40 * 24 * HOUR),
        completedAt: new Date(STARTED),
      },
      { workloadId: 'waiting', status: 'pending', submittedAt: new Date(STARTED) },
    ]);
    await insertSamples(t.dataSource, orgId, samples);
    await sealForStore(t.dataSource, [orgId], store);
  });

  afterAll(() => t.close());

  it('gives one point per 5-minute bucket of the lifetime, equal to a recomputation from raw rows', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/series-job/metrics?time_range=job_lifetime&step=5m')
      .set(admin)
      .expect(200);
    const metrics: Metric[] = [
      'gpu_utilization',
      'memory_utilization',
      'temperature',
      'power_usage',
      'gpu_usage',
    ];
    const expected = expectedSeries(samples, STARTED, COMPLETED, 5 * MINUTE, metrics);
    expect(body.data.step_seconds).toBe(300);
    expect(body.data.series).toHaveLength(expected.length);
    expect(body.data.series).toHaveLength(
      Math.floor(COMPLETED / 300_000) - Math.floor(STARTED / 300_000) + 1,
    );
    expectClose(body.data.series, expected);
    const empty = body.data.series.filter((point: { sample_count: number }) => point.sample_count === 0);
    expect(empty.length).toBeGreaterThanOrEqual(3);
    expect(empty[0].gpu_utilization).toEqual({ avg: null, min: null, max: null });
  });

  it('adds p50 and p95 of each metric over the window', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/series-job/metrics?time_range=last_1h&step=1m&metrics=gpu_utilization,gpu_usage')
      .set(admin)
      .expect(200);
    const inWindow = samples.filter((s) => new Date(s.at).getTime() >= COMPLETED - HOUR);
    for (const metric of ['gpu_utilization', 'gpu_usage'] as Metric[]) {
      const values = inWindow.map((s) => valueOf(s, metric));
      expectClose(body.data.metrics[metric].p50, percentile(values, 0.5));
      expectClose(body.data.metrics[metric].p95, percentile(values, 0.95));
    }
    expect(Object.keys(body.data.metrics)).toEqual(['gpu_utilization', 'gpu_usage']);
    expect(Object.keys(body.data.series[0]).sort()).toEqual(
      ['gpu_usage', 'gpu_utilization', 'sample_count', 'timestamp'].sort(),
    );
    const expected = expectedSeries(samples, COMPLETED - HOUR, COMPLETED, MINUTE, [
      'gpu_utilization',
      'gpu_usage',
    ]);
    expect(body.data.series).toHaveLength(61);
    expectClose(body.data.series, expected);
  });

  it('answers exactly as before without step', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/series-job/metrics?metrics=temperature')
      .set(admin)
      .expect(200);
    expect(body.data).toEqual({
      workload_id: 'series-job',
      time_range: 'last_1h',
      metrics: { temperature: expect.objectContaining({ avg: expect.any(Number) }) },
    });
    expect(Object.keys(body.data.metrics.temperature).sort()).toEqual(['avg', 'current', 'max', 'min']);
  });

  it('gives an empty series for a window without a start', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/waiting/metrics?time_range=job_lifetime&step=1h&metrics=power_usage')
      .set(admin)
      .expect(200);
    expect(body.data.series).toEqual([]);
    expect(body.data.metrics.power_usage).toEqual({
      avg: null,
      min: null,
      max: null,
      current: null,
      p50: null,
      p95: null,
    });
  });

  it('refuses more than 11,000 points, naming step and time_range', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/month-long/metrics?time_range=job_lifetime&step=1m')
      .set(admin)
      .expect(400);
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(body.error.details.map((detail: { field: string }) => detail.field)).toEqual([
      'step',
      'time_range',
    ]);
    await request(t.server)
      .get('/v1/workloads/month-long/metrics?time_range=job_lifetime&step=10m')
      .set(admin)
      .expect(200);
  });

  it.each(['0m', '30s', '90s', '2d', '5', 'm', '1w', '5M', '1.5h', ' 5m'])(
    'refuses step=%j',
    async (step) => {
      const { body } = await request(t.server)
        .get(`/v1/workloads/series-job/metrics?step=${encodeURIComponent(step)}`)
        .set(admin)
        .expect(400);
      expect(body.error.details).toEqual([expect.objectContaining({ field: 'step', location: 'query' })]);
    },
  );

  it('accepts steps from 1m to 1d in any unit', async () => {
    for (const [step, seconds] of [
      ['120s', 120],
      ['1d', 86_400],
      ['24h', 86_400],
      ['1440m', 86_400],
    ] as const) {
      const { body } = await request(t.server)
        .get(`/v1/workloads/series-job/metrics?time_range=job_lifetime&step=${step}`)
        .set(admin)
        .expect(200);
      expect(body.data.step_seconds).toBe(seconds);
    }
  });

  it('keeps the series outside a MEMBER scope as unknown', async () => {
    const { body } = await request(t.server)
      .get('/v1/workloads/series-job/metrics?time_range=job_lifetime&step=5m')
      .set(memberOfB)
      .expect(404);
    expect(body.error.code).toBe('NOT_FOUND');
  });
});
