import type { DataSource } from 'typeorm';
import { pruneSamples } from '../../cli/commands/prune.command';
import { sampleHoursBackfill } from '../../database/backfills/1763800035000-sample-hours';
import { hourTailsBackfill } from '../../database/backfills/1763800045000-hour-tails';
import { BACKFILLS_TABLE, runBackfills } from '../../database/backfills/backfill';
import type { AuthScope } from '../../common/auth/auth-scope';
import { round4 } from '../../common/http/decimal';
import {
  type HourWindowStats,
  type WindowStats,
  windowHourStatsQuery,
  windowStatsQuery,
} from '../../metrics/metrics.queries';
import { averageInterval, statsFromHours } from '../../metrics/window-averages';
import {
  importDocument,
  insertSamples,
  insertWorkloads,
  seedOrganization,
} from '../../../test/support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../../test/support/own-database';
import { rollupResidue } from '../../../test/support/rollup-residue';
import { sealForStore, unsealOrganizations } from '../../../test/support/samples';
import { SAMPLE_EVIDENCE_SQL } from '../workload-summaries/workload-summaries.definitions';
import { HOUR_TAILS } from './sample-hours.definitions';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;
const SLICED = ['step_us', ...METRICS].map(
  (c) => `d.${c}[h.first_index : h.first_index + h.sample_count - 1]`,
);

/** Every block's readings with their position in the block, decoded as readers decode whole days. */
const BLOCK_READINGS = `(
  SELECT d.workload_id, d.day_start, u.*,
         row_number() OVER (PARTITION BY d.workload_id, d.day_start ORDER BY u.sampled_at) AS i
  FROM metric_sample_days d
  CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, ${METRICS.map((m) => `d.${m}`).join(', ')}) u
  WHERE d.organization_id = $1
)`;

/** Stored hour summaries that differ from their recomputation from the blocks' readings. */
async function hourDifferences(dataSource: DataSource, organizationId: string): Promise<unknown[]> {
  const figures = (prefix: string) =>
    `${prefix}first_index, ${prefix}sample_count, ${prefix}first_sampled_at, ${prefix}last_sampled_at, ` +
    METRICS.map((m) => `${prefix}${m}_sum, ${prefix}${m}_min, ${prefix}${m}_max, ${prefix}${m}_last`).join(
      ', ',
    ) +
    HOUR_TAILS.map(({ metric }) => `, ${prefix}${metric}_top`).join('');
  return dataSource.query(
    `WITH recomputed AS (
       SELECT workload_id, day_start, date_trunc('hour', sampled_at, 'UTC') AS hour_start,
              min(i)::int AS first_index, count(*)::int AS sample_count,
              min(sampled_at) AS first_sampled_at, max(sampled_at) AS last_sampled_at,
              ${METRICS.map((m) => `sum(${m} ORDER BY sampled_at) AS ${m}_sum, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max, (array_agg(${m} ORDER BY sampled_at DESC))[1] AS ${m}_last`).join(',\n              ')},
              ${HOUR_TAILS.map(({ metric, divisor }) => `(array_agg(${metric} ORDER BY ${metric} DESC))[1 : count(*)::int / ${divisor} + 1] AS ${metric}_top`).join(', ')}
       FROM ${BLOCK_READINGS} r GROUP BY 1, 2, 3
     ),
     stored AS (
       SELECT workload_id, day_start, hour_start, ${figures('')}
       FROM metric_sample_hours WHERE organization_id = $1
     )
     SELECT coalesce(r.workload_id, s.workload_id) AS workload_id, coalesce(r.hour_start, s.hour_start) AS hour_start,
            to_jsonb(r) AS recomputed, to_jsonb(s) AS stored
     FROM recomputed r FULL JOIN stored s USING (workload_id, day_start, hour_start)
     WHERE r.workload_id IS NULL OR s.workload_id IS NULL
        OR (${figures('r.')}) IS DISTINCT FROM (${figures('s.')})`,
    [organizationId],
  );
}

/** Readings that an hour's slice decodes to and the whole day's decode does not, or the reverse. */
async function sliceDifferences(dataSource: DataSource, organizationId: string): Promise<number> {
  const sliced = `SELECT h.workload_id, e.* FROM metric_sample_hours h
    JOIN metric_sample_days d USING (organization_id, workload_id, day_start)
    CROSS JOIN LATERAL gpucap_unpack_hour(h.day_start, h.steps_before, ${SLICED.join(', ')}) e
    WHERE h.organization_id = $1`;
  const whole = `SELECT workload_id, sampled_at, ${METRICS.join(', ')} FROM ${BLOCK_READINGS} r`;
  const [{ count }] = await dataSource.query(
    `SELECT count(*)::int AS count FROM ((${sliced} EXCEPT ALL ${whole}) UNION ALL (${whole} EXCEPT ALL ${sliced})) x`,
    [organizationId],
  );
  return count;
}

/** Values of the shapes the blocks sum differently: whole, tenths, cents, long fractions, negative. */
function reading(workloadId: string, at: number, k: number, salt = 0) {
  return {
    workload_id: workloadId,
    timestamp: new Date(at).toISOString(),
    gpu_utilization: ((k * 7919 + salt) % 10000) / 100,
    memory_utilization: ((k * 31 + salt) % 1000) / 10,
    temperature: ((k * 13 + salt) % 90) - 20 + (k % 3) / 3,
    power_usage: ((k * 104729 + salt) % 100000) / 137,
  };
}

type EvidenceRow = Record<string, unknown>;

const EVIDENCE_OF_WINDOW = 'SELECT * FROM gpucap_window_evidence($1, $2, $3, $4)';
/** The rule's evidence from every reading of the window, as the summaries settle it. */
const RAW_EVIDENCE_OF_WINDOW = `SELECT ${SAMPLE_EVIDENCE_SQL} FROM gpucap_workload_samples($1, $2, $3, $4) s`;

const windowEvidence = (dataSource: DataSource, org: string, workloadId: string, bounds: readonly string[]) =>
  dataSource.query<EvidenceRow[]>(EVIDENCE_OF_WINDOW, [org, workloadId, ...bounds]);
const rawEvidence = (dataSource: DataSource, org: string, workloadId: string, bounds: readonly string[]) =>
  dataSource.query<EvidenceRow[]>(RAW_EVIDENCE_OF_WINDOW, [org, workloadId, ...bounds]);

describe('metric_sample_hours', () => {
  let db: OwnDatabase;
  let org: string;
  // Three UTC days back: readings before the new organization's seal watermark go straight to blocks.
  const base = Math.floor(Date.now() / DAY) * DAY - 3 * DAY;
  const workloads = ['hours-a', 'hours-b', 'hours-c'];

  beforeAll(async () => {
    db = await createOwnDatabase('hours');
    org = await seedOrganization(db.dataSource);
    await insertWorkloads(
      db.dataSource,
      org,
      workloads.map((workloadId) => ({
        workloadId,
        status: 'running' as const,
        submittedAt: new Date(base - 40 * DAY),
        startedAt: new Date(base - 40 * DAY),
      })),
    );
  }, 120_000);

  afterAll(() => db?.drop());

  const load = (records: ReturnType<typeof reading>[]) =>
    importDocument(db.dataSource, {
      metric_samples: records.map((record) => ({ organization_id: org, ...record })),
    });

  const expectExact = async () => {
    expect(await hourDifferences(db.dataSource, org)).toEqual([]);
    expect(await sliceDifferences(db.dataSource, org)).toBe(0);
  };

  it('equal their recomputation from the blocks through loads, late and re-sent readings and a re-seal', async () => {
    // Irregular times (7 min 13 s apart, an hour-long gap a day) over three days, one workload sparser.
    const first = workloads.flatMap((workloadId, w) =>
      Array.from({ length: 560 }, (_, k) => k)
        .filter((k) => k % 40 < 36 && (w < 2 || k % 3 === 0))
        .map((k) => reading(workloadId, base + k * 433_000 + w * 1_000, k)),
    );
    await load(first);
    const [{ hours }] = await db.dataSource.query(
      'SELECT count(*)::int AS hours FROM metric_sample_hours WHERE organization_id = $1',
      [org],
    );
    expect(hours).toBeGreaterThan(100);
    await expectExact();

    // Late readings inside hours already in blocks, and readings re-sent with other values.
    await load([
      ...workloads.map((workloadId, k) => reading(workloadId, base + 5 * HOUR + 17_000 + k, k, 3)),
      ...first
        .filter((_, k) => k % 11 === 0)
        .map((record) => ({ ...record, gpu_utilization: 1.5, power_usage: record.power_usage + 0.1 })),
    ]);
    await expectExact();

    // Rows written after the watermark went back, then sealed into the same days' blocks.
    await unsealOrganizations(db.dataSource, [org]);
    await insertSamples(
      db.dataSource,
      org,
      workloads.map((workloadId, k) => ({
        workloadId,
        at: new Date(base + DAY + 30 * 60_000 + 123 + k),
        gpuUtilization: 12.34,
      })),
    );
    await sealForStore(db.dataSource, [org], 'day blocks');
    await expectExact();
    expect(await rollupResidue(db.dataSource, org)).toEqual({});
  }, 120_000);

  it('give the window statistics and percentiles of the readings in time order, or say they cannot', async () => {
    const scope: AuthScope = {
      organizationId: org,
      role: 'ORG_ADMIN',
      initiativeIds: 'all',
      credentialKey: 'test',
      subject: 'test',
    };
    // Rows in the current hour too: a window reads both stores; and one inside an hour the blocks
    // hold, as while a seal is under way (one workload's windows there decode whole).
    await insertSamples(db.dataSource, org, [
      { workloadId: workloads[0], at: new Date(base + 2 * HOUR + 1_234), gpuUtilization: 77.7 },
    ]);
    await insertSamples(
      db.dataSource,
      org,
      workloads.map((workloadId) => ({ workloadId, at: new Date(Date.now() - 1_000), gpuUtilization: 33.3 })),
    );
    const windows: [number, number][] = [];
    for (let k = 0; k < 40; k += 1) {
      const low = base + ((k * 7_777_777) % (3 * DAY));
      windows.push([low, low + ((k * 3_333_331) % (30 * HOUR)) + 1]);
    }
    windows.push([base, Date.now()], [base + HOUR, base + 5 * HOUR], [base + 433_000, base + 5 * 433_000]);
    let settled = 0;
    for (const workloadId of workloads) {
      for (const [low, high] of windows) {
        const bounds = [new Date(low).toISOString(), new Date(high).toISOString()] as const;
        const fromHours = windowHourStatsQuery(scope, workloadId, ...bounds);
        const exactly = windowStatsQuery(scope, workloadId, ...bounds);
        const [hours]: HourWindowStats[] = await db.dataSource.query(fromHours.text, fromHours.values);
        const [exact]: WindowStats[] = await db.dataSource.query(exactly.text, exactly.values);
        // The statement in time order answers as the whole decode in time order did, bit for bit.
        const [decoded]: WindowStats[] = await db.dataSource.query(
          `SELECT count(*)::int AS sample_count, ${METRICS.map((m) => `avg(${m}) AS ${m}_avg, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max, (array_agg(${m}))[count(*)] AS ${m}_current`).join(', ')}
           FROM gpucap_workload_samples($1, $2, $3, $4)`,
          [org, workloadId, ...bounds],
        );
        expect(exact).toEqual(decoded);
        expect(hours.sample_count).toBe(exact.sample_count);
        for (const m of METRICS) {
          expect([hours[`${m}_min`], hours[`${m}_max`], hours[`${m}_current`]]).toEqual([
            exact[`${m}_min`],
            exact[`${m}_max`],
            exact[`${m}_current`],
          ]);
          if (exact.sample_count === 0) continue;
          const [lowest, highest] = averageInterval(
            hours[`${m}_sum`]!,
            hours.sample_count,
            hours[`${m}_min`]!,
            hours[`${m}_max`]!,
          );
          expect(lowest).toBeLessThanOrEqual(exact[`${m}_avg`]!);
          expect(highest).toBeGreaterThanOrEqual(exact[`${m}_avg`]!);
        }
        const percentiles = (source: string) =>
          db.dataSource.query(
            `SELECT ${METRICS.map((m) => `percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY ${m}) AS ${m}`).join(', ')}
             FROM ${source}($1, $2, $3, $4)`,
            [org, workloadId, ...bounds],
          );
        expect(await percentiles('gpucap_window_readings')).toEqual(
          await percentiles('gpucap_workload_samples'),
        );
        expect(await windowEvidence(db.dataSource, org, workloadId, bounds)).toEqual(
          await rawEvidence(db.dataSource, org, workloadId, bounds),
        );
        const answers = (average: number) => [round4(average), round4(average * 0.08)];
        const stats = statsFromHours(hours, (_, average) => answers(average));
        if (!stats) continue;
        settled += 1;
        for (const m of METRICS) {
          if (exact.sample_count === 0) expect(stats[`${m}_avg`]).toBeNull();
          else expect(answers(stats[`${m}_avg`]!)).toEqual(answers(exact[`${m}_avg`]!));
        }
      }
    }
    expect(settled).toBeGreaterThan(windows.length * workloads.length * 0.9);
  }, 120_000);

  it('give the right-sizing evidence of any window exactly, through hours holding more than their tails', async () => {
    // 'spike': one hour of 48 at 99 % holds more of the top 5 % and 1 % than its tails, so the whole
    // range needs the second pass; 'ties': a handful of values, so every rank lands on a tie.
    const spikeHour = 30;
    await insertWorkloads(
      db.dataSource,
      org,
      ['spike', 'ties'].map((workloadId) => ({
        workloadId,
        status: 'running' as const,
        submittedAt: new Date(base - DAY),
        startedAt: new Date(base - DAY),
      })),
    );
    await load([
      ...Array.from({ length: 48 * 60 }, (_, k) => ({
        ...reading('spike', base + k * 60_000 + 500, k),
        gpu_utilization:
          Math.floor(k / 60) === spikeHour ? 99 - (k % 60) / 100 : 10 + ((k * 37) % 1000) / 100,
        memory_utilization:
          Math.floor(k / 60) === spikeHour ? 90 + (k % 60) / 10 : 20 + ((k * 53) % 1000) / 100,
      })),
      ...Array.from({ length: 30 * 20 }, (_, k) => ({
        ...reading('ties', base + k * 180_000, k),
        gpu_utilization: 50,
        memory_utilization: k % 2 === 0 ? 40 : 60,
      })),
    ]);
    const whole = [new Date(base).toISOString(), new Date(base + 2 * DAY).toISOString()] as const;
    const [{ tail_last }] = await db.dataSource.query(
      `SELECT gpu_utilization_top[cardinality(gpu_utilization_top)] AS tail_last FROM metric_sample_hours
       WHERE organization_id = $1 AND workload_id = 'spike' AND hour_start = $2`,
      [org, new Date(base + spikeHour * HOUR)],
    );
    const [spike] = await rawEvidence(db.dataSource, org, 'spike', whole);
    expect(tail_last).toBeGreaterThan(spike.p95_gpu_utilization as number);

    const windows: [number, number][] = [
      [base, base + 2 * DAY],
      [base + spikeHour * HOUR, base + (spikeHour + 1) * HOUR - 1],
    ];
    for (let k = 0; k < 30; k += 1) {
      const low = base + ((k * 5_555_557) % (2 * DAY));
      windows.push([low, low + ((k * 7_654_321) % (40 * HOUR)) + 1]);
    }
    const expectEvidence = async (query: (text: string, values: unknown[]) => Promise<EvidenceRow[]>) => {
      for (const workloadId of ['spike', 'ties']) {
        for (const [low, high] of windows) {
          const bounds = [new Date(low).toISOString(), new Date(high).toISOString()] as const;
          const served = await query(EVIDENCE_OF_WINDOW, [org, workloadId, ...bounds]);
          const raw = await query(RAW_EVIDENCE_OF_WINDOW, [org, workloadId, ...bounds]);
          expect({ workloadId, bounds, evidence: served }).toEqual({ workloadId, bounds, evidence: raw });
        }
      }
    };
    await expectEvidence((text, values) => db.dataSource.query(text, values));

    // Hours without tails, as before their backfill: read whole, the same answers.
    const runner = db.dataSource.createQueryRunner();
    await runner.startTransaction();
    try {
      await runner.query(
        `UPDATE metric_sample_hours SET gpu_utilization_top = NULL, memory_utilization_top = NULL
         WHERE organization_id = $1 AND workload_id IN ('spike', 'ties') AND hour_start < $2`,
        [org, new Date(base + DAY)],
      );
      await expectEvidence((text, values) => runner.query(text, values));
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  }, 120_000);

  it('are dropped with their days by prune', async () => {
    await load(workloads.map((workloadId, k) => reading(workloadId, base - 30 * DAY + k * HOUR, k)));
    const old = `SELECT count(*)::int AS count FROM metric_sample_hours WHERE organization_id = $1 AND day_start < $2`;
    const cutoff = new Date(base - 20 * DAY);
    expect((await db.dataSource.query(old, [org, cutoff]))[0].count).toBe(3);
    const { partitions } = await pruneSamples(db.dataSource, cutoff);
    expect(partitions.map((p) => p.parent)).toContain('metric_sample_hours');
    expect((await db.dataSource.query(old, [org, cutoff]))[0].count).toBe(0);
    await expectExact();
  }, 120_000);

  it('are filled by the backfill for blocks stored before them', async () => {
    await db.dataSource.query('DELETE FROM metric_sample_hours');
    await db.dataSource.query(`DELETE FROM ${BACKFILLS_TABLE} WHERE name = $1`, [sampleHoursBackfill.name]);
    expect(await hourDifferences(db.dataSource, org)).not.toEqual([]);
    expect(await runBackfills(db.dataSource, [sampleHoursBackfill])).toEqual([sampleHoursBackfill.name]);
    await expectExact();
  }, 120_000);

  it('get their largest readings from the backfill when stored without them', async () => {
    await db.dataSource.query(
      'UPDATE metric_sample_hours SET gpu_utilization_top = NULL, memory_utilization_top = NULL WHERE hour_start < $1',
      [new Date(base + DAY)],
    );
    await db.dataSource.query(`DELETE FROM ${BACKFILLS_TABLE} WHERE name = $1`, [hourTailsBackfill.name]);
    expect(await hourDifferences(db.dataSource, org)).not.toEqual([]);
    expect(await runBackfills(db.dataSource, [hourTailsBackfill])).toEqual([hourTailsBackfill.name]);
    await expectExact();
  }, 120_000);
});
