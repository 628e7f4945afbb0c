import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type SampleSeed,
  writeAs,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

const MINUTE = 60_000;

/** `count` readings of `watts` from `from`, `step` apart. */
function readings(
  workloadId: string,
  from: string,
  count: number,
  watts: number,
  step = MINUTE,
): SampleSeed[] {
  return Array.from({ length: count }, (_, index) => ({
    workloadId,
    at: new Date(Date.parse(from) + index * step),
    powerUsage: watts,
  }));
}

describe('energy_kwh and carbon_kg of workloads', () => {
  let t: TestApp;
  let org: string;
  let admin: Record<string, string>;
  let member: Record<string, string>;

  const detail = async (workloadId: string, headers = admin) =>
    (await request(t.server).get(`/v1/workloads/${workloadId}`).set(headers).expect(200)).body.data;

  beforeAll(async () => {
    t = await createTestApp();
    org = await seedOrganization(t.dataSource, { initiatives: ['init-a', 'init-b'] });
    const finished = (workloadId: string, from: string, to: string, clusterId = 'c-grid') => ({
      workloadId,
      status: 'completed' as const,
      clusterId,
      submittedAt: from,
      startedAt: from,
      completedAt: to,
    });
    await insertWorkloads(t.dataSource, org, [
      finished('wl-hour', '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z'),
      finished('wl-gap', '2026-11-20T08:00:00Z', '2026-11-20T08:12:00Z'),
      finished('wl-carbon', '2026-11-20T10:00:00Z', '2026-11-20T11:00:00Z'),
      finished('wl-dark', '2026-11-20T08:00:00Z', '2026-11-20T08:30:00Z', 'c-unknown'),
      {
        ...finished('wl-other-team', '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z'),
        initiativeId: 'init-b',
      },
      {
        workloadId: 'wl-running',
        status: 'running',
        clusterId: 'c-grid',
        submittedAt: '2026-11-20T12:00:00Z',
        startedAt: '2026-11-20T12:00:00Z',
      },
      finished('wl-unsampled', '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z'),
    ]);
    await writeAs(
      t.dataSource,
      `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-grid', '2026-11-20T00:00:00Z', '2026-11-20T10:30:00Z', 300, 1.2),
              ($1, 'c-grid', '2026-11-20T10:30:00Z', NULL, 500, 1)`,
      [org],
    );
    await insertSamples(t.dataSource, org, [
      ...readings('wl-hour', '2026-11-20T08:00:00Z', 60, 300),
      // Two readings, ten minutes without one, two more: the gap counts for the 120 s cap only.
      ...readings('wl-gap', '2026-11-20T08:00:00Z', 2, 600),
      ...readings('wl-gap', '2026-11-20T08:11:00Z', 2, 600),
      ...readings('wl-carbon', '2026-11-20T10:00:00Z', 60, 1000),
      ...readings('wl-dark', '2026-11-20T08:00:00Z', 30, 200),
      ...readings('wl-other-team', '2026-11-20T08:00:00Z', 60, 300),
      ...readings('wl-running', '2026-11-20T12:00:00Z', 3, 100),
    ]);
    admin = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
    member = authHeaders(
      await createApiToken(t.dataSource, org, { role: 'MEMBER', initiativeIds: ['init-a'] }),
      org,
    );
  });

  afterAll(() => t.close());

  it("holds 60 readings of 300 W a minute apart over an hour's run: 0.3 kWh", async () => {
    // 59 parts of 60 s, and the last reading held until completed_at: 300 W × 3600 s.
    const body = await detail('wl-hour');
    expect(body.energy_kwh).toBe(0.3);
    // All of it before 10:30, at 300 g/kWh × PUE 1.2: 0.3 × 360 g.
    expect(body.carbon_kg).toBe(0.108);
  });

  it('counts a ten-minute gap in the readings for the 120 s cap only', async () => {
    // 60 s + 120 s (not 600 s) + 60 s at 600 W; the last reading is at completed_at.
    expect((await detail('wl-gap')).energy_kwh).toBe(0.04);
  });

  it('weighs each reading at the intensity of its time, across a change mid-run', async () => {
    // 1 kWh: the first half hour at 300 g/kWh × 1.2 (180 g), the second at 500 g/kWh (250 g).
    const body = await detail('wl-carbon');
    expect(body.energy_kwh).toBe(1);
    expect(body.carbon_kg).toBe(0.43);
  });

  it('has energy without carbon where no intensity is known, and neither without samples', async () => {
    // 29 parts of 60 s and the last held 60 s to completed_at: 200 W × 1800 s.
    expect(await detail('wl-dark')).toMatchObject({ energy_kwh: 0.1, carbon_kg: null });
    expect(await detail('wl-unsampled')).toMatchObject({ energy_kwh: null, carbon_kg: null });
  });

  it("holds a running workload's last reading for nothing until the next one", async () => {
    // Two parts of 60 s at 100 W: 12 kJ.
    expect(await detail('wl-running')).toMatchObject({ energy_kwh: 0.0033, carbon_kg: 0.0017 });
  });

  it('sums the statistics: carbon of the covered energy, and the uncovered energy beside it', async () => {
    const range = { start_date: '2026-11-20', end_date: '2026-11-21' };
    const stats = async (query: Record<string, string>, headers = admin) =>
      (await request(t.server).get('/v1/workloads/stats').query(query).set(headers).expect(200)).body.data;
    const energy = (figures: Record<string, unknown>) => [
      figures.total_energy_kwh,
      figures.total_carbon_kg,
      figures.uncovered_energy_kwh,
    ];
    // 0.3 + 0.04 + 1 + 0.1 (no intensity) + 0.3 (init-b) + 12 kJ so far of the running one, in kWh;
    // carbon: 0.108 + 0.0144 + 0.43 + 0.108 + 12 kJ at 500 g/kWh, rounded once.
    const all = await stats(range);
    expect(energy(all.summary)).toEqual([1.7433, 0.6621, 0.1]);
    const byTeam = await stats({ ...range, group_by: 'initiative_id' });
    expect(
      byTeam.grouped.map((group: Record<string, unknown>) => [group.initiative_id, ...energy(group)]),
    ).toEqual([
      ['init-a', 1.4433, 0.5541, 0.1],
      ['init-b', 0.3, 0.108, 0],
    ]);
    const byCluster = await stats({ ...range, group_by: 'cluster_id' });
    expect(
      byCluster.grouped.map((group: Record<string, unknown>) => [group.cluster_id, ...energy(group)]),
    ).toEqual([
      ['c-grid', 1.6433, 0.6621, 0],
      ['c-unknown', 0.1, 0, 0.1],
    ]);
    const mine = await stats({ ...range, interval: 'hour' }, member);
    expect(energy(mine.summary)).toEqual([1.4433, 0.5541, 0.1]);
    // Each workload counts in the hour it was submitted: 08:00 (hour, gap, dark), 10:00 and 12:00.
    expect(
      mine.timeline
        .filter((bucket: { total_workloads: number }) => bucket.total_workloads > 0)
        .map((bucket: Record<string, unknown>) => [bucket.bucket_start, ...energy(bucket)]),
    ).toEqual([
      ['2026-11-20T08:00:00.000Z', 0.44, 0.1224, 0.1],
      ['2026-11-20T10:00:00.000Z', 1, 0.43, 0],
      ['2026-11-20T12:00:00.000Z', 0.0033, 0.0017, 0],
    ]);
  });

  it('follows a carbon intensity written after the readings', async () => {
    await writeAs(
      t.dataSource,
      `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-unknown', '2026-11-20T08:15:00Z', NULL, 100, 1)`,
      [org],
    );
    // Half of the readings are still uncovered.
    expect(await detail('wl-dark')).toMatchObject({ energy_kwh: 0.1, carbon_kg: null });
    await writeAs(
      t.dataSource,
      `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
       VALUES ($1, 'c-unknown', '2026-11-20T08:00:00Z', '2026-11-20T08:15:00Z', 200, 1)`,
      [org],
    );
    // 0.05 kWh at 200 g/kWh and 0.05 kWh at 100 g/kWh.
    expect(await detail('wl-dark')).toMatchObject({ energy_kwh: 0.1, carbon_kg: 0.015 });
  });

  it('ranks by energy_kwh: workloads with samples, the running one by its samples so far', async () => {
    const ranked = async (query: Record<string, string>, headers = admin) => {
      const { body } = await request(t.server)
        .get('/v1/workloads/metrics')
        .query({ sort_by: 'energy_kwh', ...query })
        .set(headers)
        .expect(200);
      return {
        page: body.data.workloads.map(
          (w: { workload_id: string; energy_kwh: { avg: number; current: number } }) => [
            w.workload_id,
            w.energy_kwh.avg,
            w.energy_kwh.current,
          ],
        ),
        average: body.data.scope_average.energy_kwh,
        total: body.metadata.total_count,
      };
    };
    expect(await ranked({})).toEqual({
      page: [
        ['wl-carbon', 1, 1],
        ['wl-hour', 0.3, 0.3],
        ['wl-other-team', 0.3, 0.3],
        ['wl-dark', 0.1, 0.1],
        ['wl-gap', 0.04, 0.04],
        ['wl-running', 0.0033, 0.0033],
      ],
      // (1 + 0.3 + 0.3 + 0.1 + 0.04 + 12 kJ) ÷ 6, rounded once.
      average: 0.2906,
      total: 6,
    });
    expect(await ranked({ order: 'asc', limit: '2' }, member)).toEqual({
      page: [
        ['wl-running', 0.0033, 0.0033],
        ['wl-gap', 0.04, 0.04],
      ],
      average: 0.2887,
      total: 5,
    });
    expect(await ranked({ cluster_id: 'c-unknown' })).toEqual({
      page: [['wl-dark', 0.1, 0.1]],
      average: 0.1,
      total: 1,
    });
    expect(await ranked({ status: 'running' })).toEqual({
      page: [['wl-running', 0.0033, 0.0033]],
      average: 0.0033,
      total: 1,
    });
  });

  it("spreads each run's energy over its GPU-time in capacity: the part inside the period counts", async () => {
    const capacity = async (organizationId: string, headers: Record<string, string>) =>
      (await request(t.server).get('/v1/capacity').set(headers).expect(200)).body.data;
    // The whole spec's organization: every run inside its period, the running one with its 12 kJ so far.
    const all = await capacity(org, admin);
    expect(all.summary.total_energy_kwh).toBe(1.7433);
    expect(
      all.initiatives.map((entry: { initiative_id: string; total_energy_kwh: number }) => [
        entry.initiative_id,
        entry.total_energy_kwh,
      ]),
    ).toEqual([
      ['init-a', 1.4433],
      ['init-b', 0.3],
    ]);
    expect((await capacity(org, member)).summary.total_energy_kwh).toBe(1.4433);

    // A period that starts half-way through a run of 0.3 kWh on two GPUs: half of its GPU-time, half of its energy.
    const straddled = await seedOrganization(t.dataSource, {
      budgetPeriodStart: '2026-11-20T08:30:00Z',
      pools: [{ poolId: 'h100', instanceTypes: ['p5.48xlarge'] }],
    });
    await insertWorkloads(t.dataSource, straddled, [
      {
        workloadId: 'wl-straddling',
        status: 'completed',
        gpuCount: 2,
        submittedAt: '2026-11-20T08:00:00Z',
        startedAt: '2026-11-20T08:00:00Z',
        completedAt: '2026-11-20T09:00:00Z',
      },
    ]);
    await insertSamples(t.dataSource, straddled, readings('wl-straddling', '2026-11-20T08:00:00Z', 60, 300));
    const headers = authHeaders(
      await createApiToken(t.dataSource, straddled, { role: 'ORG_ADMIN' }),
      straddled,
    );
    const half = await capacity(straddled, headers);
    expect([half.summary.total_used_gpu_hours, half.summary.total_energy_kwh]).toEqual([1, 0.15]);
    expect(
      half.pools.map((pool: { pool_id: string; total_energy_kwh: number }) => [
        pool.pool_id,
        pool.total_energy_kwh,
      ]),
    ).toEqual([['h100', 0.15]]);
  });

  it('answers a MEMBER the same figures in the list, the detail and the CSV, only in scope', async () => {
    const { body } = await request(t.server).get('/v1/workloads?limit=100').set(member).expect(200);
    const listed = Object.fromEntries(
      body.data.workloads.map((w: { workload_id: string; energy_kwh: number; carbon_kg: number }) => [
        w.workload_id,
        [w.energy_kwh, w.carbon_kg],
      ]),
    );
    expect(listed).toEqual({
      'wl-hour': [0.3, 0.108],
      'wl-gap': [0.04, 0.0144],
      'wl-carbon': [1, 0.43],
      'wl-dark': [0.1, 0.015],
      'wl-running': [0.0033, 0.0017],
      'wl-unsampled': [null, null],
    });
    expect((await detail('wl-hour', member)).energy_kwh).toBe(0.3);
    await request(t.server).get('/v1/workloads/wl-other-team').set(member).expect(404);

    const csv = await request(t.server)
      .get('/v1/workloads')
      .set(member)
      .set('Accept', 'text/csv')
      .expect(200);
    const [header, ...lines] = csv.text.trim().split('\r\n');
    const columns = header.split(',');
    const rows = lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [columns[i], v])));
    expect(Object.fromEntries(rows.map((row) => [row.workload_id, [row.energy_kwh, row.carbon_kg]]))).toEqual(
      {
        'wl-hour': ['0.3', '0.108'],
        'wl-gap': ['0.04', '0.0144'],
        'wl-carbon': ['1', '0.43'],
        'wl-dark': ['0.1', '0.015'],
        'wl-running': ['0.0033', '0.0017'],
        'wl-unsampled': ['', ''],
      },
    );
  });
});
