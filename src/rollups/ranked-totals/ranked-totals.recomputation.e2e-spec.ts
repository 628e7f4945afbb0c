import request from 'supertest';
import { Clock } from '../../common/clock';
import {
  authHeaders,
  createApiToken,
  deviceShareUnits,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type SampleSeed,
  SHARE_KINDS,
  type WorkloadSeed,
  writeAs,
} from '../../../test/support/factories';
import {
  aggregateDifferences,
  rankedTotalsDifferences,
  rollupResidue,
} from '../../../test/support/rollup-residue';
import { createTestApp, type TestApp } from '../../../test/support/test-app';
import { GPU_SHARE_UNITS } from '../../common/gpu-sharing';

/**
 * The ranked endpoint reads indexes, per-status totals and aggregates denormalized with each
 * workload's initiative, status and settled GPU-seconds; these tests hold every answer to a naive
 * recomputation from the raw workloads and samples, on generated data full of ties, running workloads
 * and status changes, whole GPUs, MIG slices and shared replicas (GPU-hours are the physical share held
 * × hours), and the copies and totals to their recomputation after the writes.
 */

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const INITIATIVES = ['i-1', 'i-2', 'i-3'];
const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const SORTS = [
  'gpu_utilization',
  'memory_utilization',
  'power_usage',
  'gpu_hours',
  'idle_gpu_hours',
  'energy_kwh',
] as const;
type Sort = (typeof SORTS)[number];

/** The organization's max_sample_gap_seconds (the default): how long a sample's power holds at most. */
const CAP_SECONDS = 120;

/**
 * kWh of a workload's samples (docs/api.md, "Energy and carbon"): each one's power held until the
 * next, the last until completed_at (nothing while running), at most CAP_SECONDS.
 */
function energyKwh(w: RawWorkload, list: RawSample[]): number {
  const sorted = [...list].sort((a, b) => a.sampled_at.getTime() - b.sampled_at.getTime());
  const joules = sorted.reduce((total, sample, index) => {
    const until = sorted[index + 1]?.sampled_at ?? w.completed_at;
    if (!until) return total;
    const seconds = Math.min(
      CAP_SECONDS,
      Math.max(0, (until.getTime() - sample.sampled_at.getTime()) / SECOND),
    );
    return total + sample.power_usage * seconds;
  }, 0);
  return joules / 3_600_000;
}

interface RawWorkload {
  workload_id: string;
  name: string;
  initiative_id: string;
  status: string;
  gpu_count: number;
  gpu_share_units: number;
  gpu_sharing_mode: string | null;
  gpu_sharing_profile: string | null;
  gpu_sharing_replicas: number | null;
  started_at: Date | null;
  completed_at: Date | null;
  cluster_id: string;
}

interface RawSample {
  workload_id: string;
  sampled_at: Date;
  gpu_utilization: number;
  memory_utilization: number;
  power_usage: number;
}

interface Ranked extends RawWorkload {
  value: number;
  /** A lifetime average as the integer sum and count of its samples, for an exact mean. */
  sum?: number;
  count?: number;
  current: number;
}

/** Deterministic generator, so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function round4(value: number | null): number | null {
  if (value === null) return null;
  const rounded = Math.round(value * 10_000) / 10_000;
  return rounded === 0 ? 0 : rounded;
}

/** Code point order, as PostgreSQL's "C" collation. */
function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function generate(now: number): { workloads: WorkloadSeed[]; samples: SampleSeed[] } {
  const next = random(20260202);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)];
  const workloads: WorkloadSeed[] = [];
  const samples: SampleSeed[] = [];
  const base = now - 10 * 24 * 60 * MINUTE;
  for (let k = 0; k < 160; k++) {
    // Mixed case and punctuation, so the tie order is code point order, not a locale's.
    const workloadId = `${pick(['wl', 'WL', 'w_l', 'w.l'])}-${k % 7}-${k}`;
    const status = pick(STATUSES);
    const initiativeId = pick(INITIATIVES);
    const gpuCount = pick([0, 1, 2, 4]);
    const kind = pick(SHARE_KINDS);
    const submittedAt = new Date(base + k * MINUTE);
    // Few distinct durations, some with a fraction of a second (floored): plenty of gpu_hours ties,
    // some between different shares (2 × 1g = 1 × 2g).
    const ranFor = pick([0, 30, 60]) * MINUTE + pick([0, 999]);
    const seed: WorkloadSeed = {
      workloadId,
      name: `job ${k}`,
      initiativeId,
      gpuCount,
      shareUnits: deviceShareUnits(gpuCount, kind),
      gpuSharing: gpuCount === 0 ? null : kind.sharing,
      status,
      submittedAt,
      clusterId: pick(['c-1', 'c-2']),
    };
    if (status === 'running') {
      seed.submittedAt = new Date(now - 4 * 60 * MINUTE);
      seed.startedAt = new Date(now - ranFor - pick([1, 2]) * 60 * MINUTE);
    } else if (status !== 'pending') {
      const neverStarted = status === 'cancelled' && next() < 0.5;
      seed.startedAt = neverStarted ? null : new Date(submittedAt.getTime() + MINUTE);
      seed.completedAt = new Date(submittedAt.getTime() + MINUTE + ranFor);
      seed.exitCode = status === 'cancelled' ? null : status === 'failed' ? 1 : 0;
    }
    workloads.push(seed);
    if (next() < 0.6) {
      const count = 1 + Math.floor(next() * 4);
      for (let s = 0; s < count; s++) {
        samples.push({
          workloadId,
          at: new Date(base + s * MINUTE),
          gpuUtilization: pick([0, 25, 50, 100]),
          memoryUtilization: pick([0, 50, 100]),
          powerUsage: pick([0, 100, 400]),
        });
      }
    }
  }
  return { workloads, samples };
}

/** GPU-hours: the share held (units / 5040) × whole seconds run (up to now while running) / 3600. */
function gpuHours(w: RawWorkload, now: number): number {
  const end = w.completed_at?.getTime() ?? now;
  const seconds = w.started_at ? Math.max(0, Math.floor((end - w.started_at.getTime()) / SECOND)) : 0;
  return (w.gpu_share_units * seconds) / GPU_SHARE_UNITS / 3600;
}

/** The share fields a ranked item carries, from the raw row. */
function shareOf(w: RawWorkload) {
  return {
    gpu_count: w.gpu_count,
    gpu_share: round4(w.gpu_share_units / GPU_SHARE_UNITS),
    gpu_sharing:
      w.gpu_sharing_mode === null
        ? null
        : w.gpu_sharing_mode === 'mig'
          ? { mode: 'mig', profile: w.gpu_sharing_profile }
          : { mode: w.gpu_sharing_mode, replicas: w.gpu_sharing_replicas },
  };
}

function naiveRanking(
  sort: Sort,
  workloads: RawWorkload[],
  samples: RawSample[],
  now: number,
): Map<string, Ranked> {
  const ranked = new Map<string, Ranked>();
  if (sort === 'gpu_hours') {
    for (const w of workloads) {
      const hours = gpuHours(w, now);
      ranked.set(w.workload_id, { ...w, value: hours, current: hours });
    }
    return ranked;
  }
  const byWorkload = new Map(workloads.map((w) => [w.workload_id, w]));
  const perWorkload = new Map<string, RawSample[]>();
  for (const s of samples) perWorkload.set(s.workload_id, [...(perWorkload.get(s.workload_id) ?? []), s]);
  for (const [id, list] of perWorkload) {
    const w = byWorkload.get(id);
    if (!w) continue;
    if (sort === 'energy_kwh') {
      const kwh = energyKwh(w, list);
      ranked.set(id, { ...w, value: kwh, current: kwh });
      continue;
    }
    if (sort === 'idle_gpu_hours') {
      const utilization = list.reduce((sum, s) => sum + s.gpu_utilization, 0) / list.length;
      const idle = gpuHours(w, now) * (1 - utilization / 100);
      ranked.set(id, { ...w, value: idle, current: idle });
      continue;
    }
    const values = list.map((s) => s[sort]);
    const latest = [...list].sort((a, b) => b.sampled_at.getTime() - a.sampled_at.getTime())[0];
    const sum = values.reduce((total, v) => total + v, 0);
    ranked.set(id, { ...w, value: sum / values.length, current: latest[sort], sum, count: values.length });
  }
  return ranked;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * The mean of the values. Sample averages (integer readings) are summed over a common denominator, so
 * the mean is the one correctly rounded quotient the service's exact numeric sum gives: a float sum of
 * averages can land just under a half in the fourth decimal that the exact mean sits on.
 */
function meanOf(rows: Ranked[]): number {
  if (rows.every((r) => r.sum !== undefined && Number.isInteger(r.sum))) {
    const denominator = rows.reduce((l, r) => (l * r.count!) / gcd(l, r.count!), 1);
    const numerator = rows.reduce((total, r) => total + (r.sum! * denominator) / r.count!, 0);
    return numerator / (denominator * rows.length);
  }
  return rows.reduce((sum, r) => sum + r.value, 0) / rows.length;
}

interface Query {
  sort: Sort;
  order: 'asc' | 'desc';
  limit: number;
  status?: string;
  initiativeId?: string;
  clusterId?: string;
}

function expectedBody(query: Query, scope: string[] | null, raw: Raw, now: number) {
  const all = naiveRanking(query.sort, raw.workloads, raw.samples, now);
  const rows = raw.workloads
    .filter((w) => scope === null || scope.includes(w.initiative_id))
    .filter((w) => query.status === undefined || w.status === query.status)
    .filter((w) => query.initiativeId === undefined || w.initiative_id === query.initiativeId)
    .filter((w) => query.clusterId === undefined || w.cluster_id === query.clusterId)
    .map((w) => all.get(w.workload_id))
    .filter((r): r is Ranked => r !== undefined);
  const direction = query.order === 'asc' ? 1 : -1;
  rows.sort((a, b) => (a.value - b.value) * direction || byId(a.workload_id, b.workload_id));
  const mean = rows.length ? meanOf(rows) : null;
  return {
    data: {
      workloads: rows.slice(0, query.limit).map((r) => ({
        workload_id: r.workload_id,
        name: r.name,
        initiative_id: r.initiative_id,
        ...shareOf(r),
        [query.sort]: { avg: round4(r.value), current: round4(r.current) },
        // No prices in this organization: the money of idle time is unknown, never 0.
        ...(query.sort === 'idle_gpu_hours' ? { idle_cost: null } : {}),
      })),
      scope_average: { [query.sort]: round4(mean) },
    },
    total_count: rows.length,
  };
}

interface Raw {
  workloads: RawWorkload[];
  samples: RawSample[];
}

describe('GET /v1/workloads/metrics (ranked) equals a naive recomputation', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let member: Record<string, string>;
  let lead: Record<string, string>;

  async function readRaw(): Promise<Raw> {
    const workloads: RawWorkload[] = await t.dataSource.query(
      `SELECT workload_id, name, initiative_id, status, gpu_count, gpu_share_units, gpu_sharing_mode,
              gpu_sharing_profile, gpu_sharing_replicas, started_at, completed_at, cluster_id
       FROM workloads WHERE organization_id = $1`,
      [orgId],
    );
    const samples: RawSample[] = await t.dataSource.query(
      `SELECT workload_id, sampled_at, gpu_utilization, memory_utilization, power_usage
       FROM metric_samples WHERE organization_id = $1`,
      [orgId],
    );
    return { workloads, samples };
  }

  /** Running workloads grow by the second: the service's clock is fixed to the instant recomputed. */
  async function expectRanked(headers: Record<string, string>, scope: string[] | null, query: Query) {
    const raw = await readRaw();
    const now = Date.now();
    jest.spyOn(t.app.get(Clock), 'now').mockReturnValue(new Date(now));
    const params: Record<string, string | number> = {
      sort_by: query.sort,
      order: query.order,
      limit: query.limit,
    };
    if (query.status) params.status = query.status;
    if (query.initiativeId) params.initiative_id = query.initiativeId;
    if (query.clusterId) params.cluster_id = query.clusterId;
    const res = await request(t.server).get('/v1/workloads/metrics').query(params).set(headers).expect(200);
    const actual = { data: res.body.data, total_count: res.body.metadata.total_count };
    expect({ query, ...actual }).toEqual({ query, ...expectedBody(query, scope, raw, now) });
  }

  function queries(initiativeFilter: string): Query[] {
    const list: Query[] = [];
    for (const sort of SORTS) {
      for (const order of ['asc', 'desc'] as const) {
        for (const limit of [1, 7, 100]) list.push({ sort, order, limit });
        for (const status of STATUSES) list.push({ sort, order, limit: 5, status });
        list.push({ sort, order, limit: 6, initiativeId: initiativeFilter });
        list.push({ sort, order, limit: 100, initiativeId: initiativeFilter, status: 'completed' });
        list.push({ sort, order, limit: 7, clusterId: 'c-2' });
        list.push({ sort, order, limit: 100, clusterId: 'c-1', status: 'completed' });
      }
    }
    return list;
  }

  beforeAll(async () => {
    t = await createTestApp();
    orgId = await seedOrganization(t.dataSource, { initiatives: INITIATIVES });
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    member = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['i-1', 'i-3'] }),
      orgId,
    );
    lead = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'TEAM_LEAD', initiativeIds: ['i-2'] }),
      orgId,
    );
    const { workloads, samples } = generate(Date.now());
    // Samples arrive in two batches, so aggregates are built and then updated by the triggers.
    await insertWorkloads(t.dataSource, orgId, workloads.slice(0, 80));
    await insertSamples(t.dataSource, orgId, samples.slice(0, 150));
    await insertWorkloads(t.dataSource, orgId, workloads.slice(80));
    await insertSamples(t.dataSource, orgId, samples.slice(150));
  }, 60_000);

  afterAll(async () => {
    await t.close();
  });

  it('as ORG_ADMIN, for every sort_by × order, each status, an initiative and several limits', async () => {
    const raw = await readRaw();
    const perDevice = new Set(
      raw.workloads.filter((w) => w.gpu_count > 0).map((w) => w.gpu_share_units / w.gpu_count),
    );
    expect([...perDevice].sort((a, b) => a - b)).toEqual([720, 1260, 1440, 2160, 5040]);
    for (const query of queries('i-2')) await expectRanked(admin, null, query);
  }, 120_000);

  it('as a MEMBER of two initiatives', async () => {
    for (const query of queries('i-3')) await expectRanked(member, ['i-1', 'i-3'], query);
  }, 120_000);

  it('as a TEAM_LEAD of one initiative', async () => {
    for (const query of queries('i-2')) await expectRanked(lead, ['i-2'], query);
    expect(await aggregateDifferences(t.dataSource, orgId)).toEqual([]);
    expect(await rankedTotalsDifferences(t.dataSource, orgId)).toEqual([]);
    expect(await rollupResidue(t.dataSource, orgId)).toEqual({});
  }, 120_000);

  it('after workloads finish, move to another initiative, change GPUs, shares or samples, and are deleted', async () => {
    const sampled: {
      workload_id: string;
      status: string;
      gpu_count: number;
      seconds: number;
      avg: number;
    }[] = await t.dataSource.query(
      `SELECT w.workload_id, w.status, w.gpu_count,
                coalesce(extract(epoch FROM w.completed_at - w.started_at), 0)::float8 AS seconds,
                (SELECT avg(s.gpu_utilization) FROM metric_samples s
                 WHERE s.organization_id = w.organization_id AND s.workload_id = w.workload_id) AS avg
         FROM workloads w
         WHERE w.organization_id = $1
           AND EXISTS (SELECT 1 FROM metric_samples s WHERE s.organization_id = w.organization_id AND s.workload_id = w.workload_id)
         ORDER BY w.workload_id`,
      [orgId],
    );
    const running = sampled.filter((w) => w.status === 'running').map((w) => w.workload_id);
    const settled = sampled.filter((w) => w.status !== 'running').map((w) => w.workload_id);
    // Settled workloads with idle time, whose idle figure moves when their GPUs or samples do.
    const idle = sampled
      .filter((w) => w.status !== 'running' && w.seconds >= 60 && w.avg > 0 && w.avg < 100 && w.avg !== 50)
      .map((w) => w.workload_id)
      .filter((id) => !settled.slice(0, 4).includes(id));
    expect(idle.length).toBeGreaterThan(4);
    expect(running.length).toBeGreaterThan(2);
    expect(settled.length).toBeGreaterThan(3);
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET status = 'completed', completed_at = now(), exit_code = 0
       WHERE organization_id = $1 AND workload_id = ANY ($2::text[])`,
      [orgId, running.slice(0, 2)],
    );
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET initiative_id = CASE WHEN initiative_id = 'i-2' THEN 'i-1' ELSE 'i-2' END
       WHERE organization_id = $1 AND workload_id = ANY ($2::text[])`,
      [orgId, settled.slice(0, 3)],
    );
    await writeAs(t.dataSource, `DELETE FROM workloads WHERE organization_id = $1 AND workload_id = $2`, [
      orgId,
      settled[3],
    ]);
    // A settled workload's row changes without a status change (its GPU-seconds do).
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET gpu_count = gpu_count + 3 WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, idle[0]],
    );
    // Shares change on the same devices: a settled workload's idle figure and GPU-hours move with it,
    // and a running one's live figures.
    const resliced = [idle[4], running[2]].filter(
      (id) => sampled.find((w) => w.workload_id === id)!.gpu_count > 0,
    );
    expect(resliced.length).toBeGreaterThan(0);
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET share_units = gpu_count * 720, gpu_sharing_mode = 'mig', gpu_sharing_profile = '1g.10gb',
              gpu_sharing_replicas = NULL
       WHERE organization_id = $1 AND workload_id = ANY ($2::text[])`,
      [orgId, resliced],
    );
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET share_units = NULL, gpu_sharing_mode = NULL, gpu_sharing_profile = NULL,
              gpu_sharing_replicas = NULL
       WHERE organization_id = $1 AND share_units IS NOT NULL AND status <> 'running' AND workload_id = ANY ($2::text[])`,
      [orgId, settled.slice(4, 8)],
    );
    // New samples and a re-sent one move lifetime averages of settled and running workloads.
    await insertSamples(t.dataSource, orgId, [
      ...[idle[1], idle[2], running[2]].map((workloadId, k) => ({
        workloadId,
        at: new Date(Date.now() - (k + 1) * MINUTE),
        gpuUtilization: k === 0 ? 100 : 0,
      })),
    ]);
    await writeAs(
      t.dataSource,
      `UPDATE metric_samples SET gpu_utilization = 100 - gpu_utilization
       WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, idle[3]],
    );
    for (const query of queries('i-2')) await expectRanked(admin, null, query);
    for (const query of queries('i-1')) await expectRanked(member, ['i-1', 'i-3'], query);
    for (const query of queries('i-2')) await expectRanked(lead, ['i-2'], query);
    expect(await aggregateDifferences(t.dataSource, orgId)).toEqual([]);
    expect(await rankedTotalsDifferences(t.dataSource, orgId)).toEqual([]);
    expect(await rollupResidue(t.dataSource, orgId)).toEqual({});
  }, 120_000);

  it('a MEMBER with no initiative sees nothing ranked', async () => {
    const nobody = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: [] }),
      orgId,
    );
    for (const sort of SORTS) {
      const res = await request(t.server)
        .get('/v1/workloads/metrics')
        .query({ sort_by: sort })
        .set(nobody)
        .expect(200);
      expect(res.body.data).toEqual({ workloads: [], scope_average: { [sort]: null } });
      expect(res.body.metadata.total_count).toBe(0);
    }
  });
});
