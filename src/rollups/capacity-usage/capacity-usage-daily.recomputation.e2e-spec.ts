import request from 'supertest';
import type { DataSource } from 'typeorm';
import {
  authHeaders,
  createApiToken,
  seedOrganization,
  SHARE_KINDS,
  type ShareColumns,
  sharedDevices as shared,
  uniqueId,
  writeAs,
} from '../../../test/support/factories';
import { dailyUsageDifferences, hourlyUsageDifferences } from '../../../test/support/rollup-residue';
import { createTestApp, TestApp } from '../../../test/support/test-app';

const MINUTE = 60_000;
/** Share units of one whole GPU: the rollups count GPUs in 1/5040. */
const U = 5040;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const INITIATIVES = ['i1', 'i2', 'i3', 'i4'];
const INSTANCE_TYPES = ['t1', 't2', 't3', 't4']; // t4 belongs to no pool
const POOLS = [
  { poolId: 'pa', instanceTypes: ['t1', 't2'] },
  { poolId: 'pb', instanceTypes: ['t3'] },
];

/** A small deterministic generator, so a failing case can be replayed from its seed. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
    between: (low: number, high: number) => low + next() * (high - low),
  };
}

interface GeneratedWorkload extends ShareColumns {
  workload_id: string;
  initiative_id: string;
  status: string;
  instance_type: string;
  gpu_count: number;
  submitted_at: string;
  started_at: string | null;
  completed_at: string | null;
  exit_code: number | null;
}

/** Runs of every shape around the period edges: straddling, multi-day, sub-second, running, never started. */
function generateWorkloads(
  random: ReturnType<typeof generator>,
  count: number,
  periodStart: number,
  now: number,
) {
  const workloads: GeneratedWorkload[] = [];
  for (let index = 0; index < count; index++) {
    const status = random.pick(['completed', 'completed', 'failed', 'cancelled', 'running', 'pending']);
    const start = Math.round(random.between(periodStart - 4 * DAY, now - MINUTE)) + random.next();
    const length = random.pick([
      random.between(0, 5000),
      random.between(0, 20 * HOUR),
      random.between(0, 6 * DAY),
    ]);
    const end = Math.min(start + length, now - 1);
    const neverStarted = status === 'pending' || (status === 'cancelled' && random.next() < 0.3);
    const gpuCount = random.pick([0, 1, 2, 4, 8]);
    workloads.push({
      ...shared(gpuCount, random.pick(SHARE_KINDS)),
      workload_id: `w${index}`,
      initiative_id: random.pick(INITIATIVES),
      status,
      instance_type: random.pick(INSTANCE_TYPES),
      gpu_count: gpuCount,
      submitted_at: new Date(start - HOUR).toISOString(),
      started_at: neverStarted ? null : microseconds(start),
      completed_at: status === 'running' || status === 'pending' ? null : microseconds(Math.max(end, start)),
      exit_code: status === 'completed' ? 0 : status === 'failed' ? 1 : null,
    });
  }
  return workloads;
}

/** A timestamp with microseconds, as PostgreSQL keeps them (the rollup must be exact to the microsecond). */
function microseconds(time: number): string {
  const whole = Math.floor(time);
  const micros = Math.floor((time - whole) * 1000)
    .toString()
    .padStart(3, '0');
  return new Date(whole).toISOString().replace('Z', `${micros}Z`);
}

/** One statement, many rows, upserting like the importer does: fires the INSERT and UPDATE statement triggers. */
async function upsertWorkloads(
  dataSource: DataSource,
  organizationId: string,
  workloads: GeneratedWorkload[],
) {
  await writeAs(
    dataSource,
    `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
       gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code,
       share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas)
     SELECT $1, w.workload_id, w.initiative_id, 'job', w.status, 'someone', w.instance_type, w.gpu_count, true,
            -- Two clusters: every capacity row is kept per cluster.
            'c-' || (hashtext(w.workload_id) & 1), 'default', w.submitted_at, w.started_at, w.completed_at, w.exit_code,
            w.share_units, w.gpu_sharing_mode, w.gpu_sharing_profile, w.gpu_sharing_replicas
     FROM jsonb_to_recordset($2::jsonb) AS w (workload_id text, initiative_id text, status text, instance_type text,
            gpu_count integer, submitted_at timestamptz, started_at timestamptz, completed_at timestamptz, exit_code integer,
            share_units integer, gpu_sharing_mode text, gpu_sharing_profile text, gpu_sharing_replicas integer)
     ON CONFLICT (organization_id, workload_id) DO UPDATE SET
       initiative_id = excluded.initiative_id, status = excluded.status, instance_type = excluded.instance_type,
       gpu_count = excluded.gpu_count, submitted_at = excluded.submitted_at, started_at = excluded.started_at,
       completed_at = excluded.completed_at, exit_code = excluded.exit_code, share_units = excluded.share_units,
       gpu_sharing_mode = excluded.gpu_sharing_mode, gpu_sharing_profile = excluded.gpu_sharing_profile,
       gpu_sharing_replicas = excluded.gpu_sharing_replicas`,
    [organizationId, JSON.stringify(workloads)],
  );
}

/**
 * GPU hours inside [from, min(to, now)) straight from the raw workloads, by initiative and pool: the
 * physical share held (units of 1/5040 GPU) × time.
 */
async function rawUsage(
  dataSource: DataSource,
  organizationId: string,
  from: number,
  to: number,
  now: number,
): Promise<{ initiative_id: string; pool_id: string | null; used: number }[]> {
  return dataSource.query(
    `SELECT w.initiative_id, p.pool_id,
            sum(w.gpu_share_units / 5040.0 * extract(epoch FROM least(coalesce(w.completed_at, $2), $4) - greatest(w.started_at, $3)))::double precision / 3600 AS used
     FROM workloads w
     LEFT JOIN pool_instance_types p ON p.organization_id = w.organization_id AND p.instance_type = w.instance_type
     WHERE w.organization_id = $1 AND w.started_at IS NOT NULL
       AND w.started_at < $4 AND coalesce(w.completed_at, $2) > $3
     GROUP BY 1, 2`,
    [organizationId, new Date(now), new Date(from), new Date(Math.min(to, now))],
  );
}

type Key = { initiative?: string[]; pool?: string };

function total(rows: { initiative_id: string; pool_id: string | null; used: number }[], key: Key) {
  return rows
    .filter((row) => key.initiative === undefined || key.initiative.includes(row.initiative_id))
    .filter((row) => key.pool === undefined || row.pool_id === key.pool)
    .reduce((sum, row) => sum + row.used, 0);
}

interface Entry {
  used_gpu_hours: number;
  burn_rate_gpu_hours_per_day: number;
}

describe('GET /v1/capacity equals a recomputation from raw workloads', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  const cases = [
    {
      name: 'period ended mid-day in the past',
      seed: 7,
      startAgo: 30 * DAY - 7 * HOUR - 13 * MINUTE,
      endAgo: 2 * DAY - 5 * HOUR - 47 * MINUTE,
    },
    {
      name: 'period still running',
      seed: 11,
      startAgo: 15 * DAY - 3 * HOUR - 21 * MINUTE,
      endAgo: -40 * DAY,
    },
  ];

  it.each(cases)('$name', async ({ seed, startAgo, endAgo }) => {
    const random = generator(seed);
    const now = Date.now();
    const periodStart = now - startAgo;
    const periodEnd = now - endAgo;
    const organizationId = await seedOrganization(testApp.dataSource, {
      organizationId: uniqueId('org-rollup'),
      budgetPeriodStart: new Date(periodStart),
      budgetPeriodEnd: new Date(periodEnd),
      initiatives: INITIATIVES,
      pools: POOLS,
      allocations: [{ initiativeId: 'i1', poolId: 'pa', allocatedGpuHours: 1000 }],
    });
    const admin = await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const lead = await createApiToken(testApp.dataSource, organizationId, {
      role: 'TEAM_LEAD',
      initiativeIds: ['i2', 'i3'],
    });

    const workloads = generateWorkloads(random, 500, periodStart, now);
    await upsertWorkloads(testApp.dataSource, organizationId, workloads);
    await expectSharesCovered();
    await expectMatchesRaw();

    // Re-import: unchanged rows, runs that finished, moved and resized runs, runs whose devices are
    // now shared otherwise (same count, another share), and new rows in one upsert.
    const changed = workloads.map((workload) => ({ ...workload }));
    for (const workload of changed) {
      if (workload.status === 'running' && random.next() < 0.6) {
        workload.status = 'completed';
        workload.exit_code = 0;
        workload.completed_at = new Date(Date.now() - random.between(0, 2 * DAY)).toISOString();
        if (Date.parse(workload.completed_at) <= Date.parse(workload.started_at as string)) {
          workload.completed_at = workload.started_at;
        }
      } else if (random.next() < 0.2) {
        workload.instance_type = random.pick(INSTANCE_TYPES);
        workload.gpu_count = random.pick([1, 3, 16]);
        Object.assign(workload, shared(workload.gpu_count, random.pick(SHARE_KINDS)));
        workload.initiative_id = random.pick(INITIATIVES);
      } else if (workload.gpu_count > 0 && random.next() < 0.15) {
        Object.assign(workload, shared(workload.gpu_count, random.pick(SHARE_KINDS)));
      }
    }
    const added = generateWorkloads(random, 100, periodStart, now).map((workload) => ({
      ...workload,
      workload_id: `new-${workload.workload_id}`,
    }));
    await upsertWorkloads(testApp.dataSource, organizationId, [...changed, ...added]);
    await writeAs(
      testApp.dataSource,
      `DELETE FROM workloads WHERE organization_id = $1 AND workload_id = ANY ($2::text[])`,
      [organizationId, changed.filter(() => random.next() < 0.1).map((workload) => workload.workload_id)],
    );
    await writeAs(
      testApp.dataSource,
      `UPDATE workloads SET initiative_id = 'i4' WHERE organization_id = $1 AND workload_id LIKE 'w1%'`,
      [organizationId],
    );
    await expectSharesCovered();
    await expectMatchesRaw();

    /** The generated rows hold every kind of share, fractional ones most, on running and finished runs. */
    async function expectSharesCovered() {
      const kinds: { units_per_device: number; finished: number; running: number }[] =
        await testApp.dataSource.query(
          `SELECT (gpu_share_units / gpu_count)::int AS units_per_device,
                  count(*) FILTER (WHERE completed_at IS NOT NULL)::int AS finished,
                  count(*) FILTER (WHERE status = 'running')::int AS running
           FROM workloads WHERE organization_id = $1 AND gpu_count > 0 GROUP BY 1 ORDER BY 1`,
          [organizationId],
        );
      expect(kinds.map((kind) => kind.units_per_device)).toEqual([720, 1260, 1440, 2160, 5040]);
      for (const kind of kinds) {
        expect(kind.finished).toBeGreaterThan(10);
        expect(kind.running).toBeGreaterThan(0);
      }
    }

    async function expectMatchesRaw() {
      await expectRollupMatchesRebuild(testApp.dataSource, organizationId);
      for (const [token, initiatives, query] of [
        [admin, INITIATIVES, {}],
        [admin, INITIATIVES, { pool_id: 'pb' }],
        [lead, ['i2', 'i3'], {}],
        [lead, ['i3'], { initiative_id: 'i3', pool_id: 'pa' }],
      ] as const) {
        const before = Date.now();
        const response = await request(testApp.server)
          .get('/v1/capacity')
          .query(query)
          .set(authHeaders(token, organizationId))
          .expect(200);
        const after = Date.now();
        const data = response.body.data as {
          summary: { total_used_gpu_hours: number; burn_rate_gpu_hours_per_day: number };
          initiatives: (Entry & { initiative_id: string })[];
          pools: (Entry & { pool_id: string })[];
        };
        const pool = 'pool_id' in query ? query.pool_id : undefined;
        const period = await bounds(periodStart, periodEnd, before, after);
        const burn = await bounds(before - 7 * DAY, before, before, after, after - 7 * DAY, after);
        const check = (entry: Entry, key: Key) => {
          expectWithin(entry.used_gpu_hours, period(key), 0.00006);
          expectWithin(entry.burn_rate_gpu_hours_per_day * 7, burn(key), 0.0004);
        };
        check(
          {
            used_gpu_hours: data.summary.total_used_gpu_hours,
            burn_rate_gpu_hours_per_day: data.summary.burn_rate_gpu_hours_per_day,
          },
          { initiative: [...initiatives], pool },
        );
        expect(data.initiatives.map((entry) => entry.initiative_id)).toEqual(initiatives);
        for (const entry of data.initiatives) check(entry, { initiative: [entry.initiative_id], pool });
        for (const entry of data.pools) check(entry, { initiative: [...initiatives], pool: entry.pool_id });
      }
    }

    /** Raw figures at the clock readings taken before and after the request: the answer lies between. */
    async function bounds(
      from: number,
      to: number,
      before: number,
      after: number,
      fromAfter = from,
      toAfter = to,
    ) {
      const low = await rawUsage(testApp.dataSource, organizationId, from, to, before);
      const high = await rawUsage(testApp.dataSource, organizationId, fromAfter, toAfter, after);
      return (key: Key) => [total(low, key), total(high, key)] as const;
    }
  });

  it('keeps the rollup exact through inserts, upserts and deletes of one workload', async () => {
    const organizationId = await seedOrganization(testApp.dataSource, { initiatives: ['i1'] });
    const base = Date.UTC(2026, 9, 3, 22, 30);
    const one = (patch: Partial<GeneratedWorkload>): GeneratedWorkload => ({
      workload_id: 'w',
      initiative_id: 'i1',
      status: 'running',
      instance_type: 't1',
      gpu_count: 2,
      ...shared(2, SHARE_KINDS[0]),
      submitted_at: new Date(base).toISOString(),
      started_at: new Date(base).toISOString(),
      completed_at: null,
      exit_code: null,
      ...patch,
    });
    const rollup = () =>
      testApp.dataSource.query(
        `SELECT usage_day::text AS day, gpu_microseconds::text AS gpu_microseconds, spanning_gpus::integer AS spanning
         FROM capacity_usage_daily WHERE organization_id = $1 AND (gpu_microseconds <> 0 OR spanning_gpus <> 0)
         ORDER BY usage_day`,
        [organizationId],
      );
    await upsertWorkloads(testApp.dataSource, organizationId, [one({})]);
    expect(await rollup()).toEqual([]);
    // 22:30 on Oct 3 to 01:15 on Oct 5: 1.5 h, a whole day, 1.25 h — 2 GPUs each, in 1/5040 GPU units.
    const finishedAt = new Date(base + 26.75 * HOUR).toISOString();
    await upsertWorkloads(testApp.dataSource, organizationId, [
      one({ status: 'completed', completed_at: finishedAt, exit_code: 0 }),
    ]);
    expect(await rollup()).toEqual([
      { day: '2026-10-03', gpu_microseconds: String(2 * U * 1.5 * 3600e6), spanning: 0 },
      { day: '2026-10-04', gpu_microseconds: String(2 * U * 24 * 3600e6), spanning: 2 * U },
      { day: '2026-10-05', gpu_microseconds: String(2 * U * 1.25 * 3600e6), spanning: 0 },
    ]);
    // Hourly buckets only for the first and last day (the whole day is spanning_gpus).
    const hourly = () =>
      testApp.dataSource.query(
        `SELECT usage_day::text AS day, start_hour, end_hour, gpus::int, gpu_start_offset::text AS start_offset,
                gpu_microseconds::text AS us
         FROM capacity_usage_hourly WHERE organization_id = $1 AND gpus <> 0 ORDER BY usage_day`,
        [organizationId],
      );
    const buckets = (units: number) => [
      {
        day: '2026-10-03',
        start_hour: 22,
        end_hour: 24,
        gpus: units,
        start_offset: String(units * 22.5 * 3600e6),
        us: String(units * 1.5 * 3600e6),
      },
      {
        day: '2026-10-05',
        start_hour: -1,
        end_hour: 1,
        gpus: units,
        start_offset: '0',
        us: String(units * 1.25 * 3600e6),
      },
    ];
    expect(await hourly()).toEqual(buckets(2 * U));
    await upsertWorkloads(testApp.dataSource, organizationId, [
      one({
        status: 'completed',
        completed_at: finishedAt,
        exit_code: 0,
        gpu_count: 1,
        ...shared(1, SHARE_KINDS[0]),
      }),
    ]);
    expect((await rollup()).map((row: { spanning: number }) => row.spanning)).toEqual([0, U, 0]);
    // The same device as a MIG 3g slice (3/7 GPU), then four time-sliced replicas of one GPU (1 GPU).
    const mig = SHARE_KINDS.find((kind) => kind.sharing?.mode === 'mig' && kind.unitsPerDevice === 2160)!;
    await upsertWorkloads(testApp.dataSource, organizationId, [
      one({ status: 'completed', completed_at: finishedAt, exit_code: 0, gpu_count: 1, ...shared(1, mig) }),
    ]);
    expect(await rollup()).toEqual([
      { day: '2026-10-03', gpu_microseconds: String(2160 * 1.5 * 3600e6), spanning: 0 },
      { day: '2026-10-04', gpu_microseconds: String(2160 * 24 * 3600e6), spanning: 2160 },
      { day: '2026-10-05', gpu_microseconds: String(2160 * 1.25 * 3600e6), spanning: 0 },
    ]);
    expect(await hourly()).toEqual(buckets(2160));
    const replicas = SHARE_KINDS.find((kind) => kind.sharing?.mode === 'time-slicing')!;
    await upsertWorkloads(testApp.dataSource, organizationId, [
      one({
        status: 'completed',
        completed_at: finishedAt,
        exit_code: 0,
        gpu_count: 4,
        ...shared(4, replicas),
      }),
    ]);
    expect((await rollup()).map((row: { spanning: number }) => row.spanning)).toEqual([0, U, 0]);
    expect(await hourly()).toEqual(buckets(U));
    await writeAs(testApp.dataSource, 'DELETE FROM workloads WHERE organization_id = $1', [organizationId]);
    expect(await rollup()).toEqual([]);
  });
});

function expectWithin(value: number, [low, high]: readonly [number, number], tolerance: number) {
  expect(value).toBeGreaterThanOrEqual(Math.min(low, high) - tolerance);
  expect(value).toBeLessThanOrEqual(Math.max(low, high) + tolerance);
}

/** The trigger-kept rollups (daily and hourly) equal ones rebuilt from scratch, to the microsecond. */
async function expectRollupMatchesRebuild(dataSource: DataSource, organizationId: string) {
  const differences = await dataSource.query(
    `WITH kept AS (
       SELECT usage_day, initiative_id, instance_type, cluster_id, gpu_microseconds, spanning_gpus
       FROM capacity_usage_daily
       WHERE organization_id = $1 AND (gpu_microseconds <> 0 OR spanning_gpus <> 0)
     ), rebuilt AS (
       SELECT d.usage_day, w.initiative_id, w.instance_type, w.cluster_id,
              sum(d.gpu_microseconds)::bigint AS gpu_microseconds, sum(d.spanning_gpus)::bigint AS spanning_gpus
       FROM workloads w
       CROSS JOIN LATERAL gpucap_usage_days(w.started_at, w.completed_at, w.gpu_share_units) d
       WHERE w.organization_id = $1 AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
       GROUP BY 1, 2, 3, 4
       -- As kept: a group of zero-length runs (or none left) holds nothing.
       HAVING sum(d.gpu_microseconds) <> 0 OR sum(d.spanning_gpus) <> 0
     )
     (SELECT * FROM kept EXCEPT SELECT * FROM rebuilt) UNION ALL (SELECT * FROM rebuilt EXCEPT SELECT * FROM kept)`,
    [organizationId],
  );
  expect(differences).toEqual([]);
  expect(await hourlyUsageDifferences(dataSource, organizationId)).toEqual([]);
  expect(await dailyUsageDifferences(dataSource, organizationId)).toEqual([]);
}
