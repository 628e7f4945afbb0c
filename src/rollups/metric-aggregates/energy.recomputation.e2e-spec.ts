import { pruneSamples } from '../../cli/commands/prune.command';
import { energyBackfill } from '../../database/backfills/1763800040000-energy';
import { BACKFILLS_TABLE, runBackfills } from '../../database/backfills/backfill';
import { sealSamples } from '../../import/sample-seal';
import { importDocument, insertWorkloads, seedOrganization, writeAs } from '../../../test/support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../../test/support/own-database';
import { aggregateDifferences, rollupResidue } from '../../../test/support/rollup-residue';
import { unsealOrganizations } from '../../../test/support/samples';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Ten days ago, midnight UTC: inside the retention, in weekly partitions made on demand. */
const BASE = Math.floor(Date.now() / DAY) * DAY - 10 * DAY;
/** The energy columns as exact text, whatever scale their sums came to. */
const ENERGY = ['energy_microjoules', 'carbon_microjoule_grams_per_kwh', 'uncovered_microjoules']
  .map((column) => `trim_scale(${column})::text AS ${column}`)
  .join(', ');

/** A deterministic generator in [0, 1). */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Reading {
  workloadId: string;
  at: number;
  watts: number;
}

/**
 * Energy, carbon and uncovered energy of every workload equal their recomputation from the raw
 * readings of both stores (aggregateDifferences: lead() over every reading, the gap's cap, a range
 * lookup of the intensity periods), exactly, after every kind of write. Own database: prune drops
 * shared weekly partitions.
 */
describe('energy and carbon per workload', () => {
  let db: OwnDatabase;
  let org: string;
  /** Workloads whose pruned readings are still counted, on purpose: left out of the recomputation. */
  const pruned: string[] = [];

  const exact = async () => expect(await aggregateDifferences(db.dataSource, org, pruned)).toEqual([]);
  const write = (sql: string, parameters: unknown[] = []) =>
    writeAs(db.dataSource, sql, [org, ...parameters]);
  const ensurePartitions = (from: number, to: number) =>
    db.dataSource.query(
      'SELECT gpucap_ensure_sample_partitions($1, $2), gpucap_ensure_sample_day_partitions($1, $2)',
      [new Date(from), new Date(to)],
    );
  /** One multi-row INSERT (or upsert) into the rows, as a writer statement. */
  const insertRows = async (readings: Reading[], upsert = false) => {
    if (readings.length === 0) return;
    await ensurePartitions(Math.min(...readings.map((r) => r.at)), Math.max(...readings.map((r) => r.at)));
    await write(
      `INSERT INTO metric_samples AS t (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage)
       SELECT $1, w, a, 50, 40, 60, p FROM unnest($2::text[], $3::timestamptz[], $4::float8[]) AS u(w, a, p)
       ${upsert ? 'ON CONFLICT (organization_id, workload_id, sampled_at) DO UPDATE SET power_usage = excluded.power_usage WHERE t.power_usage IS DISTINCT FROM excluded.power_usage' : ''}`,
      [readings.map((r) => r.workloadId), readings.map((r) => new Date(r.at)), readings.map((r) => r.watts)],
    );
  };
  /** Readings through the importer: before the seal watermark into day blocks, the others into rows. */
  const importReadings = (readings: Reading[]) =>
    importDocument(db.dataSource, {
      metric_samples: readings.map((r) => ({
        organization_id: org,
        workload_id: r.workloadId,
        timestamp: new Date(r.at).toISOString(),
        gpu_utilization: 50,
        memory_utilization: 40,
        temperature: 60,
        power_usage: r.watts,
      })),
    });
  const stored = async () =>
    db.dataSource.query(
      `SELECT workload_id, ${ENERGY} FROM metric_aggregates WHERE organization_id = $1 ORDER BY workload_id`,
      [org],
    );
  const intensity = (cluster: string, from: number, to: number | null, grams: number, pue = 1) =>
    write(
      `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [cluster, new Date(from), to === null ? null : new Date(to), grams, pue],
    );
  const series = (
    workloadId: string,
    from: number,
    count: number,
    step: number,
    watts: (k: number) => number,
  ) => Array.from({ length: count }, (_, k) => ({ workloadId, at: from + k * step, watts: watts(k) }));

  const workload = (workloadId: string, clusterId: string, running = false) => ({
    workloadId,
    clusterId,
    status: running ? ('running' as const) : ('completed' as const),
    submittedAt: new Date(BASE - 20 * DAY),
    startedAt: new Date(BASE - 20 * DAY),
    completedAt: running ? null : new Date(BASE + 5 * DAY),
  });

  beforeAll(async () => {
    db = await createOwnDatabase('energy');
    org = await seedOrganization(db.dataSource);
    await unsealOrganizations(db.dataSource, [org]);
    await insertWorkloads(db.dataSource, org, [
      workload('e-1', 'c-1'),
      workload('e-2', 'c-1'),
      workload('e-3', 'c-2'),
      workload('e-4', 'c-2', true),
      workload('e-5', 'c-1'),
      workload('e-old', 'c-1'),
    ]);
    // Hourly periods on c-1 for the first two days, one hour missing; nothing on c-2.
    for (let hour = 0; hour < 48; hour += 1) {
      if (hour !== 5)
        await intensity('c-1', BASE + hour * HOUR, BASE + (hour + 1) * HOUR, 100 + hour * 3.5, 1.25);
    }
  }, 120_000);

  afterAll(() => db?.drop());

  it('after one bulk INSERT of unordered rows', async () => {
    const random = generator(1);
    const readings = [
      ...series('e-1', BASE + 2 * HOUR, 200, 30 * SECOND, (k) => 200 + k * 1.5),
      // Gaps of up to 6 minutes: some held for the cap only.
      ...series('e-2', BASE + 4 * HOUR, 80, 0, () => 0).map((r, k) => ({
        ...r,
        at: BASE + 4 * HOUR + k * 6 * MINUTE - Math.floor(random() * 5) * MINUTE,
        watts: 123.45 + k,
      })),
      ...series('e-3', BASE + HOUR, 120, 45 * SECOND, (k) => (k % 7) * 33.3),
      ...series('e-4', BASE + 30 * HOUR, 90, MINUTE, () => 410.7),
    ].sort(() => random() - 0.5);
    await insertRows(readings);
    await exact();
    const [{ energy, carbon, uncovered }] = await db.dataSource.query(
      `SELECT sum(energy_microjoules) AS energy, sum(carbon_microjoule_grams_per_kwh) AS carbon,
              sum(uncovered_microjoules) AS uncovered
       FROM metric_aggregates WHERE organization_id = $1`,
      [org],
    );
    expect([Number(energy) > 0, Number(carbon) > 0, Number(uncovered) > 0]).toEqual([true, true, true]);
  });

  it('after appends in several statements, as sync writes them', async () => {
    for (let round = 0; round < 6; round += 1) {
      const from = BASE + 2 * HOUR + 200 * 30 * SECOND + round * 5 * MINUTE;
      await insertRows([
        ...series('e-1', from, 10, 30 * SECOND, (k) => 300 + round + k / 10),
        ...series('e-4', BASE + 30 * HOUR + 90 * MINUTE + round * 17 * MINUTE, 2, 7 * MINUTE, () => 99.9),
        // A first reading, then one at a time.
        ...(round < 3 ? series('e-5', BASE + 20 * HOUR + round * MINUTE, 1, MINUTE, () => 77) : []),
      ]);
      await exact();
    }
  });

  it('after readings inserted before, between and after stored ones', async () => {
    await insertRows([
      { workloadId: 'e-1', at: BASE + 2 * HOUR - 10 * SECOND, watts: 1000 },
      { workloadId: 'e-1', at: BASE + 2 * HOUR + 15 * SECOND, watts: 2000 },
      { workloadId: 'e-2', at: BASE + 4 * HOUR + 61 * MINUTE + 7 * SECOND, watts: 5 },
      { workloadId: 'e-3', at: BASE + HOUR + 60 * 45 * SECOND + 1, watts: 0 },
      { workloadId: 'e-3', at: BASE + 6 * HOUR, watts: 64.5 },
    ]);
    await exact();
    await insertRows([{ workloadId: 'e-2', at: BASE + 3 * HOUR, watts: 42 }]);
    await exact();
  });

  it('after updates, moved readings and upserts that both rewrite and add', async () => {
    await write(
      `UPDATE metric_samples SET power_usage = power_usage * 1.5 + 1
       WHERE organization_id = $1 AND workload_id = 'e-1' AND sampled_at BETWEEN $2 AND $3`,
      [new Date(BASE + 2 * HOUR + 30 * MINUTE), new Date(BASE + 2 * HOUR + 40 * MINUTE)],
    );
    await exact();
    await write(
      `UPDATE metric_samples SET sampled_at = sampled_at + interval '3 hours'
       WHERE organization_id = $1 AND workload_id = 'e-3' AND sampled_at = $2`,
      [new Date(BASE + HOUR + 10 * 45 * SECOND)],
    );
    await exact();
    // Only the temperature changes: energy must not move.
    const before = await stored();
    await write(
      `UPDATE metric_samples SET temperature = temperature + 1 WHERE organization_id = $1 AND workload_id = 'e-2'`,
    );
    expect(await stored()).toEqual(before);
    // One statement rewriting readings and adding others right after them and after the latest.
    await insertRows(
      [
        ...series('e-1', BASE + 2 * HOUR + 50 * MINUTE, 6, 30 * SECOND, (k) => 555 + k),
        ...series('e-1', BASE + 2 * HOUR + 50 * MINUTE + 10 * SECOND, 6, 30 * SECOND, () => 12.5),
        ...series('e-4', BASE + 30 * HOUR, 3, MINUTE, () => 1),
        ...series('e-4', BASE + 40 * HOUR, 3, MINUTE, () => 3.25),
      ],
      true,
    );
    await exact();
  });

  it('after deleting readings in the middle, the latest, and all of a workload', async () => {
    await write(
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'e-1' AND sampled_at BETWEEN $2 AND $3`,
      [new Date(BASE + 2 * HOUR + 20 * MINUTE), new Date(BASE + 2 * HOUR + 22 * MINUTE)],
    );
    await exact();
    await write(
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'e-4'
         AND sampled_at = (SELECT max(sampled_at) FROM metric_samples WHERE organization_id = $1 AND workload_id = 'e-4')`,
    );
    await exact();
    await write(`DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'e-5'`);
    await exact();
  });

  it('after a seal, which changes nothing', async () => {
    const before = await stored();
    await sealSamples(db.dataSource, { organizationIds: [org], before: new Date(BASE + 36 * HOUR) });
    const [{ blocks, rows }] = await db.dataSource.query(
      `SELECT (SELECT count(*)::int FROM metric_sample_days WHERE organization_id = $1) AS blocks,
              (SELECT count(*)::int FROM metric_samples WHERE organization_id = $1) AS rows`,
      [org],
    );
    expect(blocks).toBeGreaterThan(0);
    expect(rows).toBeGreaterThan(0);
    expect(await stored()).toEqual(before);
    await exact();
  });

  it('after imports straight into day blocks: new days, days before, rewritten and added readings', async () => {
    // e-5 starts again in blocks over three days, with powers of whole cents, of more digits and
    // beyond a megawatt (summed three ways); e-2 gets readings a day before its first.
    const watts = (k: number) => (k % 3 === 0 ? k / 3 : k % 5 === 0 ? 2e6 + k / 7 : 50 + (k % 11));
    await importReadings([
      ...series('e-5', BASE + 2 * MINUTE, 3 * 24 * 4, 15 * MINUTE, watts),
      ...series('e-2', BASE - DAY + 23 * HOUR, 8, 7 * MINUTE, () => 10.01),
    ]);
    await exact();
    // Rewritten values and readings between stored ones, in blocks and (after the watermark) rows.
    await importReadings([
      ...series('e-1', BASE + 2 * HOUR, 20, 30 * SECOND, (k) => 1 + k),
      ...series('e-1', BASE + 2 * HOUR + 5 * SECOND, 20, 30 * SECOND, () => 99),
      ...series('e-5', BASE + DAY - 45 * MINUTE, 12, 10 * MINUTE, () => 123),
      ...series('e-4', BASE + 35 * HOUR, 24, 5 * MINUTE, (k) => 200 + k),
    ]);
    await exact();
    // The same import again writes nothing.
    const before = await stored();
    await importReadings(series('e-5', BASE + DAY - 45 * MINUTE, 12, 10 * MINUTE, () => 123));
    expect(await stored()).toEqual(before);
  });

  it('after carbon intensities are added, changed, replaced, upserted and removed', async () => {
    await intensity('c-2', BASE, BASE + 2 * HOUR, 321);
    await exact();
    await intensity('c-2', BASE + 3 * HOUR, null, 222.5, 1.4);
    await exact();
    await write(
      `UPDATE carbon_intensities SET grams_co2e_per_kwh = grams_co2e_per_kwh + 17, effective_to = effective_to - interval '20 minutes'
       WHERE organization_id = $1 AND cluster_id = 'c-1' AND effective_from IN ($2, $3)`,
      [new Date(BASE + 2 * HOUR), new Date(BASE + 4 * HOUR)],
    );
    await exact();
    // One statement that shortens a period (its UPDATE part) and fills the time freed (its INSERT part).
    await write(
      `INSERT INTO carbon_intensities AS c (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-2', $2, $3, 300, 1), ($1, 'c-2', $3, $4, 900, 1.1)
       ON CONFLICT (organization_id, cluster_id, effective_from) DO UPDATE
         SET effective_to = excluded.effective_to, grams_co2e_per_kwh = excluded.grams_co2e_per_kwh`,
      [new Date(BASE + 3 * HOUR), new Date(BASE + 30 * HOUR), new Date(BASE + 31 * HOUR)],
    );
    await exact();
    // The importer's upsert: an UPDATE statement, then an INSERT.
    await importDocument(db.dataSource, {
      carbon_intensity: [
        {
          organization_id: org,
          cluster_id: 'c-1',
          effective_from: new Date(BASE + 6 * HOUR).toISOString(),
          effective_to: new Date(BASE + 6 * HOUR + 30 * MINUTE).toISOString(),
          grams_co2e_per_kwh: 1,
          pue: 1,
        },
        {
          organization_id: org,
          cluster_id: 'c-1',
          effective_from: new Date(BASE + 6 * HOUR + 30 * MINUTE).toISOString(),
          effective_to: new Date(BASE + 7 * HOUR).toISOString(),
          grams_co2e_per_kwh: 2,
          pue: 2,
        },
      ],
    });
    await exact();
    await write(
      `DELETE FROM carbon_intensities WHERE organization_id = $1 AND cluster_id = 'c-1' AND effective_from < $2`,
      [new Date(BASE + 3 * HOUR)],
    );
    await exact();
  });

  it("after a workload moves to another cluster, and after the organization's gap changes", async () => {
    await write(
      `UPDATE workloads SET cluster_id = 'c-2' WHERE organization_id = $1 AND workload_id IN ('e-1', 'e-5')`,
    );
    await exact();
    // Readings without their workload have no cluster, and take one's when it comes back.
    await write(`DELETE FROM workloads WHERE organization_id = $1 AND workload_id = 'e-3'`);
    await exact();
    await insertWorkloads(db.dataSource, org, [workload('e-3', 'c-1')]);
    await exact();
    await write(`UPDATE organizations SET max_sample_gap_seconds = 300 WHERE organization_id = $1`);
    await exact();
    await write(`UPDATE organizations SET max_sample_gap_seconds = 45 WHERE organization_id = $1`);
    await exact();
  });

  it('after any mix of these writes, at random', async () => {
    const random = generator(7);
    const workloads = ['e-1', 'e-2', 'e-3', 'e-4', 'e-5'];
    const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)];
    const someReadings = (sealed: number) => {
      const workloadId = pick(workloads);
      // Sealed days (day blocks), or the hour from the watermark on (rows until a seal moves them).
      const from =
        random() < 0.4
          ? Math.max(sealed, Math.floor(Date.now() / HOUR) * HOUR) + Math.floor(random() * 40) * MINUTE
          : BASE + Math.floor(random() * 60) * HOUR + Math.floor(random() * 60) * MINUTE;
      const step = pick([10 * SECOND, 30 * SECOND, MINUTE, 4 * MINUTE]);
      return series(
        workloadId,
        from,
        1 + Math.floor(random() * 30),
        step,
        () => Math.round(random() * 90000) / 100,
      );
    };
    const watermark = async () =>
      (
        await db.dataSource.query(
          'SELECT sealed_before FROM sample_seal_watermarks WHERE organization_id = $1',
          [org],
        )
      )[0].sealed_before as Date;
    for (let step = 0; step < 40; step += 1) {
      const kind = pick([
        'import',
        'import',
        'rows',
        'update',
        'delete-rows',
        'delete-day',
        'intensity',
        'seal',
      ]);
      const sealed = (await watermark()).getTime();
      if (kind === 'import') await importReadings(someReadings(sealed));
      else if (kind === 'rows')
        await insertRows(
          someReadings(sealed).filter((r) => r.at >= sealed),
          true,
        );
      else if (kind === 'update')
        await write(
          `UPDATE metric_samples SET power_usage = power_usage + $3 WHERE organization_id = $1 AND workload_id = $2
             AND (extract(epoch FROM sampled_at)::bigint % 5) = $4`,
          [pick(workloads), Math.round(random() * 100), Math.floor(random() * 5)],
        );
      else if (kind === 'delete-rows')
        await write(
          `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = $2 AND (extract(epoch FROM sampled_at)::bigint % 7) = $3`,
          [pick(workloads), Math.floor(random() * 7)],
        );
      else if (kind === 'delete-day')
        await write(
          `DELETE FROM metric_sample_days WHERE organization_id = $1 AND workload_id = $2 AND day_start = $3`,
          [pick(workloads), new Date(BASE + Math.floor(random() * 3) * DAY)],
        );
      else if (kind === 'intensity') {
        // A new period of two hours replaces those it overlaps.
        const cluster = pick(['c-1', 'c-2']);
        const from = BASE + Math.floor(random() * 60) * HOUR;
        await write(
          `DELETE FROM carbon_intensities WHERE organization_id = $1 AND cluster_id = $2
             AND effective_from < $4 AND coalesce(effective_to, 'infinity') > $3`,
          [cluster, new Date(from), new Date(from + 2 * HOUR)],
        );
        await intensity(cluster, from, from + 2 * HOUR, Math.round(random() * 500), 1.1);
      } else await sealSamples(db.dataSource, { organizationIds: [org], before: new Date(sealed + HOUR) });
      const differences = await aggregateDifferences(db.dataSource, org, pruned);
      expect({ step, kind, differences }).toEqual({ step, kind, differences: [] });
    }
  }, 120_000);

  it('are filled by the backfill for aggregates stored before them', async () => {
    const settled = await stored();
    // Under the writer lock: the workloads' settled energy follows their aggregates.
    await writeAs(
      db.dataSource,
      `UPDATE metric_aggregates SET energy_microjoules = 0, carbon_microjoule_grams_per_kwh = 0, uncovered_microjoules = 0
       WHERE organization_id = $1`,
      [org],
    );
    await db.dataSource.query(`DELETE FROM ${BACKFILLS_TABLE} WHERE name = $1`, [energyBackfill.name]);
    expect(await aggregateDifferences(db.dataSource, org, pruned)).not.toEqual([]);
    expect(await runBackfills(db.dataSource, [energyBackfill])).toEqual([energyBackfill.name]);
    expect(await stored()).toEqual(settled);
  });

  it('keeps the energy of pruned readings, and nets to zero when every reading is deleted', async () => {
    await insertRows(series('e-old', BASE - 14 * DAY, 50, MINUTE, (k) => 100 + k));
    await exact();
    const kept = (await stored()).find((row: { workload_id: string }) => row.workload_id === 'e-old');
    const { partitions } = await pruneSamples(db.dataSource, new Date(BASE - 7 * DAY));
    expect(partitions.length).toBeGreaterThan(0);
    pruned.push('e-old');
    expect((await stored()).find((row: { workload_id: string }) => row.workload_id === 'e-old')).toEqual(
      kept,
    );
    await exact();
    expect(await rollupResidue(db.dataSource, org, pruned)).toEqual({});
  }, 120_000);
});
