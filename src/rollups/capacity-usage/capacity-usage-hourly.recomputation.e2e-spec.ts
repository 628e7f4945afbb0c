import request from 'supertest';
import type { DataSource } from 'typeorm';
import { Clock } from '../../common/clock';
import {
  authHeaders,
  createApiToken,
  seedOrganization,
  SHARE_KINDS,
  type ShareColumns,
  sharedDevices as shared,
  writeAs,
} from '../../../test/support/factories';
import { hourlyUsageDifferences } from '../../../test/support/rollup-residue';
import { createTestApp, type TestApp } from '../../../test/support/test-app';

/*
 * Capacity reads edge days from the hourly usage rollup (migration 17000): whole UTC days, then per
 * edge instant the spanning runs, the buckets, and raw rows of the edge hour only. Here its answers
 * — usage, burn rate, idle figures, and the burn-down per local day — equal a recomputation from the
 * raw workloads and samples, for periods whose edges fall mid-hour, on the hour, at midnight and
 * inside one hour, local days of whole-hour and of half- and quarter-hour zones, and runs starting
 * and ending around every one of those instants (before, on, just after, in the same hour), spanning
 * days, zero-length and running, on whole GPUs, MIG slices and shared replicas (GPU amounts are the
 * physical share held, 1/5040 GPU units in the rollups).
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const INITIATIVES = ['i1', 'i2', 'i3'];
const INSTANCE_TYPES = ['t1', 't2', 't3', 't4']; // t4 belongs to no pool
const POOLS = [
  { poolId: 'pa', instanceTypes: ['t1', 't2'] },
  { poolId: 'pb', instanceTypes: ['t3'] },
];

interface Case {
  name: string;
  timezone: string;
  start: string;
  end: string;
  now: string;
}

const CASES: Case[] = [
  {
    name: 'mid-hour edges, New York days',
    timezone: 'America/New_York',
    start: '2026-05-02T07:13:24.500Z',
    end: '2026-06-01T00:00:00Z',
    now: '2026-05-06T12:40:10.123Z',
  },
  {
    name: 'edges on the hour, Kolkata days (+05:30)',
    timezone: 'Asia/Kolkata',
    start: '2026-05-02T09:00:00Z',
    end: '2026-06-01T00:00:00Z',
    now: '2026-05-06T15:00:00Z',
  },
  {
    name: 'edges at midnight, UTC days',
    timezone: 'UTC',
    start: '2026-05-02T00:00:00Z',
    end: '2026-06-01T00:00:00Z',
    now: '2026-05-07T00:00:00Z',
  },
  {
    name: 'period ended mid-hour in the past, Kathmandu days (+05:45)',
    timezone: 'Asia/Kathmandu',
    start: '2026-05-01T23:59:59.999Z',
    end: '2026-05-05T17:45:30.250Z',
    now: '2026-05-08T10:30:00Z',
  },
  {
    name: 'period inside one hour',
    timezone: 'UTC',
    start: '2026-05-04T10:20:00Z',
    end: '2026-05-04T10:50:00Z',
    now: '2026-05-06T08:00:00.001Z',
  },
  {
    name: 'period from hour 0 to just before midnight, Berlin days',
    timezone: 'Europe/Berlin',
    start: '2026-05-03T00:30:00Z',
    end: '2026-05-05T23:59:59.999Z',
    now: '2026-05-09T03:00:00Z',
  },
];

/** A small deterministic generator, so a failing case can be replayed. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] };
}

interface Run extends ShareColumns {
  workload_id: string;
  initiative_id: string;
  instance_type: string;
  gpu_count: number;
  status: string;
  started_at: string;
  completed_at: string | null;
}

/** Every instant a window or a local day starts or ends at in some case, and UTC midnights and hours. */
function anchors(): number[] {
  const times = new Set<number>();
  for (const c of CASES) {
    for (const iso of [c.start, c.end, c.now]) times.add(Date.parse(iso));
    times.add(Date.parse(c.now) - 7 * DAY);
  }
  for (let day = Date.parse('2026-04-30T00:00:00Z'); day < Date.parse('2026-05-10T00:00:00Z'); day += DAY) {
    // Midnights UTC, New York (04:00), Berlin (22:00), Kolkata (18:30), Kathmandu (18:15).
    for (const offset of [0, 4 * HOUR, 22 * HOUR, 18.5 * HOUR, 18.25 * HOUR]) times.add(day + offset);
  }
  return [...times];
}

/** Runs starting and ending around every anchor, long and short, plus zero-length and running ones. */
function generateRuns(seed: number): Run[] {
  const random = generator(seed);
  const runs: Run[] = [];
  const add = (start: number, end: number | null, extraMicros = 0, gpus = [0, 1, 2, 4, 8]) => {
    const gpuCount = random.pick(gpus);
    runs.push({
      workload_id: `r${runs.length}`,
      initiative_id: random.pick(INITIATIVES),
      instance_type: random.pick(INSTANCE_TYPES),
      gpu_count: gpuCount,
      ...shared(gpuCount, random.pick(SHARE_KINDS)),
      status: end === null ? 'running' : random.pick(['completed', 'failed', 'cancelled']),
      started_at: withMicros(start, extraMicros),
      completed_at: end === null ? null : withMicros(end, extraMicros),
    });
  };
  for (const anchor of anchors()) {
    for (const delta of [-75 * MINUTE, -20 * MINUTE, -1000, 0, 1, 25 * MINUTE]) {
      const length = random.pick([7 * MINUTE, 3 * HOUR, 50 * HOUR]);
      add(anchor + delta, anchor + delta + length, random.pick([0, 0, 417]));
      add(anchor + delta - length, anchor + delta);
    }
    add(anchor, anchor);
    if (random.next() < 0.5) add(anchor - random.pick([2 * HOUR, 3 * DAY]), null);
    // On the boundaries of the anchor's hour and day: from midnight or the hour up to it, ending on them.
    const hour = anchor - (anchor % HOUR);
    const midnight = anchor - (anchor % DAY);
    for (const [start, end] of [
      [midnight, anchor - 1000],
      [hour, anchor - 1],
      [hour - HOUR, hour],
      [midnight - DAY, midnight],
      [hour, hour + 2 * DAY],
    ]) {
      if (end > start) add(start, end, 0, [1, 2, 4, 8]);
    }
  }
  return runs;
}

/** An ISO timestamp with `micros` extra microseconds, as PostgreSQL keeps them. */
function withMicros(time: number, micros: number): string {
  const fraction = (time % 1000) * 1000 + micros;
  return `${new Date(time - (time % 1000)).toISOString().slice(0, 19)}.${String(fraction).padStart(6, '0')}Z`;
}

async function upsertRuns(dataSource: DataSource, organizationId: string, runs: Run[]) {
  await writeAs(
    dataSource,
    `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
       gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code,
       share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas)
     SELECT $1, r.workload_id, r.initiative_id, 'job', r.status, 'someone', r.instance_type, r.gpu_count, true,
            'c-' || (hashtext(r.workload_id) & 1), 'default', r.started_at - interval '1 minute', r.started_at, r.completed_at,
            CASE r.status WHEN 'completed' THEN 0 WHEN 'failed' THEN 1 END,
            r.share_units, r.gpu_sharing_mode, r.gpu_sharing_profile, r.gpu_sharing_replicas
     FROM jsonb_to_recordset($2::jsonb) AS r (workload_id text, initiative_id text, instance_type text,
            gpu_count integer, status text, started_at timestamptz, completed_at timestamptz,
            share_units integer, gpu_sharing_mode text, gpu_sharing_profile text, gpu_sharing_replicas integer)
     ON CONFLICT (organization_id, workload_id) DO UPDATE SET
       initiative_id = excluded.initiative_id, status = excluded.status, instance_type = excluded.instance_type,
       gpu_count = excluded.gpu_count, submitted_at = excluded.submitted_at, started_at = excluded.started_at,
       completed_at = excluded.completed_at, exit_code = excluded.exit_code, share_units = excluded.share_units,
       gpu_sharing_mode = excluded.gpu_sharing_mode, gpu_sharing_profile = excluded.gpu_sharing_profile,
       gpu_sharing_replicas = excluded.gpu_sharing_replicas`,
    [organizationId, JSON.stringify(runs)],
  );
}

/** Up to three readings for about two workloads in three; `round` changes their values. */
async function sendSamples(dataSource: DataSource, organizationId: string, round: number) {
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
    '2026-04-01T00:00:00Z',
    '2026-06-01T00:00:00Z',
  ]);
  await writeAs(
    dataSource,
    `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization,
       temperature, power_usage)
     SELECT w.organization_id, w.workload_id, w.started_at + k * interval '1 second',
            (abs(hashtext(w.workload_id)) % 97 + k * 31 + $2::int * 13) % 100 + 0.5, 40, 60, 300
     FROM workloads w CROSS JOIN generate_series(0, abs(hashtext(w.workload_id)) % 3) k
     WHERE w.organization_id = $1 AND w.started_at IS NOT NULL AND abs(hashtext(w.workload_id)) % 3 <> 0
     ON CONFLICT (organization_id, workload_id, sampled_at) DO UPDATE SET gpu_utilization = excluded.gpu_utilization`,
    [organizationId, round],
  );
}

interface RawRow {
  initiative_id: string;
  pool_id: string | null;
  used: number;
  sampled: number;
  busy: number;
}

/**
 * GPU-seconds in [from, to) straight from raw workloads and samples (running ones up to `now`): the
 * physical share held (units / 5040) × seconds.
 */
async function rawUsage(
  dataSource: DataSource,
  organizationId: string,
  from: number,
  to: number,
  now: number,
): Promise<RawRow[]> {
  return dataSource.query<RawRow[]>(
    `WITH readings AS (
       SELECT workload_id, avg(gpu_utilization::numeric) AS utilization
       FROM metric_samples WHERE organization_id = $1 GROUP BY workload_id
     ),
     parts AS (
       SELECT w.initiative_id, w.instance_type, s.utilization,
              w.gpu_share_units / 5040.0 * extract(epoch FROM least(coalesce(w.completed_at, $2), $4) - greatest(w.started_at, $3)) AS seconds
       FROM workloads w
       LEFT JOIN readings s ON s.workload_id = w.workload_id
       WHERE w.organization_id = $1 AND w.started_at IS NOT NULL
         AND w.started_at < $4 AND coalesce(w.completed_at, $2) > $3
     )
     SELECT p.initiative_id, t.pool_id, sum(seconds)::float8 AS used,
            coalesce(sum(seconds) FILTER (WHERE utilization IS NOT NULL), 0)::float8 AS sampled,
            coalesce(sum(seconds * utilization / 100) FILTER (WHERE utilization IS NOT NULL), 0)::float8 AS busy
     FROM parts p
     LEFT JOIN pool_instance_types t ON t.organization_id = $1 AND t.instance_type = p.instance_type
     GROUP BY 1, 2`,
    [organizationId, new Date(now), new Date(from), new Date(Math.min(to, now))],
  );
}

type Key = { initiatives: string[]; pool?: string };

function sumOf(rows: RawRow[], key: Key, field: 'used' | 'sampled' | 'busy'): number {
  return rows
    .filter((row) => key.initiatives.includes(row.initiative_id))
    .filter((row) => key.pool === undefined || row.pool_id === key.pool)
    .reduce((sum, row) => sum + row[field], 0);
}

interface Figures {
  used_gpu_hours: number;
  burn_rate_gpu_hours_per_day: number;
  sampled_gpu_hours: number;
  idle_gpu_hours: number;
  gpu_efficiency: number | null;
  daily: { date: string; used_gpu_hours: number }[];
}

/** Rounded to 4 places by the API: half a unit, and a little float. */
function expectNear(actual: number, expected: number, tolerance = 0.00006) {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(tolerance);
}

describe('capacity from the hourly usage rollup equals a recomputation from raw rows', () => {
  let t: TestApp;
  let organizationId: string;
  let now = 0;
  const tokens: { headers: Record<string, string>; initiatives: string[] }[] = [];
  let runs: Run[];

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(now));
    organizationId = await seedOrganization(t.dataSource, {
      initiatives: INITIATIVES,
      pools: POOLS,
      allocations: [{ initiativeId: 'i1', poolId: 'pa', allocatedGpuHours: 5000 }],
    });
    for (const [role, initiatives] of [
      ['ORG_ADMIN', INITIATIVES],
      ['MEMBER', ['i2', 'i3']],
    ] as const) {
      const token = await createApiToken(t.dataSource, organizationId, {
        role,
        initiativeIds: role === 'MEMBER' ? [...initiatives] : undefined,
      });
      tokens.push({ headers: authHeaders(token, organizationId), initiatives: [...initiatives] });
    }
    runs = generateRuns(13);
    await upsertRuns(t.dataSource, organizationId, runs);
    await sendSamples(t.dataSource, organizationId, 0);
  }, 60_000);

  afterAll(() => t.close());

  async function expectCase(c: Case) {
    now = Date.parse(c.now);
    const start = Date.parse(c.start);
    const soFar = Math.min(Date.parse(c.end), now);
    await t.dataSource.query(
      'UPDATE organizations SET timezone = $2, budget_period_start = $3, budget_period_end = $4 WHERE organization_id = $1',
      [organizationId, c.timezone, c.start, c.end],
    );
    const period = await rawUsage(t.dataSource, organizationId, start, soFar, now);
    const burn = await rawUsage(t.dataSource, organizationId, now - 7 * DAY, now, now);
    const days = await localDays(c.timezone, start, soFar);
    const perDay = await Promise.all(
      days.map((day) => rawUsage(t.dataSource, organizationId, day.from, day.to, now)),
    );
    for (const { headers, initiatives } of tokens) {
      const { body } = await request(t.server)
        .get('/v1/capacity')
        .query({ interval: 'day' })
        .set(headers)
        .expect(200);
      const check = (figures: Figures, key: Key) => {
        expectNear(figures.used_gpu_hours, sumOf(period, key, 'used') / 3600);
        expectNear(figures.burn_rate_gpu_hours_per_day * 7, sumOf(burn, key, 'used') / 3600, 0.0004);
        const sampled = sumOf(period, key, 'sampled');
        const busy = sumOf(period, key, 'busy');
        expectNear(figures.sampled_gpu_hours, sampled / 3600);
        expectNear(figures.idle_gpu_hours, (sampled - busy) / 3600);
        if (sampled === 0) expect(figures.gpu_efficiency).toBeNull();
        else expectNear(figures.gpu_efficiency!, busy / sampled);
        expect(figures.daily.map((day) => day.date)).toEqual(days.map((day) => day.date));
        figures.daily.forEach((day, index) =>
          expectNear(day.used_gpu_hours, sumOf(perDay[index], key, 'used') / 3600),
        );
      };
      const summary = body.data.summary;
      check({ ...summary, used_gpu_hours: summary.total_used_gpu_hours }, { initiatives });
      expect(body.data.initiatives.map((entry: { initiative_id: string }) => entry.initiative_id)).toEqual(
        initiatives,
      );
      for (const entry of body.data.initiatives) check(entry, { initiatives: [entry.initiative_id] });
      // A pool shows when allocated in scope or used: a window that nets to nothing must not show one.
      const shown = POOLS.map((pool) => pool.poolId).filter(
        (pool) =>
          (pool === 'pa' && initiatives.includes('i1')) || sumOf(period, { initiatives, pool }, 'used') > 0,
      );
      expect(body.data.pools.map((entry: { pool_id: string }) => entry.pool_id)).toEqual(shown);
      for (const entry of body.data.pools) check(entry, { initiatives, pool: entry.pool_id });
    }
  }

  /** The local days of the period so far, as the service cuts them, by PostgreSQL's zone rules. */
  async function localDays(timezone: string, from: number, to: number) {
    if (to <= from) return [];
    const rows: { boundary: Date; date: string }[] = await t.dataSource.query(
      `SELECT d::timestamp AT TIME ZONE $1 AS boundary, to_char(d, 'YYYY-MM-DD') AS date
       FROM generate_series(($2::timestamptz AT TIME ZONE $1)::date::timestamp, ($3::timestamptz AT TIME ZONE $1)::date::timestamp,
                            interval '1 day') d`,
      [timezone, new Date(from), new Date(to - 1)],
    );
    return rows.map((row, index) => ({
      date: row.date,
      from: Math.max(row.boundary.getTime(), from),
      to: Math.min(index + 1 < rows.length ? rows[index + 1].boundary.getTime() : Infinity, to),
    }));
  }

  it('covers what it claims: runs start and end in every edge hour, span days, run, and have samples', async () => {
    const [counts] = await t.dataSource.query(
      `SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
              count(*) FILTER (WHERE completed_at - started_at > interval '1 day')::int AS multi_day,
              count(*) FILTER (WHERE completed_at = started_at)::int AS zero_length,
              (SELECT count(DISTINCT workload_id) FROM metric_samples WHERE organization_id = $1)::int AS sampled,
              (SELECT count(*) FROM capacity_usage_hourly WHERE organization_id = $1)::int AS buckets,
              count(DISTINCT gpu_share_units / gpu_count) FILTER (WHERE gpu_count > 0)::int AS share_kinds,
              count(*) FILTER (WHERE share_units IS NOT NULL AND completed_at - started_at > interval '1 day')::int
                AS fractional_multi_day
       FROM workloads WHERE organization_id = $1`,
      [organizationId],
    );
    expect(counts.running).toBeGreaterThan(10);
    expect(counts.multi_day).toBeGreaterThan(100);
    expect(counts.zero_length).toBeGreaterThan(10);
    expect(counts.sampled).toBeGreaterThan(500);
    expect(counts.buckets).toBeGreaterThan(500);
    // 720, 1260, 1440, 2160 and 5040 units per device: MIG 1g/2g/3g, four replicas, whole GPUs.
    expect(counts.share_kinds).toBe(5);
    expect(counts.fractional_multi_day).toBeGreaterThan(50);
    expect(await hourlyUsageDifferences(t.dataSource, organizationId)).toEqual([]);
  });

  it.each(CASES)('$name', async (c) => {
    await expectCase(c);
  });

  it('stays equal after runs finish, move, change times, size, share and type, disappear, and samples are re-sent', async () => {
    const random = generator(29);
    const changed = runs.map((run) => ({ ...run }));
    for (const run of changed) {
      const roll = random.next();
      if (run.status === 'running' && roll < 0.6) {
        run.status = 'completed';
        run.completed_at = withMicros(Date.parse(run.started_at) + random.pick([10 * MINUTE, 26 * HOUR]), 0);
      } else if (roll < 0.15) {
        run.initiative_id = random.pick(INITIATIVES);
      } else if (roll < 0.3 && run.completed_at !== null) {
        const shift = random.pick([-61 * MINUTE, 17 * MINUTE, 2 * HOUR]);
        run.started_at = withMicros(Date.parse(run.started_at) + shift, 0);
        run.completed_at = withMicros(Date.parse(run.completed_at) + shift + random.pick([0, 3 * HOUR]), 0);
      } else if (roll < 0.4) {
        run.gpu_count = random.pick([1, 3, 16]);
        Object.assign(run, shared(run.gpu_count, random.pick(SHARE_KINDS)));
        run.instance_type = random.pick(INSTANCE_TYPES);
      } else if (roll < 0.5 && run.gpu_count > 0) {
        // Same devices, shared otherwise: only the share moves.
        Object.assign(run, shared(run.gpu_count, random.pick(SHARE_KINDS)));
      }
    }
    await upsertRuns(t.dataSource, organizationId, changed);
    await writeAs(
      t.dataSource,
      `DELETE FROM workloads WHERE organization_id = $1 AND abs(hashtext(workload_id)) % 11 = 0`,
      [organizationId],
    );
    await sendSamples(t.dataSource, organizationId, 1);
    expect(await hourlyUsageDifferences(t.dataSource, organizationId)).toEqual([]);
    for (const c of CASES) await expectCase(c);
  }, 60_000);
});
