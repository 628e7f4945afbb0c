import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type WorkloadSeed,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

const HOUR = 3_600_000;
const TRICKY_NAMES = [
  'plain',
  'comma, inside',
  'quote " inside',
  'line\nbreak',
  '=HYPERLINK("x")',
  '-minus',
  ' =spaced',
  '\u00a0=no-break',
  '\uff1d1+2',
  'ünïcödé',
  '@sum(1)',
]; // 11 names: coprime with the status cycle of 5, so each name has completed rows

/** What the export makes of a name a spreadsheet would run as a formula. */
function defused(name: string): string {
  return /^[\s\u00a0]*[=+\-@\uff1d]/.test(name) ? `'${name}` : name;
}

interface QueueFields {
  queue_wait: Record<string, number | null>;
  pending: Record<string, number | string | null>;
}

/** An object's figures as the CSV writes them: `prefix_key` columns, null as an empty cell. */
function cellsOf(prefix: string, figures: Record<string, number | string | null>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(figures).map(([key, value]) => [`${prefix}_${key}`, value === null ? '' : String(value)]),
  );
}

function parseCsv(text: string): Record<string, string>[] {
  return parse<Record<string, string>>(text, { columns: true, record_delimiter: '\r\n' });
}

/** Every page of the JSON list, through next_token. */
async function allPages(t: TestApp, headers: Record<string, string>, query: string) {
  const items: Record<string, unknown>[] = [];
  let token: string | null = null;
  let total = 0;
  do {
    const suffix: string = token ? `&next_token=${encodeURIComponent(token)}` : '';
    const { body } = await request(t.server)
      .get(`/v1/workloads?limit=100${query}${suffix}`)
      .set(headers)
      .expect(200);
    items.push(...body.data.workloads);
    total = body.metadata.total_count;
    token = body.metadata.next_token;
  } while (token);
  return { items, total };
}

describe('Accept: text/csv', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;
  let memberOfB: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp();
    orgId = await seedOrganization(t.dataSource, {
      pools: [{ poolId: 'h100', instanceTypes: ['p5.48xlarge'] }],
      allocations: [{ initiativeId: 'init-a', poolId: 'h100', allocatedGpuHours: 400 }],
    });
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    memberOfB = authHeaders(
      await createApiToken(t.dataSource, orgId, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      orgId,
    );
    const now = Date.now();
    // Running workloads' figures grow with the clock: the JSON and CSV answers compared must share one now.
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(now));
    const seeds: WorkloadSeed[] = Array.from({ length: 260 }, (_, index) => ({
      workloadId: `csv-${String(index).padStart(4, '0')}`,
      name: TRICKY_NAMES[index % TRICKY_NAMES.length],
      initiativeId: index % 3 === 0 ? 'init-b' : 'init-a',
      status: index % 5 === 0 ? 'running' : 'completed',
      gpuCount: 1 + (index % 4),
      submittedAt: new Date(now - 3 * HOUR - index * 60_000),
    }));
    await insertWorkloads(t.dataSource, orgId, seeds);
    await insertSamples(
      t.dataSource,
      orgId,
      seeds.slice(0, 30).map((seed, index) => ({
        workloadId: seed.workloadId!,
        at: new Date(now - 2 * HOUR),
        gpuUtilization: 10 + index,
      })),
    );
  });

  afterAll(() => t.close());

  it('streams the whole filtered list, as many rows as total_count, with the JSON values', async () => {
    const response = await request(t.server)
      .get('/v1/workloads?status=completed')
      .set(admin)
      .set('Accept', 'text/csv')
      .expect(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.headers['content-disposition']).toBe('attachment; filename="workloads.csv"');
    expect(response.headers['x-request-id']).toBeDefined();
    expect(response.text.startsWith('workload_id,name,status,')).toBe(true);
    expect(response.text.endsWith('\r\n')).toBe(true);
    const rows = parseCsv(response.text);
    const json = await allPages(t, admin, '&status=completed');
    expect(json.total).toBeGreaterThan(100);
    expect(rows).toHaveLength(json.total);
    expect(rows.map((row) => row.workload_id)).toEqual(json.items.map((item) => item.workload_id));
    rows.forEach((row, index) => {
      const item = json.items[index];
      expect(row).toEqual({
        workload_id: item.workload_id,
        name: defused(item.name as string),
        status: item.status,
        submitted_by: item.submitted_by,
        initiative_id: item.initiative_id,
        instance_type: item.instance_type,
        gpu_count: String(item.gpu_count),
        gpu_share: String(item.gpu_share),
        gpu_sharing_mode: '',
        gpu_sharing_profile: '',
        gpu_sharing_replicas: '',
        cluster_id: item.cluster_id,
        submitted_at: item.submitted_at,
        started_at: item.started_at ?? '',
        wait_seconds: String(item.wait_seconds),
        cost: item.cost ?? '',
        energy_kwh: item.energy_kwh === null ? '' : String(item.energy_kwh as number),
        carbon_kg: item.carbon_kg === null ? '' : String(item.carbon_kg as number),
      });
    });
    expect(new Set(rows.map((row) => row.name))).toEqual(new Set(TRICKY_NAMES.map(defused)));
  });

  it("keeps a MEMBER's export to its initiatives", async () => {
    const response = await request(t.server)
      .get('/v1/workloads')
      .set(memberOfB)
      .set('Accept', 'text/csv')
      .expect(200);
    const rows = parseCsv(response.text);
    const json = await allPages(t, memberOfB, '');
    expect(rows).toHaveLength(json.total);
    expect(new Set(rows.map((row) => row.initiative_id))).toEqual(new Set(['init-b']));
  });

  it('answers errors as JSON envelopes, and JSON unless CSV is preferred', async () => {
    const bad = await request(t.server)
      .get('/v1/workloads?status=bogus')
      .set(admin)
      .set('Accept', 'text/csv')
      .expect(400);
    expect(bad.headers['content-type']).toMatch(/^application\/json/);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    for (const accept of ['*/*', 'application/json, text/csv;q=0.5', 'image/png']) {
      const response = await request(t.server)
        .get('/v1/capacity')
        .set(admin)
        .set('Accept', accept)
        .expect(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
    }
    for (const accept of [
      'application/json;q=0.4, text/csv',
      'text/csv; charset=utf-8',
      'text/csv;header=present',
      'application/json;q=0.4, text/csv; charset="UTF-8"; q=0.9',
    ]) {
      const preferred = await request(t.server)
        .get('/v1/capacity')
        .set(admin)
        .set('Accept', accept)
        .expect(200);
      expect({ accept, type: preferred.headers['content-type'] }).toEqual({
        accept,
        type: 'text/csv; charset=utf-8',
      });
    }
    const json = await request(t.server)
      .get('/v1/capacity')
      .set(admin)
      .set('Accept', 'text/csv;q=0.3, application/json;charset=utf-8')
      .expect(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
  });

  it('exports stats groups and timeline rows', async () => {
    const grouped = await request(t.server)
      .get('/v1/workloads/stats?group_by=initiative_id')
      .set(admin)
      .expect(200);
    const csv = parseCsv(
      (
        await request(t.server)
          .get('/v1/workloads/stats?group_by=initiative_id')
          .set(admin)
          .set('Accept', 'text/csv')
      ).text,
    );
    expect(csv).toEqual(
      grouped.body.data.grouped.map((group: Record<string, number | string | null> & QueueFields) => ({
        initiative_id: group.initiative_id,
        workload_count: String(group.workload_count),
        gpu_hours: String(group.gpu_hours),
        total_cost: group.total_cost ?? '',
        unpriced_gpu_hours: String(group.unpriced_gpu_hours),
        idle_cost: group.idle_cost ?? '',
        total_energy_kwh: String(group.total_energy_kwh),
        total_carbon_kg: String(group.total_carbon_kg),
        uncovered_energy_kwh: String(group.uncovered_energy_kwh),
        success_rate: group.success_rate === null ? '' : String(group.success_rate),
        sampled_gpu_hours: String(group.sampled_gpu_hours),
        idle_gpu_hours: String(group.idle_gpu_hours),
        gpu_efficiency: group.gpu_efficiency === null ? '' : String(group.gpu_efficiency),
        // Nested objects as parent_child columns.
        ...cellsOf('queue_wait', group.queue_wait),
        ...cellsOf('pending', group.pending),
      })),
    );
    const query = '/v1/workloads/stats?time_range=today&interval=hour&group_by=initiative_id';
    const timeline = (await request(t.server).get(query).set(admin).expect(200)).body.data.timeline;
    const rows = parseCsv((await request(t.server).get(query).set(admin).set('Accept', 'text/csv')).text);
    const groups = timeline.flatMap((bucket: { grouped: unknown[] }) => bucket.grouped);
    expect(rows).toHaveLength(groups.length);
    expect(rows.map((row) => Number(row.workload_count)).reduce((a, b) => a + b, 0)).toBe(
      groups.reduce((sum: number, group: { workload_count: number }) => sum + group.workload_count, 0),
    );
  });

  it('exports the ranked page and capacity entries', async () => {
    const query = '/v1/workloads/metrics?sort_by=gpu_utilization&limit=25';
    const ranked = (await request(t.server).get(query).set(admin).expect(200)).body.data.workloads;
    const rankedRows = parseCsv(
      (await request(t.server).get(query).set(admin).set('Accept', 'text/csv')).text,
    );
    expect(rankedRows).toHaveLength(25);
    expect(rankedRows[0]).toEqual({
      workload_id: ranked[0].workload_id,
      name: defused(ranked[0].name),
      initiative_id: ranked[0].initiative_id,
      gpu_count: String(ranked[0].gpu_count),
      gpu_share: String(ranked[0].gpu_share),
      gpu_sharing_mode: '',
      gpu_sharing_profile: '',
      gpu_sharing_replicas: '',
      gpu_utilization_avg: String(ranked[0].gpu_utilization.avg),
      gpu_utilization_current: String(ranked[0].gpu_utilization.current),
    });
    const capacity = (await request(t.server).get('/v1/capacity').set(admin).expect(200)).body.data;
    const capacityRows = parseCsv(
      (await request(t.server).get('/v1/capacity').set(admin).set('Accept', 'text/csv')).text,
    );
    expect(capacityRows.map((row) => `${row.kind}:${row.id}`)).toEqual([
      `summary:${orgId}`,
      ...capacity.pools.map((pool: { pool_id: string }) => `pool:${pool.pool_id}`),
      ...capacity.initiatives.map(
        (initiative: { initiative_id: string }) => `initiative:${initiative.initiative_id}`,
      ),
    ]);
    expect(Number(capacityRows[1].used_gpu_hours)).toBe(capacity.pools[0].used_gpu_hours);
    const daily = parseCsv(
      (await request(t.server).get('/v1/capacity?interval=day').set(admin).set('Accept', 'text/csv')).text,
    );
    expect(new Set(daily.map((row) => row.kind))).toEqual(new Set(['summary', 'pool', 'initiative']));
    expect(Object.keys(daily[0])).toEqual([
      'kind',
      'id',
      'date',
      'used_gpu_hours',
      'cumulative_used_gpu_hours',
      'remaining_gpu_hours',
    ]);
  });
  it('exports one capacity level per table with level, each with only its own columns', async () => {
    const capacity = (await request(t.server).get('/v1/capacity').set(admin).expect(200)).body.data;
    // The JSON answer is the same with the parameter: it only shapes the export.
    const withLevel = await request(t.server).get('/v1/capacity?level=pools').set(admin).expect(200);
    expect(withLevel.body.data).toEqual(capacity);
    const exported = async (query: string) => {
      const response = await request(t.server)
        .get(`/v1/capacity?${query}`)
        .set(admin)
        .set('Accept', 'text/csv')
        .expect(200);
      return { header: response.text.split('\r\n')[0].split(','), rows: parseCsv(response.text) };
    };
    type Figures = Record<string, string | number | null>;
    const cellOf = (value: string | number | null) => (value === null ? '' : String(value));
    const cellsOf = (figures: Figures, columns: string[]) =>
      Object.fromEntries(columns.map((column) => [column, cellOf(figures[column])]));
    const BUDGET = [
      'allocated_gpu_hours',
      'used_gpu_hours',
      'remaining_gpu_hours',
      'burn_rate_gpu_hours_per_day',
      'projected_exhaustion_date',
      'budget_status',
      'sampled_gpu_hours',
      'idle_gpu_hours',
      'gpu_efficiency',
      'total_energy_kwh',
      'used_cost',
      'idle_cost',
      'unpriced_gpu_hours',
      'allocated_cost',
    ];
    const SUMMARY = [
      'total_allocated_gpu_hours',
      'total_used_gpu_hours',
      'total_remaining_gpu_hours',
      'burn_rate_gpu_hours_per_day',
      'projected_exhaustion_date',
      'budget_status',
      'sampled_gpu_hours',
      'idle_gpu_hours',
      'gpu_efficiency',
      'total_energy_kwh',
      'total_used_cost',
      'idle_cost',
      'unpriced_gpu_hours',
      'total_allocated_cost',
      'current_active_gpus',
      'current_active_gpu_share',
    ];

    const summary = await exported('level=summary');
    expect(summary.header).toEqual(['organization_id', ...SUMMARY]);
    expect(summary.rows).toEqual([{ organization_id: orgId, ...cellsOf(capacity.summary, SUMMARY) }]);
    expect(summary.rows[0]).toMatchObject({ total_allocated_gpu_hours: '400', total_used_cost: '' });

    const pools = await exported('level=pools');
    const POOL = [...BUDGET, 'pending_gpu_share', 'queue_wait_p95_seconds'];
    expect(pools.header).toEqual(['pool_id', 'name', ...POOL, 'instance_types']);
    expect(pools.rows).toEqual(
      capacity.pools.map((pool: Figures & { instance_types: string[] }) => ({
        pool_id: pool.pool_id,
        name: pool.name,
        ...cellsOf(pool, POOL),
        instance_types: pool.instance_types.join(' '),
      })),
    );
    expect(pools.rows[0]).toMatchObject({
      pool_id: 'h100',
      name: 'Pool h100',
      allocated_gpu_hours: '400',
      instance_types: 'p5.48xlarge',
    });

    const initiatives = await exported('level=initiatives');
    expect(initiatives.header).toEqual(['initiative_id', 'name', ...BUDGET]);
    expect(initiatives.rows).toEqual(
      capacity.initiatives.map((initiative: Figures) => ({
        initiative_id: initiative.initiative_id,
        name: initiative.name,
        ...cellsOf(initiative, BUDGET),
      })),
    );
    expect(initiatives.rows.map((row) => [row.initiative_id, row.allocated_gpu_hours])).toEqual([
      ['init-a', '400'],
      ['init-b', '0'],
    ]);

    // With interval=day: that level's burn-down, a row per day of each.
    const daily = (await request(t.server).get('/v1/capacity?interval=day').set(admin).expect(200)).body.data;
    const days = await exported('level=initiatives&interval=day');
    const DAY = ['date', 'used_gpu_hours', 'cumulative_used_gpu_hours', 'remaining_gpu_hours'];
    expect(days.header).toEqual(['initiative_id', ...DAY]);
    expect(days.rows).toEqual(
      daily.initiatives.flatMap((initiative: { initiative_id: string; daily: Figures[] }) =>
        initiative.daily.map((day) => ({ initiative_id: initiative.initiative_id, ...cellsOf(day, DAY) })),
      ),
    );

    const bad = await request(t.server)
      .get('/v1/capacity?level=teams')
      .set(admin)
      .set('Accept', 'text/csv')
      .expect(400);
    expect(bad.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'level', location: 'query' })],
    });
  });
});

/**
 * A row the service cannot format (a submitted_at of 'infinity', written past the importer, which
 * refuses it) fails the export's first page: nothing has been sent yet, so the answer is still the
 * contract's error body with the request id, not a connection closed with no reply.
 */
describe('Accept: text/csv, first page failing', () => {
  let t: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp();
    const orgId = await seedOrganization(t.dataSource);
    await insertWorkloads(t.dataSource, orgId, [{ workloadId: 'wl-endless', status: 'pending' }]);
    await t.dataSource.transaction(async (manager) => {
      await manager.query('SELECT gpucap_lock_organizations($1::text[])', [[orgId]]);
      await manager.query(
        `UPDATE workloads SET submitted_at = 'infinity' WHERE organization_id = $1 AND workload_id = 'wl-endless'`,
        [orgId],
      );
    });
    headers = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  });

  afterAll(() => t.close());

  it('answers 500 with the error envelope, as the JSON list does', async () => {
    const json = await request(t.server).get('/v1/workloads').set(headers).expect(500);
    const csv = await request(t.server)
      .get('/v1/workloads')
      .set(headers)
      .set('Accept', 'text/csv')
      .set('X-Request-Id', 'csv-first-page')
      .expect(500);
    expect(csv.headers['content-type']).toMatch(/^application\/json/);
    expect(csv.headers['content-disposition']).toBeUndefined();
    expect(csv.body).toEqual({ ...json.body, request_id: 'csv-first-page' });
    expect(csv.body.error.code).toBe('INTERNAL_ERROR');
  });
});
