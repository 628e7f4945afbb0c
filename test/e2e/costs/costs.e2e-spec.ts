import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { ImportRejectedError } from '../../../src/import/import-errors';
import { pruneSamples } from '../../../src/cli/commands/prune.command';
import {
  authHeaders,
  createApiToken,
  importDocument,
  insertSamples,
  uniqueId,
} from '../../support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * Prices per GPU-hour turn GPU-hours into money. Every amount here is recomputed from the raw rows
 * (the workloads as imported) and the price table with exact integer arithmetic (BigInt), rounded
 * once, half away from zero, to the currency's minor units: a run across a price change, an
 * instance type without a price, a run that leaves its last price period, a running MIG instance
 * charged up to as_of, a MEMBER's scope, and the FOCUS export column by column.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const UNITS_PER_GPU = 5040n;
const PRICE_SCALE = 10n ** 10n;

interface Price {
  instance_type: string;
  price_per_gpu_hour: string | number;
  pricing_model: 'on_demand' | 'reserved' | 'spot' | 'internal';
  effective_from: string;
  effective_to: string | null;
}

const PRICES: Price[] = [
  {
    instance_type: 'p5.48xlarge',
    price_per_gpu_hour: '2.50',
    pricing_model: 'on_demand',
    effective_from: '2026-11-01T00:00:00Z',
    effective_to: '2026-11-10T12:00:00Z',
  },
  {
    instance_type: 'p5.48xlarge',
    price_per_gpu_hour: 3.1,
    pricing_model: 'reserved',
    effective_from: '2026-11-10T12:00:00Z',
    effective_to: null,
  },
  {
    instance_type: 'l4.xlarge',
    price_per_gpu_hour: '0.8125',
    pricing_model: 'on_demand',
    effective_from: '2026-10-01T00:00:00Z',
    effective_to: null,
  },
  {
    instance_type: 'g5.xlarge',
    price_per_gpu_hour: '0.4321',
    pricing_model: 'spot',
    effective_from: '2026-11-01T00:00:00Z',
    effective_to: '2026-11-15T00:00:00Z',
  },
];

interface Run {
  workload_id: string;
  initiative_id: string;
  instance_type: string;
  units: bigint;
  status: 'completed' | 'running' | 'pending';
  submitted_at: string;
  started_at: string | null;
  completed_at: string | null;
  gpu_count: number;
  gpu_sharing?: Record<string, unknown>;
}

const RUNS: Run[] = [
  // Across the price change at 12:00: 2 h at 2.50, 2.5 h at 3.10, and half a second that is floored.
  run('across-change', 'vision', 'p5.48xlarge', 2, '2026-11-10T10:00:00Z', '2026-11-10T14:30:00.500Z'),
  run('no-price', 'vision', 'a30.xlarge', 1, '2026-11-12T08:00:00Z', '2026-11-12T09:00:00Z'),
  // Leaves the spot price period at midnight: 4 h priced, 4 h without a price.
  run('leaves-price', 'vision', 'g5.xlarge', 3, '2026-11-14T20:00:00Z', '2026-11-15T04:00:00Z'),
  run('other-team', 'nlp', 'p5.48xlarge', 8, '2026-11-05T00:00:00Z', '2026-11-06T06:00:00Z'),
  // Submitted once their instance type's price no longer changes: the statistics cost their idle
  // time from the rollup rows, at the one price.
  run('l4-settled', 'nlp', 'l4.xlarge', 2, '2026-11-12T00:00:00Z', '2026-11-12T03:00:00Z'),
  run('p5-settled', 'vision', 'p5.48xlarge', 1, '2026-11-12T10:00:30Z', '2026-11-12T11:30:00Z'),
  {
    ...run('mig-running', 'vision', 'p5.48xlarge', 1, '2026-11-19T23:00:00Z', null),
    units: 720n,
    gpu_sharing: { mode: 'mig', profile: '1g.10gb' },
  },
  {
    ...run('waiting', 'vision', 'p5.48xlarge', 4, null, null),
    submitted_at: '2026-11-20T11:00:00Z',
  },
];

/** GPU utilization samples (percent) of the sampled runs: the idle figures' averages. */
const UTILIZATION: Record<string, number[]> = {
  'across-change': [20, 30],
  'leaves-price': [50],
  'mig-running': [60, 70, 80],
  'l4-settled': [40],
  'p5-settled': [10, 20, 90],
};

/** The idle part × price of a set's priced parts (`parts` of each run: their whole seconds), rounded once. */
function idleAmount(runs: Run[], parts: (w: Run) => Part[]): string {
  // Σ numerator × (100 × count − Σ utilization) ÷ (100 × count), over one common denominator.
  const common = 100n * 60n;
  let sum = 0n;
  for (const w of runs) {
    const values = UTILIZATION[w.workload_id];
    if (values === undefined) continue;
    const count = BigInt(values.length);
    const idleShare = 100n * count - BigInt(values.reduce((a, b) => a + b, 0));
    sum += (numerator(w, parts(w)) * idleShare * common) / (100n * count);
  }
  return amount(sum, 2, common);
}

/**
 * The FOCUS energy columns of a part of a sampled run: its readings (300 W, a minute apart from a
 * minute after the start) whose time falls in the part, each held until the next, the last until
 * completed_at, for at most 120 s. No carbon intensity is known: carbon only where energy is 0.
 */
function expectedEnergy(workload: Run, part: Part): [string | null, string | null] {
  const values = UTILIZATION[workload.workload_id];
  if (values === undefined) return [null, null];
  const times = values.map((_, index) => Date.parse(workload.started_at!) + (index + 1) * 60_000);
  const end = workload.completed_at === null ? null : Date.parse(workload.completed_at);
  const joules = times.reduce((sum, at, index) => {
    const until = times[index + 1] ?? end ?? at;
    return at >= part.from && at < part.to
      ? sum + (300 * Math.min(Math.max(until - at, 0), 120_000)) / 1000
      : sum;
  }, 0);
  return [(joules / 3_600_000).toFixed(6), joules === 0 ? '0.000000' : null];
}

function run(
  id: string,
  initiative: string,
  instanceType: string,
  gpus: number,
  start: string | null,
  end: string | null,
): Run {
  return {
    workload_id: id,
    initiative_id: initiative,
    instance_type: instanceType,
    units: BigInt(gpus) * UNITS_PER_GPU,
    status: start === null ? 'pending' : end === null ? 'running' : 'completed',
    submitted_at: start ?? '2026-11-20T11:00:00Z',
    started_at: start,
    completed_at: end,
    gpu_count: gpus,
  };
}

function priceUnits(price: string | number): bigint {
  const [whole, fraction = ''] = String(price).split('.');
  return BigInt(whole) * PRICE_SCALE + BigInt(fraction.padEnd(10, '0'));
}

/**
 * The charged run [start, end), running ones up to asOf; with `whole`, its whole seconds only (the
 * GPU-hours' basis, which unpriced and idle GPU-time keep); null when never started.
 */
function chargedSpan(workload: Run, asOf: number, whole = false): [number, number] | null {
  if (workload.started_at === null) return null;
  const start = Date.parse(workload.started_at);
  const end = workload.completed_at === null ? asOf : Date.parse(workload.completed_at);
  return [start, whole ? start + Math.max(0, Math.floor((end - start) / 1000)) * 1000 : Math.max(start, end)];
}

interface Part {
  from: number;
  to: number;
  price: Price;
}

/** The priced parts of a run, cut at price changes, optionally at UTC midnights and a window. */
function pricedParts(
  workload: Run,
  asOf: number,
  byDay = false,
  window?: [number, number],
  whole = false,
): Part[] {
  const span = chargedSpan(workload, asOf, whole);
  if (!span) return [];
  const parts: Part[] = [];
  for (const price of PRICES.filter((p) => p.instance_type === workload.instance_type)) {
    let from = Math.max(span[0], Date.parse(price.effective_from), window?.[0] ?? -Infinity);
    const to = Math.min(
      span[1],
      price.effective_to === null ? Infinity : Date.parse(price.effective_to),
      window?.[1] ?? Infinity,
    );
    while (from < to) {
      const cut = byDay ? Math.min(to, (Math.floor(from / DAY) + 1) * DAY) : to;
      parts.push({ from, to: cut, price });
      from = cut;
    }
  }
  return parts.sort((a, b) => a.from - b.from);
}

/** Σ units × price × microseconds: the cost's numerator. */
function numerator(workload: Run, parts: Part[]): bigint {
  return parts.reduce(
    (sum, part) =>
      sum + workload.units * priceUnits(part.price.price_per_gpu_hour) * BigInt((part.to - part.from) * 1000),
    0n,
  );
}

const DENOMINATOR = UNITS_PER_GPU * 3600n * PRICE_SCALE * 1_000_000n;

/** numerator ÷ DENOMINATOR rounded half away from zero to `minor` decimals (all amounts ≥ 0). */
function amount(sum: bigint, minor = 2, count = 1n): string {
  const scaled = sum * 10n ** BigInt(minor);
  const denominator = DENOMINATOR * count;
  let whole = scaled / denominator;
  if ((scaled % denominator) * 2n >= denominator) whole += 1n;
  const text = whole.toString().padStart(minor + 1, '0');
  return minor === 0 ? text : `${text.slice(0, -minor)}.${text.slice(-minor)}`;
}

/** The priced parts of a run's whole seconds up to NOW: what idle cost shares. */
function wholeParts(workload: Run): Part[] {
  return pricedParts(workload, NOW, false, undefined, true);
}

function expectedCost(workload: Run, asOf: number): string | null {
  if (!PRICES.some((p) => p.instance_type === workload.instance_type)) return null;
  const span = chargedSpan(workload, asOf);
  const parts = pricedParts(workload, asOf);
  const priced = parts.reduce((sum, part) => sum + part.to - part.from, 0);
  if (span && priced < span[1] - span[0]) return null;
  return amount(numerator(workload, parts));
}

function unpricedGpuHours(workloads: Run[], asOf: number): number {
  let unitMs = 0n;
  for (const workload of workloads) {
    const span = chargedSpan(workload, asOf, true);
    if (!span) continue;
    const priced = pricedParts(workload, asOf, false, undefined, true).reduce(
      (sum, part) => sum + part.to - part.from,
      0,
    );
    unitMs += workload.units * BigInt(span[1] - span[0] - priced);
  }
  return Math.round((Number(unitMs) / 5040 / HOUR) * 10_000) / 10_000;
}

describe('cost: prices, cost figures and the FOCUS export', () => {
  let t: TestApp;
  let organizationId: string;
  let admin: string;
  let member: string;

  function document(org: string, prices: Partial<Price & { currency: string }>[] = PRICES) {
    return {
      organizations: [
        {
          organization_id: org,
          name: 'Priced',
          timezone: 'UTC',
          budget_period_start: '2026-11-01T00:00:00Z',
          budget_period_end: '2026-12-01T00:00:00Z',
        },
      ],
      initiatives: ['vision', 'nlp'].map((id) => ({
        organization_id: org,
        initiative_id: id,
        name: `Team ${id}`,
      })),
      pools: [
        { organization_id: org, pool_id: 'p5', name: 'P5', instance_types: ['p5.48xlarge'] },
        { organization_id: org, pool_id: 'l4', name: 'L4', instance_types: ['l4.xlarge'] },
      ],
      allocations: [
        { organization_id: org, initiative_id: 'vision', pool_id: 'l4', allocated_gpu_hours: 20.5 },
        { organization_id: org, initiative_id: 'nlp', pool_id: 'l4', allocated_gpu_hours: 4 },
        { organization_id: org, initiative_id: 'nlp', pool_id: 'p5', allocated_gpu_hours: 100 },
      ],
      prices: prices.map((price) => ({ organization_id: org, currency: 'EUR', ...price })),
      workloads: RUNS.map((workload) => ({
        organization_id: org,
        workload_id: workload.workload_id,
        initiative_id: workload.initiative_id,
        name: `job ${workload.workload_id}`,
        status: workload.status,
        submitted_by: 'ada@example.com',
        instance_type: workload.instance_type,
        gpu_count: workload.gpu_count,
        ...(workload.gpu_sharing ? { gpu_sharing: workload.gpu_sharing } : {}),
        is_managed: true,
        cluster_id: 'c-east',
        namespace: 'ml',
        submitted_at: workload.submitted_at,
        started_at: workload.started_at,
        completed_at: workload.completed_at,
        exit_code: workload.status === 'completed' ? 0 : null,
      })),
    };
  }

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    organizationId = uniqueId('org-cost');
    await importDocument(t.dataSource, document(organizationId));
    await insertSamples(
      t.dataSource,
      organizationId,
      Object.entries(UTILIZATION).flatMap(([workloadId, values]) => {
        const start = Date.parse(RUNS.find((w) => w.workload_id === workloadId)!.started_at!);
        return values.map((gpuUtilization, index) => ({
          workloadId,
          at: new Date(start + (index + 1) * 60_000),
          gpuUtilization,
        }));
      }),
    );
    admin = await createApiToken(t.dataSource, organizationId, { role: 'ORG_ADMIN' });
    member = await createApiToken(t.dataSource, organizationId, {
      role: 'MEMBER',
      initiativeIds: ['vision'],
    });
  });

  afterAll(() => t.close());

  const get = (token: string, path: string) =>
    request(t.server).get(path).set(authHeaders(token, organizationId));

  it('gives every workload its cost: each part at its price, null without a price, 0 before it runs', async () => {
    const response = await get(admin, '/v1/workloads?limit=100').expect(200);
    expect(response.body.metadata.currency).toBe('EUR');
    const costs = Object.fromEntries(
      response.body.data.workloads.map((w: { workload_id: string; cost: string | null }) => [
        w.workload_id,
        w.cost,
      ]),
    );
    expect(costs).toEqual(Object.fromEntries(RUNS.map((w) => [w.workload_id, expectedCost(w, NOW)])));
    // 2 GPUs × (2 h × 2.50 + 2.5 h × 3.10): the half second is not charged, as it is not counted.
    expect(costs['across-change']).toBe('25.50');
    expect(costs['no-price']).toBeNull();
    expect(costs['leaves-price']).toBeNull();
    expect(costs.waiting).toBe('0.00');
  });

  it('puts cost on the detail and in the list CSV', async () => {
    const detail = await get(admin, '/v1/workloads/mig-running').expect(200);
    const mig = RUNS.find((w) => w.workload_id === 'mig-running')!;
    expect(detail.body.data.cost).toBe(expectedCost(mig, NOW));
    expect(detail.body.metadata.currency).toBe('EUR');
    // 70 % average utilization: 30 % of its cost is idle.
    expect(detail.body.data.idle_cost).toBe(amount(numerator(mig, wholeParts(mig)) * 3n, 2, 10n));
    const csv = await get(admin, '/v1/workloads?limit=100').set('Accept', 'text/csv').expect(200);
    const rows = parse<{ workload_id: string; cost: string }>(csv.text, { columns: true });
    for (const workload of RUNS) {
      const row = rows.find((entry) => entry.workload_id === workload.workload_id);
      expect(row?.cost).toBe(expectedCost(workload, NOW) ?? '');
    }
  });

  it('sums the statistics once from the exact parts, in every group and timeline bucket', async () => {
    const range = 'start_date=2026-11-01T00:00:00Z&end_date=2026-11-21T00:00:00Z';
    const response = await get(
      admin,
      `/v1/workloads/stats?${range}&group_by=initiative_id&interval=week`,
    ).expect(200);
    const total = (runs: Run[]) =>
      amount(runs.reduce((sum, w) => sum + numerator(w, pricedParts(w, NOW)), 0n));
    expect(response.body.metadata.currency).toBe('EUR');
    expect(response.body.data.summary.total_cost).toBe(total(RUNS));
    expect(response.body.data.summary.unpriced_gpu_hours).toBe(unpricedGpuHours(RUNS, NOW));
    for (const group of response.body.data.grouped) {
      const runs = RUNS.filter((w) => w.initiative_id === group.initiative_id);
      expect(group.total_cost).toBe(total(runs));
      expect(group.unpriced_gpu_hours).toBe(unpricedGpuHours(runs, NOW));
    }
    for (const bucket of response.body.data.timeline) {
      const runs = RUNS.filter(
        (w) =>
          Date.parse(w.submitted_at) >= Date.parse(bucket.bucket_start) &&
          Date.parse(w.submitted_at) < Date.parse(bucket.bucket_end),
      );
      expect(bucket.total_cost).toBe(total(runs));
      expect(bucket.idle_cost).toBe(idleAmount(runs, charged));
    }
  });

  const charged = wholeParts;

  it("costs the statistics' idle GPU-hours: from the rollups where one price covers them, else run by run", async () => {
    const inRange = (from: string) => RUNS.filter((w) => Date.parse(w.submitted_at) >= Date.parse(from));
    for (const from of ['2026-11-01T00:00:00Z', '2026-11-12T10:00:10Z']) {
      const range = `start_date=${from}&end_date=2026-11-21T00:00:00Z`;
      for (const groupBy of ['initiative_id', 'instance_type', 'submitted_by', 'cluster_id']) {
        const stats = await get(admin, `/v1/workloads/stats?${range}&group_by=${groupBy}`).expect(200);
        const runs = inRange(from);
        expect([from, groupBy, stats.body.data.summary.idle_cost]).toEqual([
          from,
          groupBy,
          idleAmount(runs, charged),
        ]);
        for (const group of stats.body.data.grouped) {
          const key = group[groupBy];
          const mine = runs.filter((w) =>
            groupBy === 'instance_type'
              ? w.instance_type === key
              : groupBy === 'initiative_id'
                ? w.initiative_id === key
                : true,
          );
          expect([from, groupBy, key, group.idle_cost]).toEqual([
            from,
            groupBy,
            key,
            idleAmount(mine, charged),
          ]);
        }
      }
      const timeline = await get(admin, `/v1/workloads/stats?${range}&interval=day`).expect(200);
      for (const bucket of timeline.body.data.timeline) {
        const runs = inRange(from).filter(
          (w) =>
            Date.parse(w.submitted_at) >= Date.parse(bucket.bucket_start) &&
            Date.parse(w.submitted_at) < Date.parse(bucket.bucket_end),
        );
        expect([bucket.bucket_start, bucket.idle_cost]).toEqual([
          bucket.bucket_start,
          idleAmount(runs, charged),
        ]);
      }
      const scoped = await get(member, `/v1/workloads/stats?${range}`).expect(200);
      expect(scoped.body.data.summary.idle_cost).toBe(
        idleAmount(
          inRange(from).filter((w) => w.initiative_id === 'vision'),
          charged,
        ),
      );
    }
  });

  it("limits a MEMBER's costs to their initiatives", async () => {
    const range = 'start_date=2026-11-01T00:00:00Z&end_date=2026-11-21T00:00:00Z';
    const stats = await get(member, `/v1/workloads/stats?${range}`).expect(200);
    const vision = RUNS.filter((w) => w.initiative_id === 'vision');
    expect(stats.body.data.summary.total_cost).toBe(
      amount(vision.reduce((sum, w) => sum + numerator(w, pricedParts(w, NOW)), 0n)),
    );
    const focus = await get(member, `/v1/costs/focus?${range}`).expect(200);
    expect(new Set(focus.body.data.records.map((r: { SubAccountId: string }) => r.SubAccountId))).toEqual(
      new Set(['vision']),
    );
  });

  it('costs the capacity period so far from the same use, each instance type at the price in force', async () => {
    const response = await get(admin, '/v1/capacity').expect(200);
    expect(response.body.metadata.currency).toBe('EUR');
    // Capacity counts use to the microsecond inside the budget period (not whole seconds per run).
    const period: [number, number] = [Date.parse('2026-11-01T00:00:00Z'), NOW];
    const used = (runs: Run[]) => {
      let priced = 0n;
      let unpricedUnitMs = 0n;
      for (const w of runs) {
        if (w.started_at === null) continue;
        const from = Math.max(Date.parse(w.started_at), period[0]);
        const to = Math.min(w.completed_at === null ? NOW : Date.parse(w.completed_at), period[1]);
        if (from >= to) continue;
        let covered = 0;
        for (const price of PRICES.filter((p) => p.instance_type === w.instance_type)) {
          const a = Math.max(from, Date.parse(price.effective_from));
          const b = Math.min(to, price.effective_to === null ? Infinity : Date.parse(price.effective_to));
          if (a >= b) continue;
          covered += b - a;
          priced += w.units * priceUnits(price.price_per_gpu_hour) * BigInt((b - a) * 1000);
        }
        unpricedUnitMs += w.units * BigInt(to - from - covered);
      }
      return {
        cost: amount(priced),
        unpriced: Math.round((Number(unpricedUnitMs) / 5040 / HOUR) * 10_000) / 10_000,
      };
    };
    const all = used(RUNS);
    expect(response.body.data.summary.total_used_cost).toBe(all.cost);
    expect(response.body.data.summary.unpriced_gpu_hours).toBe(all.unpriced);
    for (const initiative of response.body.data.initiatives) {
      const mine = used(RUNS.filter((w) => w.initiative_id === initiative.initiative_id));
      expect([initiative.initiative_id, initiative.used_cost, initiative.unpriced_gpu_hours]).toEqual([
        initiative.initiative_id,
        mine.cost,
        mine.unpriced,
      ]);
    }
    // One price over the whole period: 24.5 × 0.8125; p5's price changes inside it, so it has none.
    const pools = Object.fromEntries(
      response.body.data.pools.map((pool: { pool_id: string; allocated_cost: string | null }) => [
        pool.pool_id,
        pool.allocated_cost,
      ]),
    );
    expect(pools).toEqual({ l4: '19.91', p5: null });
    const teams = Object.fromEntries(
      response.body.data.initiatives.map((team: { initiative_id: string; allocated_cost: string | null }) => [
        team.initiative_id,
        team.allocated_cost,
      ]),
    );
    expect(teams).toEqual({ vision: '16.66', nlp: null });
    expect(response.body.data.summary.total_allocated_cost).toBeNull();
    // A cluster's cost is that cluster's use, from its runs, at the same prices (every run is in c-east).
    const east = await get(admin, '/v1/capacity?cluster_id=c-east').expect(200);
    const eastUse = used(RUNS);
    expect([east.body.data.summary.total_used_cost, east.body.data.summary.unpriced_gpu_hours]).toEqual([
      eastUse.cost,
      eastUse.unpriced,
    ]);
  });

  it("adds FOCUS's records of the period so far up to capacity's used cost, each within its own rounding", async () => {
    // One time basis: both charge the exact run, so the only difference left is each record's rounding.
    const used = (await get(admin, '/v1/capacity').expect(200)).body.data.summary.total_used_cost;
    const records: { BilledCost: string }[] = [];
    let token: string | undefined;
    do {
      const path: string = `/v1/costs/focus?start_date=2026-11-01&end_date=2026-11-21${token ? `&next_token=${token}` : ''}`;
      const page = await get(admin, path).expect(200);
      records.push(...page.body.data.records);
      token = page.body.metadata.next_token ?? undefined;
    } while (token);
    const cents = (text: string) => Math.round(Number(text) * 100);
    const billed = records.reduce((sum, record) => sum + cents(record.BilledCost), 0);
    expect(records.length).toBeGreaterThan(5);
    expect(Math.abs(billed - cents(used))).toBeLessThanOrEqual(Math.ceil((records.length + 1) / 2));
  });

  it("costs the capacity's idle GPU-hours: each priced part × its run's idle fraction × its price", async () => {
    const response = await get(admin, '/v1/capacity').expect(200);
    const period: [number, number] = [Date.parse('2026-11-01T00:00:00Z'), NOW];
    // Σ units × price × µs × (100 × count − Σ utilization) ÷ (100 × count), over one common denominator.
    const common = 100n * 60n;
    const idle = (runs: Run[]) => {
      let sum = 0n;
      for (const w of runs) {
        const values = UTILIZATION[w.workload_id];
        if (w.started_at === null || values === undefined) continue;
        const from = Math.max(Date.parse(w.started_at), period[0]);
        const to = Math.min(w.completed_at === null ? NOW : Date.parse(w.completed_at), period[1]);
        const count = BigInt(values.length);
        const idleShare = 100n * count - BigInt(values.reduce((a, b) => a + b, 0));
        for (const price of PRICES.filter((p) => p.instance_type === w.instance_type)) {
          const a = Math.max(from, Date.parse(price.effective_from));
          const b = Math.min(to, price.effective_to === null ? Infinity : Date.parse(price.effective_to));
          if (a >= b) continue;
          const priced = w.units * priceUnits(price.price_per_gpu_hour) * BigInt((b - a) * 1000);
          sum += (priced * idleShare * common) / (100n * count);
        }
      }
      return amount(sum, 2, common);
    };
    expect(response.body.data.summary.idle_cost).toBe(idle(RUNS));
    // The half-idle g5 run's priced half only: its unpriced hours are left out, not costed at 0.
    expect(response.body.data.summary.idle_cost).not.toBe('0.00');
    for (const initiative of response.body.data.initiatives) {
      expect([initiative.initiative_id, initiative.idle_cost]).toEqual([
        initiative.initiative_id,
        idle(RUNS.filter((w) => w.initiative_id === initiative.initiative_id)),
      ]);
    }
    const pools = Object.fromEntries(
      response.body.data.pools.map((pool: { pool_id: string; idle_cost: string | null }) => [
        pool.pool_id,
        pool.idle_cost,
      ]),
    );
    expect(pools.p5).toBe(idle(RUNS.filter((w) => w.instance_type === 'p5.48xlarge')));
    const mine = await get(member, '/v1/capacity').expect(200);
    expect(mine.body.data.summary.idle_cost).toBe(idle(RUNS.filter((w) => w.initiative_id === 'vision')));
  });

  it('gives each workload ranked by idle GPU-hours the money of its idle time', async () => {
    const idleCost = (w: Run): string | null => {
      const values = UTILIZATION[w.workload_id];
      if (expectedCost(w, NOW) === null || values === undefined) return null;
      const count = BigInt(values.length);
      const idleShare = 100n * count - BigInt(values.reduce((a, b) => a + b, 0));
      return amount(numerator(w, wholeParts(w)) * idleShare, 2, 100n * count);
    };
    for (const [token, runs] of [
      [admin, RUNS],
      [member, RUNS.filter((w) => w.initiative_id === 'vision')],
    ] as const) {
      const response = await get(token, '/v1/workloads/metrics?sort_by=idle_gpu_hours&limit=100').expect(200);
      expect(response.body.metadata.currency).toBe('EUR');
      const ranked = response.body.data.workloads as { workload_id: string; idle_cost: string | null }[];
      expect(ranked.map((w) => w.workload_id).sort()).toEqual(
        runs
          .filter((w) => UTILIZATION[w.workload_id])
          .map((w) => w.workload_id)
          .sort(),
      );
      for (const w of ranked)
        expect([w.workload_id, w.idle_cost]).toEqual([
          w.workload_id,
          idleCost(runs.find((run) => run.workload_id === w.workload_id)!),
        ]);
    }
    // 25.50 × 75 % idle; the g5 run leaves its price, so it has no cost and no idle cost.
    const byId = await get(admin, '/v1/workloads/metrics?sort_by=idle_gpu_hours&limit=100').expect(200);
    const costs = Object.fromEntries(
      byId.body.data.workloads.map((w: { workload_id: string; idle_cost: string | null }) => [
        w.workload_id,
        w.idle_cost,
      ]),
    );
    expect([costs['across-change'], costs['leaves-price']]).toEqual(['19.13', null]);
  });

  it("ranks fully priced workloads by cost, exact amounts, in the caller's scope", async () => {
    const priced = RUNS.filter((w) => expectedCost(w, NOW) !== null);
    const byCost = [...priced].sort(
      (a, b) =>
        Number(numerator(b, pricedParts(b, NOW)) - numerator(a, pricedParts(a, NOW))) ||
        a.workload_id.localeCompare(b.workload_id),
    );
    const response = await get(admin, '/v1/workloads/metrics?sort_by=cost&limit=100').expect(200);
    expect(response.body.metadata).toMatchObject({ total_count: priced.length, currency: 'EUR' });
    expect(
      response.body.data.workloads.map(
        (w: { workload_id: string; cost: { avg: string; current: string } }) => [
          w.workload_id,
          w.cost.avg,
          w.cost.current,
        ],
      ),
    ).toEqual(byCost.map((w) => [w.workload_id, expectedCost(w, NOW), expectedCost(w, NOW)]));
    const sum = priced.reduce((total, w) => total + numerator(w, pricedParts(w, NOW)), 0n);
    expect(response.body.data.scope_average.cost).toBe(amount(sum, 2, BigInt(priced.length)));
    const ranking = await get(member, '/v1/workloads/metrics?sort_by=cost&order=asc&limit=100').expect(200);
    expect(ranking.body.data.workloads.map((w: { initiative_id: string }) => w.initiative_id)).not.toContain(
      'nlp',
    );
    const csv = await get(admin, '/v1/workloads/metrics?sort_by=cost&limit=2')
      .set('Accept', 'text/csv')
      .expect(200);
    expect(parse<{ cost_avg: string }>(csv.text, { columns: true }).map((row) => row.cost_avg)).toEqual(
      byCost.slice(0, 2).map((w) => expectedCost(w, NOW)),
    );
  });

  describe('GET /v1/costs/focus', () => {
    const from = Date.parse('2026-11-05T12:00:00Z');
    const to = Date.parse('2026-11-20T06:00:00Z');
    const range = `start_date=${new Date(from).toISOString()}&end_date=${new Date(to).toISOString()}`;
    const DECIMAL = /^\d+(\.\d+)?$/;
    const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
    const expectedRecords = () =>
      [...RUNS]
        .sort(
          (a, b) =>
            a.submitted_at.localeCompare(b.submitted_at) || a.workload_id.localeCompare(b.workload_id),
        )
        .flatMap((w) => pricedParts(w, NOW, true, [from, to]).map((part) => ({ w, part })));

    it('gives one record per workload, UTC day and price, each column of its FOCUS type', async () => {
      const response = await get(admin, `/v1/costs/focus?${range}&limit=1000`).expect(200);
      const records = response.body.data.records as Record<string, unknown>[];
      const expected = expectedRecords();
      expect(records).toHaveLength(expected.length);
      records.forEach((record, index) => {
        const { w, part } = expected[index];
        const cost = amount(numerator(w, [part]));
        const [energy, carbon] = expectedEnergy(w, part);
        expect(record).toEqual({
          BilledCost: cost,
          BillingAccountId: organizationId,
          BillingCurrency: 'EUR',
          BillingPeriodEnd: '2026-12-01T00:00:00Z',
          BillingPeriodStart: '2026-11-01T00:00:00Z',
          ChargeCategory: 'Usage',
          ChargeClass: null,
          ChargeDescription: `GPU time of workload ${w.workload_id} on ${w.instance_type}`,
          ChargeFrequency: 'Usage-Based',
          ChargePeriodEnd: new Date(part.to).toISOString().replace('.000Z', 'Z'),
          ChargePeriodStart: new Date(part.from).toISOString().replace('.000Z', 'Z'),
          ConsumedQuantity: (Number(w.units * BigInt(part.to - part.from)) / 5040 / HOUR).toFixed(6),
          ConsumedUnit: 'GPU-Hours',
          ContractedCost: cost,
          ContractedUnitPrice: String(part.price.price_per_gpu_hour),
          EffectiveCost: cost,
          ListCost: cost,
          ListUnitPrice: String(part.price.price_per_gpu_hour),
          PricingCategory: {
            on_demand: 'Standard',
            reserved: 'Committed',
            spot: 'Dynamic',
            internal: 'Other',
          }[part.price.pricing_model],
          PricingQuantity: (Number(w.units * BigInt(part.to - part.from)) / 5040 / HOUR).toFixed(6),
          PricingUnit: 'GPU-Hours',
          ProviderName: 'gpucap',
          ResourceId: w.workload_id,
          ResourceName: `job ${w.workload_id}`,
          ResourceType: 'GPU workload',
          ServiceCategory: 'Compute',
          ServiceName: 'GPU compute',
          SubAccountId: w.initiative_id,
          SubAccountName: `Team ${w.initiative_id}`,
          Tags: { submitted_by: 'ada@example.com', instance_type: w.instance_type, cluster_id: 'c-east' },
          x_CarbonKgCO2e: carbon,
          x_EnergyKWh: energy,
        });
        for (const column of [
          'BilledCost',
          'EffectiveCost',
          'ListCost',
          'ContractedCost',
          'ConsumedQuantity',
          ...(energy === null ? [] : ['x_EnergyKWh']),
        ])
          expect(record[column]).toMatch(DECIMAL);
        for (const column of [
          'ChargePeriodStart',
          'ChargePeriodEnd',
          'BillingPeriodStart',
          'BillingPeriodEnd',
        ])
          expect(record[column]).toMatch(DATE_TIME);
        expect(Date.parse(record.ChargePeriodStart as string)).toBeLessThan(
          Date.parse(record.ChargePeriodEnd as string),
        );
      });
    });

    it('pages by workloads through a signed keyset cursor, and streams the same records as CSV', async () => {
      const all = (await get(admin, `/v1/costs/focus?${range}&limit=1000`).expect(200)).body.data.records;
      const paged: unknown[] = [];
      let token: string | null = null;
      do {
        const path: string = `/v1/costs/focus?${range}&limit=1${token ? `&next_token=${token}` : ''}`;
        const page = await get(admin, path).expect(200);
        paged.push(...page.body.data.records);
        token = page.body.metadata.next_token;
      } while (token);
      expect(paged).toEqual(all);
      const csv = await get(admin, `/v1/costs/focus?${range}`).set('Accept', 'text/csv').expect(200);
      const rows = parse<Record<string, string>>(csv.text, { columns: true });
      expect(rows.map((row) => ({ ...row, Tags: JSON.parse(row.Tags) }))).toEqual(
        all.map((record: Record<string, unknown>) =>
          Object.fromEntries(
            Object.entries(record).map(([key, value]) => [key, value === null ? '' : value]),
          ),
        ),
      );
    });

    it.each([
      ['', ['start_date', 'end_date']],
      ['start_date=2026-11-10&end_date=2026-11-01', ['start_date']],
      ['start_date=2026-01-01&end_date=2027-06-01', ['end_date']],
      ['start_date=yesterday&end_date=2026-11-01', ['start_date']],
    ])('refuses %p naming %p', async (query, fields) => {
      const response = await get(admin, `/v1/costs/focus?${query}`).expect(400);
      expect(response.body.error.code).toBe('VALIDATION_ERROR');
      expect(response.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(
        [...fields].sort(),
      );
    });
  });

  describe('importing prices', () => {
    const rejected = async (prices: Partial<Price & { currency: string }>[], org = uniqueId('org-price')) => {
      try {
        await importDocument(t.dataSource, document(org, prices));
      } catch (error) {
        if (error instanceof ImportRejectedError) return error.lines().join('\n');
        throw error;
      }
      throw new Error('import was accepted');
    };

    it('refuses overlapping periods of one instance type, naming both records', async () => {
      const lines = await rejected([PRICES[0], { ...PRICES[1], effective_from: '2026-11-09T00:00:00Z' }]);
      expect(lines).toContain('prices[1]: its period overlaps the price of instance type');
      expect(lines).toContain('(see prices[0])');
    });

    it('refuses an overlap with a stored period and a second currency', async () => {
      const org = uniqueId('org-price');
      await importDocument(t.dataSource, document(org, [PRICES[0]]));
      const overlap = await rejected([{ ...PRICES[0], effective_from: '2026-11-05T00:00:00Z' }], org);
      expect(overlap).toContain('overlaps the stored price of instance type');
      const currency = await rejected([{ ...PRICES[2], currency: 'USD' }], org);
      expect(currency).toContain('currency USD differs from EUR');
      const mixed = await rejected([PRICES[0], { ...PRICES[2], currency: 'USD' }]);
      expect(mixed).toContain('prices[1]: currency USD differs from EUR');
    });

    it.each([
      [{ price_per_gpu_hour: -1 }, 'price_per_gpu_hour must be a decimal number at least 0'],
      [{ price_per_gpu_hour: '1e3' }, 'price_per_gpu_hour must be a decimal number'],
      [{ currency: 'EURO' }, 'currency must be an ISO 4217 currency code'],
      [{ pricing_model: 'free' }, 'pricing_model must be one of on_demand, reserved, spot, internal'],
      [{ effective_to: '2026-10-01T00:00:00Z' }, 'effective_from must be before effective_to'],
    ])('refuses %p', async (patch, message) => {
      expect(await rejected([{ ...PRICES[0], ...patch } as Price])).toContain(message);
    });

    it('re-prices on a re-import: the costs answered change at once', async () => {
      const org = uniqueId('org-price');
      await importDocument(t.dataSource, document(org, [PRICES[0]]));
      const token = await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' });
      const cost = async () =>
        (await request(t.server).get('/v1/workloads/across-change').set(authHeaders(token, org)).expect(200))
          .body.data.cost;
      expect(await cost()).toBeNull();
      await importDocument(t.dataSource, document(org, PRICES));
      expect(await cost()).toBe('25.50');
    });
  });
});

describe('cost after a pruned week', () => {
  let own: OwnDatabase;
  let t: TestApp;
  let token: string;
  const org = 'org-pruned-cost';
  const samples = [0, 1, 2, 3].map((quarter) => ({
    workloadId: 'across-change',
    at: new Date(Date.parse('2026-11-10T10:00:00Z') + quarter * HOUR),
    gpuUtilization: 25,
  }));

  beforeAll(async () => {
    own = await createOwnDatabase('pruned_cost');
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' }, own.url);
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    await importDocument(t.dataSource, {
      organizations: [
        {
          organization_id: org,
          name: 'Pruned',
          budget_period_start: '2026-11-01T00:00:00Z',
          budget_period_end: '2026-12-01T00:00:00Z',
        },
      ],
      initiatives: [{ organization_id: org, initiative_id: 'vision', name: 'Vision' }],
      prices: PRICES.slice(0, 2).map((price) => ({ organization_id: org, currency: 'EUR', ...price })),
      workloads: [
        {
          organization_id: org,
          workload_id: 'across-change',
          initiative_id: 'vision',
          name: 'job',
          status: 'completed',
          submitted_by: 'ada@example.com',
          instance_type: 'p5.48xlarge',
          gpu_count: 2,
          is_managed: true,
          cluster_id: 'c-east',
          namespace: 'ml',
          submitted_at: '2026-11-10T10:00:00Z',
          started_at: '2026-11-10T10:00:00Z',
          completed_at: '2026-11-10T14:30:00.500Z',
          exit_code: 0,
        },
      ],
    });
    await insertSamples(t.dataSource, org, samples);
    token = await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' });
  });

  afterAll(async () => {
    await t.close();
    await own.drop();
  });

  const figures = async () => {
    const headers = authHeaders(token, org);
    const detail = (await request(t.server).get('/v1/workloads/across-change').set(headers).expect(200)).body
      .data;
    const stats = (
      await request(t.server)
        .get('/v1/workloads/stats?start_date=2026-11-01&end_date=2026-11-20')
        .set(headers)
        .expect(200)
    ).body.data.summary;
    const focus = (
      await request(t.server)
        .get('/v1/costs/focus?start_date=2026-11-01&end_date=2026-11-20')
        .set(headers)
        .expect(200)
    ).body.data.records as { BilledCost: string; x_EnergyKWh: string | null }[];
    const capacity = (await request(t.server).get('/v1/capacity').set(headers).expect(200)).body.data.summary;
    return {
      cost: detail.cost,
      idle_cost: detail.idle_cost,
      total_cost: stats.total_cost,
      stats_idle_cost: stats.idle_cost,
      focus: focus.map((record) => record.BilledCost),
      capacity_idle_cost: capacity.idle_cost,
      focus_energy: focus.map((record) => record.x_EnergyKWh),
    };
  };

  it('keeps every cost, and the idle cost of the lifetime average, when the samples week is dropped', async () => {
    // 25.50 × (1 − 25 % utilization) = 19.125, rounded once.
    const { focus_energy: energy, ...before } = await figures();
    // Four readings of 300 W an hour apart, each held 120 s (the cap): two in each record.
    expect(energy).toEqual(['0.020000', '0.020000']);
    expect(before).toEqual({
      cost: '25.50',
      idle_cost: '19.13',
      total_cost: '25.50',
      stats_idle_cost: '19.13',
      focus: ['10.00', '15.50'],
      // Capacity counts the half second: 2 × (2 h × 2.50 + 2.5 h 0.5 s × 3.10) × 75 % = 19.1256…
      capacity_idle_cost: '19.13',
    });
    const pruned = await pruneSamples(t.dataSource, new Date('2026-11-16T00:00:00Z'));
    expect(pruned.partitions.length).toBeGreaterThan(0);
    const [{ count }] = await t.dataSource.query('SELECT count(*)::int AS count FROM metric_samples');
    expect(count).toBe(0);
    // Energy is read from the stored readings: with them gone it is unknown, not 0.
    expect(await figures()).toEqual({ ...before, focus_energy: [null, null] });
  });
});
