import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { authHeaders, createApiToken, importDocument } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * One time basis for money: every endpoint charges the exact run, as capacity counts it. At 3,600
 * per GPU-hour a GPU-second costs 1.00, so a run ending 0.75 s into a second on 8 GPUs costs 6.00
 * more than its whole seconds: any endpoint still counting whole seconds misses by whole euros.
 * Every run lies inside one UTC day and one price period, so each workload is one FOCUS record and
 * every figure is exact in cents: they must agree to the cent, per workload, per cluster and in total.
 */

const NOW = Date.parse('2026-11-20T12:00:00Z');
const ORG = 'org-time-basis';
const RUNS = [
  {
    id: 'east-1',
    cluster: 'c-east',
    start: '2026-11-10T10:00:00Z',
    end: '2026-11-10T10:10:00.750Z',
    gpus: 8,
  },
  {
    id: 'east-2',
    cluster: 'c-east',
    start: '2026-11-11T09:00:00Z',
    end: '2026-11-11T09:00:30.250Z',
    gpus: 4,
  },
  {
    id: 'west-1',
    cluster: 'c-west',
    start: '2026-11-12T08:00:00Z',
    end: '2026-11-12T08:01:00.500Z',
    gpus: 2,
  },
];
/** The exact cost of a run: GPUs × seconds (to the millisecond) at 1.00 per GPU-second. */
const exactCost = (run: (typeof RUNS)[number]) =>
  ((run.gpus * (Date.parse(run.end) - Date.parse(run.start))) / 1000).toFixed(2);
const total = (runs: typeof RUNS) =>
  (runs.reduce((sum, run) => sum + Math.round(Number(exactCost(run)) * 100), 0) / 100).toFixed(2);

describe('cost: one time basis everywhere', () => {
  let t: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    await importDocument(t.dataSource, {
      organizations: [
        {
          organization_id: ORG,
          name: 'Time basis',
          budget_period_start: '2026-11-01T00:00:00Z',
          budget_period_end: '2026-12-01T00:00:00Z',
        },
      ],
      initiatives: [{ organization_id: ORG, initiative_id: 'vision', name: 'Vision' }],
      pools: [{ organization_id: ORG, pool_id: 'p5', name: 'P5', instance_types: ['p5.48xlarge'] }],
      prices: [
        {
          organization_id: ORG,
          instance_type: 'p5.48xlarge',
          currency: 'EUR',
          pricing_model: 'on_demand',
          price_per_gpu_hour: '3600',
          effective_from: '2026-10-01T00:00:00Z',
          effective_to: null,
        },
      ],
      workloads: RUNS.map((run) => ({
        organization_id: ORG,
        workload_id: run.id,
        initiative_id: 'vision',
        name: 'job',
        status: 'completed',
        submitted_by: 'ada@example.com',
        instance_type: 'p5.48xlarge',
        gpu_count: run.gpus,
        is_managed: true,
        cluster_id: run.cluster,
        namespace: 'ml',
        submitted_at: run.start,
        started_at: run.start,
        completed_at: run.end,
        exit_code: 0,
      })),
    });
    headers = authHeaders(await createApiToken(t.dataSource, ORG, { role: 'ORG_ADMIN' }), ORG);
  });

  afterAll(async () => {
    await t.close();
  });

  const get = async (path: string) => (await request(t.server).get(path).set(headers).expect(200)).body;

  it('costs each workload on its exact run, in the detail, the list and the ranking', async () => {
    for (const run of RUNS) {
      expect([run.id, (await get(`/v1/workloads/${run.id}`)).data.cost]).toEqual([run.id, exactCost(run)]);
    }
    const list = (await get('/v1/workloads?limit=10')).data.workloads as {
      workload_id: string;
      cost: string;
    }[];
    expect(Object.fromEntries(list.map((w) => [w.workload_id, w.cost]))).toEqual(
      Object.fromEntries(RUNS.map((run) => [run.id, exactCost(run)])),
    );
    const ranked = (await get('/v1/workloads/metrics?sort_by=cost&limit=10')).data.workloads as {
      workload_id: string;
      cost: { avg: string };
    }[];
    expect(ranked.map((w) => [w.workload_id, w.cost.avg])).toEqual(
      [...RUNS]
        .sort((a, b) => Number(exactCost(b)) - Number(exactCost(a)))
        .map((run) => [run.id, exactCost(run)]),
    );
  });

  it('adds up to the same total in statistics, FOCUS and capacity, per cluster too', async () => {
    const range = 'start_date=2026-11-01&end_date=2026-11-21';
    expect((await get(`/v1/workloads/stats?${range}`)).data.summary.total_cost).toBe(total(RUNS));
    const focus = (await get(`/v1/costs/focus?${range}`)).data.records as {
      ResourceId: string;
      BilledCost: string;
    }[];
    expect(focus.map((record) => [record.ResourceId, record.BilledCost])).toEqual(
      RUNS.map((run) => [run.id, exactCost(run)]),
    );
    expect((await get('/v1/capacity')).data.summary.total_used_cost).toBe(total(RUNS));
    for (const cluster of ['c-east', 'c-west']) {
      const mine = RUNS.filter((run) => run.cluster === cluster);
      const stats = await get(`/v1/workloads/stats?${range}&cluster_id=${cluster}`);
      const capacity = await get(`/v1/capacity?cluster_id=${cluster}`);
      expect([cluster, stats.data.summary.total_cost, capacity.data.summary.total_used_cost]).toEqual([
        cluster,
        total(mine),
        total(mine),
      ]);
      expect(capacity.data.pools.map((pool: { used_cost: string }) => pool.used_cost)).toEqual([total(mine)]);
    }
  });

  it('re-costs the stored runs a price import touches, says how many, and every figure follows', async () => {
    // From 2026-11-11 a GPU-second costs 2.00: east-2 and west-1 run after it, east-1 before.
    const price = {
      organization_id: ORG,
      instance_type: 'p5.48xlarge',
      currency: 'EUR',
      pricing_model: 'on_demand',
    };
    const summary = await importDocument(t.dataSource, {
      prices: [
        {
          ...price,
          price_per_gpu_hour: '3600',
          effective_from: '2026-10-01T00:00:00Z',
          effective_to: '2026-11-11T00:00:00Z',
        },
        { ...price, price_per_gpu_hour: '7200', effective_from: '2026-11-11T00:00:00Z', effective_to: null },
      ],
    });
    expect(summary.recostedWorkloads).toBe(2);
    const doubled = (run: (typeof RUNS)[number]) =>
      run.id === 'east-1' ? exactCost(run) : (Number(exactCost(run)) * 2).toFixed(2);
    const ranked = (await get('/v1/workloads/metrics?sort_by=cost&limit=10')).data as {
      workloads: { workload_id: string; cost: { avg: string } }[];
      scope_average: { cost: string };
    };
    expect(ranked.workloads.map((w) => [w.workload_id, w.cost.avg])).toEqual(
      [...RUNS].sort((a, b) => Number(doubled(b)) - Number(doubled(a))).map((run) => [run.id, doubled(run)]),
    );
    const sum = RUNS.reduce((cents, run) => cents + Math.round(Number(doubled(run)) * 100), 0);
    expect(
      (await get('/v1/workloads/stats?start_date=2026-11-01&end_date=2026-11-21')).data.summary.total_cost,
    ).toBe((sum / 100).toFixed(2));
    const east = (await get('/v1/workloads/metrics?sort_by=cost&order=asc&cluster_id=c-east')).data
      .workloads as {
      workload_id: string;
      cost: { avg: string };
    }[];
    expect(east.map((w) => [w.workload_id, w.cost.avg])).toEqual([
      ['east-2', doubled(RUNS[1])],
      ['east-1', exactCost(RUNS[0])],
    ]);
    // The same file again changes nothing, and says so.
    expect(
      (
        await importDocument(t.dataSource, {
          prices: [
            {
              ...price,
              price_per_gpu_hour: '7200',
              effective_from: '2026-11-11T00:00:00Z',
              effective_to: null,
            },
          ],
        })
      ).recostedWorkloads,
    ).toBe(0);
  });
});
