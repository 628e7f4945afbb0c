import { PassThrough } from 'node:stream';
import { migrateCommand } from '../../../src/cli/commands/migrate.command';
import { loadConfig } from '../../../src/core/config/app-config';
import { moveBatchSql, sealSamples } from '../../../src/import/sample-seal';
import { importDocument, insertSamples, insertWorkloads, seedOrganization } from '../../support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { aggregateDifferences } from '../../support/rollup-residue';
import { ALL_SAMPLES_SQL, unsealOrganizations } from '../../support/samples';
import { TEST_JWT_SECRET } from '../../support/test-app';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const MINUTE = 60_000;
const WORKLOADS = ['seal-a', 'seal-b', 'seal-c', 'seal-d'];
/** Readings per workload: every 37 minutes over the last 9 days, so weeks and days are crossed. */
const READINGS = Math.floor((9 * DAY) / (37 * MINUTE));

function reading(workloadId: string, k: number, now: number) {
  return {
    workloadId,
    at: new Date(now - 9 * DAY + k * 37 * MINUTE),
    gpuUtilization: (k * 7.25 + workloadId.length) % 100,
    memoryUtilization: (k * 3.5) % 100,
    temperature: 40 + (k % 30) / 4,
    powerUsage: 100 + ((k * 13) % 400) / 8,
  };
}

/** A node of EXPLAIN (ANALYZE, FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

/**
 * The move of stored readings from rows into day blocks (sealSamples, run by `gpucap migrate` and
 * after every write): each reading stays once, every aggregate stays equal to its recomputation from
 * raw readings, a stopped move resumes, and writers that re-send readings while it runs stay exact.
 * The seal reaches every organization: own database.
 */
describe('sealing past days into day blocks', () => {
  let db: OwnDatabase;
  let org: string;
  const now = Date.now();

  beforeAll(async () => {
    db = await createOwnDatabase('seal');
    org = await seedOrganization(db.dataSource);
    await insertWorkloads(
      db.dataSource,
      org,
      WORKLOADS.map((workloadId) => ({
        workloadId,
        status: 'running' as const,
        submittedAt: new Date(now - 10 * DAY),
        startedAt: new Date(now - 10 * DAY),
      })),
    );
    // As an organization stored before the day blocks existed: every reading in rows, none sealed.
    await unsealOrganizations(db.dataSource, [org]);
    await insertSamples(
      db.dataSource,
      org,
      WORKLOADS.flatMap((id) => Array.from({ length: READINGS }, (_, k) => reading(id, k, now))),
    );
  }, 120_000);

  afterAll(() => db?.drop());

  const counts = async () =>
    (
      await db.dataSource.query(
        `SELECT (SELECT count(*)::int FROM metric_samples WHERE organization_id = $1) AS rows,
                (SELECT count(*)::int FROM ${ALL_SAMPLES_SQL} s WHERE organization_id = $1) AS readings,
                (SELECT count(DISTINCT (workload_id, sampled_at))::int FROM ${ALL_SAMPLES_SQL} s
                 WHERE organization_id = $1) AS distinct_readings`,
        [org],
      )
    )[0] as { rows: number; readings: number; distinct_readings: number };

  const watermark = async () =>
    (
      await db.dataSource.query(
        `SELECT sealed_before, sealing_to FROM sample_seal_watermarks WHERE organization_id = $1`,
        [org],
      )
    )[0] as { sealed_before: Date | string; sealing_to: Date | null };

  it('moves in batches, resumes when stopped, and keeps every reading once with exact aggregates', async () => {
    const total = WORKLOADS.length * READINGS;
    const aggregatesBefore = await db.dataSource.query(
      'SELECT * FROM metric_aggregates WHERE organization_id = $1 ORDER BY workload_id',
      [org],
    );

    // A seal to five hours ago, stopped after its second batch: what it moved is in blocks, the
    // rest still in rows. The next seal reaches further and adds to the day blocks it began.
    const lines: string[] = [];
    await expect(
      sealSamples(db.dataSource, {
        organizationIds: [org],
        before: new Date(now - 5 * HOUR),
        batchReadings: 40,
        progress: (line) => {
          lines.push(line);
          if (lines.length === 2) throw new Error('stopped');
        },
      }),
    ).rejects.toThrow('stopped');
    const stopped = await counts();
    expect(stopped.rows).toBeLessThan(total);
    expect(stopped).toMatchObject({ readings: total, distinct_readings: total });
    expect((await watermark()).sealing_to).not.toBeNull();

    // A writer re-sends readings on both sides of what was moved, with other values, mid-seal.
    const resent = WORKLOADS.flatMap((id) =>
      [0, 1, READINGS - 200, READINGS - 1].map((k) => {
        const r = reading(id, k, now);
        return {
          organization_id: org,
          workload_id: id,
          timestamp: r.at.toISOString(),
          gpu_utilization: 99.5,
          memory_utilization: 1.25,
          temperature: 80,
          power_usage: 700,
        };
      }),
    );
    const summary = await importDocument(db.dataSource, { metric_samples: resent });
    expect(summary.written.metric_samples).toBe(resent.length);
    expect(await aggregateDifferences(db.dataSource, org)).toEqual([]);

    // Run again: it finishes the move; every reading of an ended hour is in blocks.
    await sealSamples(db.dataSource, { organizationIds: [org], batchReadings: 40 });
    const sealed = await counts();
    expect(sealed).toEqual({
      rows: expect.any(Number),
      readings: total,
      distinct_readings: total,
    });
    const [{ old_rows }] = await db.dataSource.query(
      `SELECT count(*)::int AS old_rows FROM metric_samples
       WHERE organization_id = $1 AND sampled_at < date_trunc('hour', now(), 'UTC')`,
      [org],
    );
    expect(old_rows).toBe(0);
    expect(new Date((await watermark()).sealed_before).getTime()).toBe(Math.floor(Date.now() / HOUR) * HOUR);
    expect((await watermark()).sealing_to).toBeNull();
    expect(await aggregateDifferences(db.dataSource, org)).toEqual([]);

    // Re-sending the same readings again changes nothing, in either store.
    const again = await importDocument(db.dataSource, { metric_samples: resent });
    expect(again.written.metric_samples).toBe(0);
    const aggregatesAfter = await db.dataSource.query(
      'SELECT * FROM metric_aggregates WHERE organization_id = $1 ORDER BY workload_id',
      [org],
    );
    expect(aggregatesAfter.map((a: { sample_count: string }) => a.sample_count)).toEqual(
      aggregatesBefore.map((a: { sample_count: string }) => a.sample_count),
    );
  }, 120_000);

  it('reads the stored readings of a begun day about once, whatever join the planner prefers', async () => {
    // An hour sealed late in a UTC day merges into a block holding the day's earlier hours. Hash and
    // merge joins are disabled, as a partition without statistics makes them look dear: a nested loop
    // between the moved readings and the stored ones would read their product.
    const dayOrg = await seedOrganization(db.dataSource);
    const day = Math.floor((now - 3 * DAY) / DAY) * DAY;
    await insertWorkloads(db.dataSource, dayOrg, [
      { workloadId: 'busy', status: 'running', submittedAt: new Date(day), startedAt: new Date(day) },
    ]);
    await unsealOrganizations(db.dataSource, [dayOrg]);
    await insertSamples(
      db.dataSource,
      dayOrg,
      Array.from({ length: 21 * 60 }, (_, k) => ({ workloadId: 'busy', at: new Date(day + k * MINUTE) })),
    );
    await sealSamples(db.dataSource, { organizationIds: [dayOrg], before: new Date(day + 20 * HOUR) });

    const runner = db.dataSource.createQueryRunner();
    await runner.startTransaction();
    try {
      await runner.query('SELECT gpucap_lock_organizations($1::text[])', [[dayOrg]]);
      await runner.query(`SELECT set_config('gpucap.sealing', 'on', true)`);
      await runner.query('SET LOCAL enable_hashjoin = off');
      await runner.query('SET LOCAL enable_mergejoin = off');
      const [
        {
          'QUERY PLAN': [plan],
        },
      ] = await runner.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${moveBatchSql(false)}`, [
        new Date(day + 20 * HOUR),
        new Date(day + 21 * HOUR),
        [dayOrg],
        '',
        '',
      ]);
      const cteRowsRead = (node: PlanNode): number =>
        (node['Node Type'] === 'CTE Scan' ? node['Actual Rows'] * node['Actual Loops'] : 0) +
        (node.Plans ?? []).reduce((sum, child) => sum + cteRowsRead(child), 0);
      const moved = 60;
      const stored = 20 * 60;
      expect(plan.Plan['Actual Rows']).toBe(1);
      expect(cteRowsRead(plan.Plan)).toBeGreaterThanOrEqual(moved + stored);
      expect(cteRowsRead(plan.Plan)).toBeLessThan(10 * (moved + stored));
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
    await sealSamples(db.dataSource, { organizationIds: [dayOrg] });
    expect(await aggregateDifferences(db.dataSource, dayOrg)).toEqual([]);
  }, 60_000);

  it('gpucap migrate seals stored history with a progress line per batch', async () => {
    const other = await seedOrganization(db.dataSource);
    await insertWorkloads(db.dataSource, other, [{ workloadId: 'late', status: 'completed' }]);
    await unsealOrganizations(db.dataSource, [other]);
    await insertSamples(
      db.dataSource,
      other,
      Array.from({ length: 30 }, (_, k) => ({
        workloadId: 'late',
        at: new Date(now - 3 * DAY + k * MINUTE),
      })),
    );
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const config = loadConfig({ DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent' });
    const code = await migrateCommand([], {
      config,
      stdout,
      stderr: new PassThrough(),
      stdin: new PassThrough(),
    });
    expect(code).toBe(0);
    const output = Buffer.concat(chunks).toString();
    expect(output).toMatch(/^Sealed \d+ readings of metric_samples_w\d{4}_\d{2} \(\d+ so far, batch \d+\)$/m);
    expect(output).toMatch(/^Sealed 30 samples before \S+ into day blocks$/m);
    const [{ rows }] = await db.dataSource.query(
      'SELECT count(*)::int AS rows FROM metric_samples WHERE organization_id = $1',
      [other],
    );
    expect(rows).toBe(0);
    expect(await aggregateDifferences(db.dataSource, other)).toEqual([]);
  }, 60_000);
});
