import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  WorkloadRow,
  WorkloadSeed,
} from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const BASE = Date.parse('2026-11-01T00:00:00Z');
const MINUTE = 60_000;

/** 40 workloads over three initiatives, users and statuses, with ties on submitted_at. */
function seeds(): WorkloadSeed[] {
  const statuses = ['completed', 'running', 'failed', 'pending', 'cancelled'] as const;
  const list: WorkloadSeed[] = [];
  for (let index = 0; index < 40; index += 1) {
    // Every 4th group of workloads shares one instant, so the id decides their order.
    const minute = index < 6 ? 5 : index * 7;
    list.push({
      workloadId: `wl-${String(index).padStart(3, '0')}`,
      initiativeId: ['init-a', 'init-b', 'init-c'][index % 3],
      status: statuses[index % 5],
      submittedBy: ['alice@x.example', 'bob@x.example'][index % 2],
      isManaged: index % 4 !== 0,
      gpuCount: 1 + (index % 8),
      submittedAt: new Date(BASE + minute * MINUTE),
    });
  }
  return list;
}

function expectedOrder(rows: WorkloadRow[]): string[] {
  return [...rows]
    .sort(
      (left, right) =>
        right.submittedAt.getTime() - left.submittedAt.getTime() ||
        (right.workloadId < left.workloadId ? -1 : right.workloadId > left.workloadId ? 1 : 0),
    )
    .map((row) => row.workloadId);
}

describe('GET /v1/workloads', () => {
  let testApp: TestApp;
  let organizationId: string;
  let rows: WorkloadRow[];
  let admin: Record<string, string>;
  let member: Record<string, string>;
  let lead: Record<string, string>;
  let nobody: Record<string, string>;

  beforeAll(async () => {
    testApp = await createTestApp();
    organizationId = await seedOrganization(testApp.dataSource, {
      initiatives: ['init-a', 'init-b', 'init-c'],
    });
    rows = await insertWorkloads(testApp.dataSource, organizationId, seeds());
    const token = (role: 'ORG_ADMIN' | 'TEAM_LEAD' | 'MEMBER', initiativeIds: string[] = []) =>
      createApiToken(testApp.dataSource, organizationId, { role, initiativeIds });
    admin = authHeaders(await token('ORG_ADMIN'), organizationId);
    member = authHeaders(await token('MEMBER', ['init-a', 'init-b']), organizationId);
    lead = authHeaders(await token('TEAM_LEAD', ['init-c']), organizationId);
    nobody = authHeaders(await token('MEMBER', []), organizationId);
    // Another organization's workloads must never show up.
    const other = await seedOrganization(testApp.dataSource, { initiatives: ['init-a'] });
    await insertWorkloads(testApp.dataSource, other, [{ workloadId: 'wl-000', submittedAt: new Date(BASE) }]);
  });

  afterAll(async () => {
    await testApp.close();
  });

  const get = (headers: Record<string, string>, query: Record<string, string | number> = {}) =>
    request(testApp.server).get('/v1/workloads').query(query).set(headers);

  async function walk(headers: Record<string, string>, query: Record<string, string | number>) {
    const ids: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const response: request.Response = await get(
        headers,
        token ? { ...query, next_token: token } : query,
      ).expect(200);
      ids.push(...response.body.data.workloads.map((item: { workload_id: string }) => item.workload_id));
      token = response.body.metadata.next_token;
      pages += 1;
    } while (token && pages < 100);
    return { ids, pages };
  }

  it('returns summaries newest first, ties by workload_id descending, with exact fields', async () => {
    const response = await get(admin, { limit: 100 }).expect(200);
    expect(response.body.data.workloads.map((item: { workload_id: string }) => item.workload_id)).toEqual(
      expectedOrder(rows),
    );
    expect(response.body.metadata).toEqual({
      next_token: null,
      total_count: 40,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
      currency: null,
    });
    const pending = rows.find((row) => row.status === 'pending') as WorkloadRow;
    const item = response.body.data.workloads.find(
      (entry: { workload_id: string }) => entry.workload_id === pending.workloadId,
    );
    expect(item).toEqual({
      workload_id: pending.workloadId,
      name: 'training-job',
      status: 'pending',
      submitted_by: pending.submittedBy,
      initiative_id: pending.initiativeId,
      instance_type: 'p5.48xlarge',
      gpu_count: pending.gpuCount,
      gpu_share: pending.gpuCount,
      gpu_sharing: null,
      cluster_id: 'cluster-1',
      submitted_at: pending.submittedAt.toISOString(),
      started_at: null,
      // The wait so far, up to the instant the answer describes.
      wait_seconds: Math.floor(
        (Date.parse(response.body.metadata.as_of) - pending.submittedAt.getTime()) / 1000,
      ),
      // The organization has no price: cost unknown, never 0.
      cost: null,
      energy_kwh: null,
      carbon_kg: null,
    });
    const running = rows.find((row) => row.status === 'running') as WorkloadRow;
    const runningItem = response.body.data.workloads.find(
      (entry: { workload_id: string }) => entry.workload_id === running.workloadId,
    );
    expect(runningItem.started_at).toBe(running.startedAt?.toISOString());
  });

  it('orders the six workloads submitted at the same instant by id descending', async () => {
    const response = await get(admin, { limit: 100 }).expect(200);
    const tied = response.body.data.workloads
      .filter(
        (item: { submitted_at: string }) => item.submitted_at === new Date(BASE + 5 * MINUTE).toISOString(),
      )
      .map((item: { workload_id: string }) => item.workload_id);
    expect(tied).toEqual(['wl-005', 'wl-004', 'wl-003', 'wl-002', 'wl-001', 'wl-000']);
  });

  it.each([1, 3, 7, 20])('walks every page of size %i with no duplicate or gap', async (limit) => {
    const { ids, pages } = await walk(admin, { limit });
    expect(ids).toEqual(expectedOrder(rows));
    expect(pages).toBe(Math.ceil(40 / limit));
  });

  it('ends with next_token null on a full last page', async () => {
    const first = await get(admin, { limit: 20 }).expect(200);
    expect(first.body.metadata.next_token).toEqual(expect.any(String));
    const second = await get(admin, { limit: 20, next_token: first.body.metadata.next_token }).expect(200);
    expect(second.body.data.workloads).toHaveLength(20);
    expect(second.body.metadata).toEqual({
      next_token: null,
      total_count: 40,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
      currency: null,
    });
  });

  it('lets the limit change between pages', async () => {
    const first = await get(admin, { limit: 5 }).expect(200);
    const second = await get(admin, { limit: 10, next_token: first.body.metadata.next_token }).expect(200);
    expect(second.body.data.workloads.map((item: { workload_id: string }) => item.workload_id)).toEqual(
      expectedOrder(rows).slice(5, 15),
    );
  });

  const filterCases: [string, Record<string, string>, (row: WorkloadRow) => boolean][] = [
    ['initiative_id', { initiative_id: 'init-b' }, (row) => row.initiativeId === 'init-b'],
    ['status', { status: 'running' }, (row) => row.status === 'running'],
    ['submitted_by', { submitted_by: 'bob@x.example' }, (row) => row.submittedBy === 'bob@x.example'],
    ['is_managed=false', { is_managed: 'false' }, (row) => !row.isManaged],
    ['is_managed=true', { is_managed: 'true' }, (row) => row.isManaged],
    [
      'start_date inclusive',
      { start_date: new Date(BASE + 70 * MINUTE).toISOString() },
      (row) => row.submittedAt.getTime() >= BASE + 70 * MINUTE,
    ],
    [
      'end_date exclusive',
      { end_date: new Date(BASE + 70 * MINUTE).toISOString() },
      (row) => row.submittedAt.getTime() < BASE + 70 * MINUTE,
    ],
    ['organization_id', { organization_id: '' }, () => true],
    [
      'combined',
      {
        initiative_id: 'init-a',
        status: 'completed',
        is_managed: 'true',
        submitted_by: 'bob@x.example',
        start_date: '2026-11-01',
        end_date: '2026-11-02T00:00:00+00:00',
      },
      (row) =>
        row.initiativeId === 'init-a' &&
        row.status === 'completed' &&
        row.isManaged &&
        row.submittedBy === 'bob@x.example',
    ],
    [
      'status and dates',
      {
        status: 'failed',
        start_date: new Date(BASE + 35 * MINUTE).toISOString(),
        end_date: new Date(BASE + 210 * MINUTE).toISOString(),
      },
      (row) =>
        row.status === 'failed' &&
        row.submittedAt.getTime() >= BASE + 35 * MINUTE &&
        row.submittedAt.getTime() < BASE + 210 * MINUTE,
    ],
  ];

  it.each(filterCases)('filters by %s (all pages and the count)', async (_name, query, predicate) => {
    const filled = { ...query };
    if ('organization_id' in filled) filled.organization_id = organizationId;
    const expected = expectedOrder(rows.filter(predicate));
    expect(expected.length).toBeGreaterThan(0);
    const { ids } = await walk(admin, { ...filled, limit: 3 });
    expect(ids).toEqual(expected);
    const first = await get(admin, { ...filled, limit: 3 }).expect(200);
    expect(first.body.metadata.total_count).toBe(expected.length);
  });

  it('treats start_date == end_date as empty and start after end as a 400', async () => {
    const empty = await get(admin, { start_date: '2026-11-01', end_date: '2026-11-01' }).expect(200);
    expect(empty.body).toMatchObject({
      data: { workloads: [] },
      metadata: { next_token: null, total_count: 0 },
    });
    const wrong = await get(admin, { start_date: '2026-11-02', end_date: '2026-11-01' }).expect(400);
    expect(wrong.body.error.code).toBe('VALIDATION_ERROR');
    expect(wrong.body.error.details[0]).toMatchObject({ field: 'start_date', location: 'query' });
  });

  it.each([
    ['0', 'limit'],
    ['101', 'limit'],
    ['abc', 'limit'],
    ['1.5', 'limit'],
    ['-1', 'limit'],
    ['', 'limit'],
  ])('rejects limit=%s', async (value, field) => {
    const response = await get(admin, { limit: value }).expect(400);
    expect(response.body.error).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(response.body.error.details).toEqual([
      { field, location: 'query', issue: 'must be an integer from 1 to 100', value },
    ]);
  });

  it('rejects a repeated limit and accepts 1 and 100', async () => {
    const repeated = await request(testApp.server)
      .get('/v1/workloads?limit=1&limit=2')
      .set(admin)
      .expect(400);
    expect(repeated.body.error.details[0]).toMatchObject({ field: 'limit', location: 'query' });
    const one = await get(admin, { limit: 1 }).expect(200);
    expect(one.body.data.workloads).toHaveLength(1);
    expect(one.body.data.workloads[0].workload_id).toBe(expectedOrder(rows)[0]);
    const hundred = await get(admin, { limit: 100 }).expect(200);
    expect(hundred.body.data.workloads).toHaveLength(40);
    const defaulted = await get(admin).expect(200);
    expect(defaulted.body.data.workloads).toHaveLength(20);
  });

  it.each([
    ['status', 'done'],
    ['is_managed', '1'],
    ['is_managed', 'TRUE'],
    ['start_date', '2026-11-01T00:00:00'],
    ['end_date', 'yesterday'],
    ['initiative_id', 'bad id!'],
  ])('rejects %s=%s naming the field', async (field, value) => {
    const response = await get(admin, { [field]: value }).expect(400);
    expect(response.body.error.details).toEqual([
      expect.objectContaining({ field, location: 'query', value }),
    ]);
  });

  it('rejects an unknown parameter by name', async () => {
    const response = await get(admin, { initiative: 'init-a' }).expect(400);
    expect(response.body.error.details).toEqual([
      expect.objectContaining({ field: 'initiative', location: 'query', issue: 'is not a known parameter' }),
    ]);
  });

  it('rejects a tampered, garbage or cross-filter next_token with a 400 on next_token', async () => {
    const first = await get(admin, { limit: 2, status: 'completed' }).expect(200);
    const token: string = first.body.metadata.next_token;
    const [payload, signature] = token.split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify([
        '2030-01-01 00:00:00+00',
        'zzz',
        JSON.parse(Buffer.from(payload, 'base64url').toString())[2],
      ]),
    ).toString('base64url');
    const candidates = [
      `${forgedPayload}.${signature}`,
      `${payload}.${signature.slice(0, -2)}AA`,
      'garbage',
      `${payload}`,
      '',
    ];
    for (const candidate of candidates) {
      const response = await get(admin, { limit: 2, status: 'completed', next_token: candidate }).expect(400);
      expect(response.body.error.code).toBe('VALIDATION_ERROR');
      expect(response.body.error.details[0]).toMatchObject({ field: 'next_token', location: 'query' });
    }
    const others: Record<string, string>[] = [
      { status: 'failed' },
      {},
      { status: 'completed', initiative_id: 'init-a' },
    ];
    for (const other of others) {
      const response = await get(admin, { limit: 2, ...other, next_token: token }).expect(400);
      expect(response.body.error.details[0]).toMatchObject({ field: 'next_token', location: 'query' });
    }
    // Same filters, another limit: fine.
    await get(admin, { limit: 5, status: 'completed', next_token: token }).expect(200);
  });

  it('rejects a token of another organization', async () => {
    const otherOrg = await seedOrganization(testApp.dataSource, { initiatives: ['init-a'] });
    await insertWorkloads(testApp.dataSource, otherOrg, [{}, {}, {}]);
    const otherAdmin = authHeaders(
      await createApiToken(testApp.dataSource, otherOrg, { role: 'ORG_ADMIN' }),
      otherOrg,
    );
    const first = await get(otherAdmin, { limit: 1 }).expect(200);
    const response = await get(admin, { limit: 1, next_token: first.body.metadata.next_token }).expect(400);
    expect(response.body.error.details[0].field).toBe('next_token');
  });

  it('limits a MEMBER with two of three initiatives to those, in list and count', async () => {
    const expected = expectedOrder(rows.filter((row) => row.initiativeId !== 'init-c'));
    const { ids } = await walk(member, { limit: 4 });
    expect(ids).toEqual(expected);
    const first = await get(member, { limit: 4 }).expect(200);
    expect(first.body.metadata.total_count).toBe(expected.length);
    const filtered = await walk(member, { limit: 4, status: 'completed' });
    expect(filtered.ids).toEqual(
      expectedOrder(rows.filter((row) => row.initiativeId !== 'init-c' && row.status === 'completed')),
    );
    const one = await get(member, { initiative_id: 'init-b', limit: 100 }).expect(200);
    expect(one.body.metadata.total_count).toBe(rows.filter((row) => row.initiativeId === 'init-b').length);
  });

  it('answers 403 for an initiative or organization outside the scope', async () => {
    const outside = await get(member, { initiative_id: 'init-c' }).expect(403);
    expect(outside.body.error.code).toBe('FORBIDDEN');
    await get(lead, { initiative_id: 'init-a' }).expect(403);
    await get(admin, { organization_id: 'org-someone-else' }).expect(403);
  });

  it('limits a TEAM_LEAD to their initiative and gives a scope with no initiative nothing', async () => {
    const { ids } = await walk(lead, { limit: 5 });
    expect(ids).toEqual(expectedOrder(rows.filter((row) => row.initiativeId === 'init-c')));
    const none = await get(nobody).expect(200);
    expect(none.body).toMatchObject({
      data: { workloads: [] },
      metadata: { next_token: null, total_count: 0 },
    });
  });

  it('lets an ORG_ADMIN filter by an unknown initiative and get nothing', async () => {
    const response = await get(admin, { initiative_id: 'init-zzz' }).expect(200);
    expect(response.body.metadata).toEqual({
      next_token: null,
      total_count: 0,
      as_of: expect.any(String),
      data_as_of: expect.any(String),
      currency: null,
    });
  });
});
