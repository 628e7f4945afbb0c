import { ImportRejectedError } from '../../import/import-errors';
import { importDocument, insertWorkloads, seedOrganization } from '../../../test/support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../../test/support/own-database';
import { aggregateDifferences } from '../../../test/support/rollup-residue';
import { ALL_SAMPLES_SQL } from '../../../test/support/samples';

const DAY = 86_400_000;
const MINUTE = 60_000;
const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;

/**
 * Values whose numeric forms differ in scale and in how they are summed: whole numbers, tenths and
 * cents (summed as integer cents by the day blocks' insert trigger), and values with more digits
 * than cents or beyond 1e13 (converted one by one, as rows always were).
 */
const SHAPES: ((k: number) => number)[] = [
  (k) => k % 90,
  (k) => (k % 900) / 10,
  (k) => (k % 9000) / 100,
  (k) => ((k * 7919) % 10000) / 137,
  (k) => 0.1 + 0.2 + (k % 3),
  (k) => (k % 2 === 0 ? 0 : 33.33),
];

/**
 * Readings written straight into day blocks: their lifetime sums equal sum(value::numeric) over the
 * stored readings, as text (the same number and scale, for every mix of value shapes), and a load
 * of several staging chunks writes each reading once. Own database: the aggregates are compared
 * whole.
 */
describe('writing day blocks', () => {
  let db: OwnDatabase;
  let org: string;

  beforeAll(async () => {
    db = await createOwnDatabase('daysums');
    org = await seedOrganization(db.dataSource);
  }, 120_000);

  afterAll(() => db?.drop());

  const insertRunning = (workloads: string[], since: number) =>
    insertWorkloads(
      db.dataSource,
      org,
      workloads.map((workloadId) => ({
        workloadId,
        status: 'running' as const,
        submittedAt: new Date(since),
        startedAt: new Date(since),
      })),
    );

  it('equal the numeric sums of the readings, scale included', async () => {
    const workloads = SHAPES.flatMap((_, a) => SHAPES.map((__, b) => `sums-${a}-${b}`));
    const start = Math.floor(Date.now() / DAY) * DAY - 3 * DAY;
    await insertRunning(workloads, start - DAY);
    const samples = workloads.flatMap((workloadId, index) => {
      const first = SHAPES[Math.floor(index / SHAPES.length)];
      const second = SHAPES[index % SHAPES.length];
      return Array.from({ length: 60 }, (_, k) => {
        const shape = k % 2 === 0 ? first : second;
        return {
          organization_id: org,
          workload_id: workloadId,
          timestamp: new Date(start + k * 37 * 60_000).toISOString(),
          gpu_utilization: Math.min(100, shape(k)),
          memory_utilization: Math.min(100, shape(k + 1)),
          temperature: k === 7 ? 12345678901234.5 : shape(k + 2) - 20,
          power_usage: shape(k + 3) * 7,
        };
      });
    });
    await importDocument(db.dataSource, { metric_samples: samples });

    const [{ blocks }] = await db.dataSource.query(
      'SELECT count(*)::int AS blocks FROM metric_sample_days WHERE organization_id = $1',
      [org],
    );
    expect(blocks).toBeGreaterThanOrEqual(workloads.length);
    const sums = (prefix: string) => METRICS.map((m) => `${prefix}${m}_sum::text AS ${m}`).join(', ');
    const stored = await db.dataSource.query(
      `SELECT workload_id, sample_count::int, ${sums('')} FROM metric_aggregates
       WHERE organization_id = $1 ORDER BY workload_id`,
      [org],
    );
    const recomputed = await db.dataSource.query(
      `SELECT workload_id, count(*)::int AS sample_count, ${METRICS.map((m) => `sum(${m}::numeric)::text AS ${m}`).join(', ')}
       FROM ${ALL_SAMPLES_SQL} s WHERE organization_id = $1 GROUP BY workload_id ORDER BY workload_id`,
      [org],
    );
    expect(recomputed).toHaveLength(workloads.length);
    expect(stored).toEqual(recomputed);
  }, 60_000);

  it('a load of several chunks stores every reading once, in blocks and the current hour in rows', async () => {
    const workloads = ['chunks-a', 'chunks-b', 'chunks-c'];
    const now = Date.now();
    const first = Math.floor((now - 2 * DAY) / (10 * MINUTE)) * 10 * MINUTE;
    await insertRunning(workloads, first - DAY);
    // Time-major, as a sync reads window by window: every chunk holds readings of every workload
    // and of days that other chunks also write.
    const times = Array.from(
      { length: Math.floor((now - first) / (10 * MINUTE)) + 1 },
      (_, k) => first + k * 10 * MINUTE,
    );
    const sample = (workloadId: string, time: number, k: number) => ({
      organization_id: org,
      workload_id: workloadId,
      timestamp: new Date(time).toISOString(),
      gpu_utilization: (k * 3.25) % 100,
      memory_utilization: (k * 1.5) % 100,
      temperature: 40 + (k % 20) / 4,
      power_usage: 100 + (k % 50),
    });
    const samples = times.flatMap((time, k) => workloads.map((id) => sample(id, time, k)));
    const summary = await importDocument(db.dataSource, { metric_samples: samples }, { sampleChunkRows: 50 });
    expect(summary.written.metric_samples).toBe(samples.length);

    const [stored] = await db.dataSource.query(
      `SELECT count(*)::int AS readings, count(DISTINCT (workload_id, sampled_at))::int AS distinct_readings,
              (SELECT count(*)::int FROM metric_samples WHERE organization_id = $1 AND workload_id LIKE 'chunks-%'
                 AND sampled_at < date_trunc('hour', now(), 'UTC')) AS sealed_hour_rows
       FROM ${ALL_SAMPLES_SQL} s WHERE organization_id = $1 AND workload_id LIKE 'chunks-%'`,
      [org],
    );
    expect(stored).toEqual({
      readings: samples.length,
      distinct_readings: samples.length,
      sealed_hour_rows: 0,
    });
    expect(await aggregateDifferences(db.dataSource, org)).toEqual([]);

    // The same load again rewrites nothing.
    const again = await importDocument(db.dataSource, { metric_samples: samples }, { sampleChunkRows: 50 });
    expect(again.written.metric_samples).toBe(0);

    // A sample repeated in two chunks of one load is reported with both records; nothing is written.
    const repeated = [...samples.slice(0, 120), { ...samples[3], gpu_utilization: 1 }];
    const rejected = importDocument(db.dataSource, { metric_samples: repeated }, { sampleChunkRows: 50 });
    await expect(rejected).rejects.toBeInstanceOf(ImportRejectedError);
    await expect(rejected).rejects.toMatchObject({
      issues: [expect.objectContaining({ location: 120, seeAlso: 3 })],
    });
    expect(await aggregateDifferences(db.dataSource, org)).toEqual([]);
  }, 60_000);
});
