import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { GPU_SHARE_UNITS } from '../../../src/common/gpu-sharing';
import { ImportRejectedError } from '../../../src/import/import-errors';
import {
  authHeaders,
  createApiToken,
  deviceShareUnits,
  importDocument,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  SHARE_KINDS,
  type SampleSeed,
  uniqueId,
  type WorkloadSeed,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * GPUs that are sliced (MIG) or shared (time-slicing, MPS): a workload holds gpu_share of a GPU, kept
 * in integer units of 1/5040, and every GPU-hour figure is gpu_share × hours. Seven 1g instances of a
 * seven-slice GPU running the same hour are one GPU-hour exactly, through the rollups and through the
 * raw-row edges; the importer derives, accepts and refuses shares; the API shows them; and cluster_id
 * filters every read to a recomputation from that cluster's raw rows, in the caller's scope.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const PERIOD = { start: '2026-11-01T00:00:00Z', end: '2026-12-01T00:00:00Z' };

type Doc = Record<string, Record<string, unknown>[]>;

/** An organization with two initiatives, two pools and an allocation each, as an import document. */
function organizationDocument(organizationId: string): Doc {
  return {
    organizations: [
      {
        organization_id: organizationId,
        name: 'Shared GPUs',
        timezone: 'UTC',
        budget_period_start: PERIOD.start,
        budget_period_end: PERIOD.end,
      },
    ],
    initiatives: ['vision', 'nlp'].map((initiative_id) => ({
      organization_id: organizationId,
      initiative_id,
      name: initiative_id,
    })),
    pools: [
      { organization_id: organizationId, pool_id: 'h100', name: 'H100', instance_types: ['p5.48xlarge'] },
      { organization_id: organizationId, pool_id: 'a30', name: 'A30', instance_types: ['a30.xlarge'] },
    ],
    allocations: [
      { organization_id: organizationId, initiative_id: 'vision', pool_id: 'h100', allocated_gpu_hours: 100 },
      { organization_id: organizationId, initiative_id: 'nlp', pool_id: 'a30', allocated_gpu_hours: 10 },
    ],
  };
}

/** A workload record of the import format: completed on one H100 device unless patched. */
function workloadRecord(organizationId: string, workloadId: string, patch: Record<string, unknown> = {}) {
  return {
    organization_id: organizationId,
    workload_id: workloadId,
    initiative_id: 'vision',
    name: `job ${workloadId}`,
    status: 'completed',
    submitted_by: 'ada@example.com',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    is_managed: true,
    cluster_id: 'c-east',
    namespace: 'ml',
    submitted_at: '2026-11-10T09:59:00Z',
    started_at: '2026-11-10T10:00:00Z',
    completed_at: '2026-11-10T11:00:00Z',
    exit_code: 0,
    ...patch,
  };
}

const MIG_1G = { mode: 'mig', profile: '1g.10gb' };

function round4(value: number): number {
  const rounded = Math.round(value * 10_000) / 10_000;
  return rounded === 0 ? 0 : rounded;
}

describe('GPU shares: MIG slices and shared replicas', () => {
  let t: TestApp;
  let now = NOW;

  beforeAll(async () => {
    // Tests move the budget period and the clock between reads of one organization.
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(now));
  });

  afterAll(() => t.close());

  beforeEach(() => {
    now = NOW;
  });

  /** An organization imported with `workloads` (and samples); an ORG_ADMIN's headers for it. */
  async function importOrganization(
    workloads: (organizationId: string) => Record<string, unknown>[],
    samples: (organizationId: string) => Record<string, unknown>[] = () => [],
  ) {
    const organizationId = uniqueId('org-shares');
    await importDocument(t.dataSource, {
      ...organizationDocument(organizationId),
      workloads: workloads(organizationId),
      metric_samples: samples(organizationId),
    });
    const token = await createApiToken(t.dataSource, organizationId, { role: 'ORG_ADMIN' });
    return { organizationId, headers: authHeaders(token, organizationId) };
  }

  async function get(
    headers: Record<string, string>,
    path: string,
    query: Record<string, string | undefined> = {},
  ) {
    const response = await request(t.server).get(path).query(query).set(headers);
    expect({ path, query, status: response.status }).toEqual({ path, query, status: 200 });
    return response.body;
  }

  describe('exactness: shares add up to whole GPUs', () => {
    it('seven 1g.10gb instances over one hour are exactly one GPU-hour in stats, capacity and the burn-down', async () => {
      const { organizationId, headers } = await importOrganization((org) =>
        Array.from({ length: 7 }, (_, k) => workloadRecord(org, `mig-${k}`, { gpu_sharing: MIG_1G })),
      );
      // The rollups hold integers: 7 × 720 units × 3600 s, and a day's microseconds alike.
      const [stored] = await t.dataSource.query(
        `SELECT (SELECT sum(gpu_seconds_sum)::text FROM workload_period_rollups
                 WHERE organization_id = $1 AND period = 'day' AND dimension = 'none') AS gpu_seconds,
                (SELECT sum(gpu_microseconds)::text FROM capacity_usage_daily WHERE organization_id = $1) AS microseconds`,
        [organizationId],
      );
      expect(stored).toEqual({
        gpu_seconds: String(GPU_SHARE_UNITS * 3600),
        microseconds: String(GPU_SHARE_UNITS * 3600e6),
      });

      for (const query of [
        { start_date: '2026-11-10', end_date: '2026-11-11' },
        // Edges inside an hour: that hour's workloads are read from raw rows.
        { start_date: '2026-11-10T09:30:00Z', end_date: '2026-11-10T10:30:00Z' },
        // A cluster filter reads raw rows throughout.
        { start_date: '2026-11-10', end_date: '2026-11-11', cluster_id: 'c-east' },
      ]) {
        const stats = await get(headers, '/v1/workloads/stats', { ...query, group_by: 'initiative_id' });
        expect(stats.data.summary.total_gpu_hours).toBe(1);
        expect(stats.data.summary.total_workloads).toBe(7);
        expect(
          stats.data.grouped.map((g: Record<string, unknown>) => [g.initiative_id, g.gpu_hours]),
        ).toEqual([['vision', 1]]);
      }
      const detail = await get(headers, '/v1/workloads/mig-0');
      expect(detail.data).toMatchObject({
        gpu_count: 1,
        gpu_share: 0.1429,
        gpu_sharing: MIG_1G,
        gpu_hours_used: 0.1429,
      });

      for (const query of [{}, { cluster_id: 'c-east' }]) {
        const capacity = (await get(headers, '/v1/capacity', { ...query, interval: 'day' })).data;
        expect(capacity.summary.total_used_gpu_hours).toBe(1);
        expect(capacity.summary.total_remaining_gpu_hours).toBe(109);
        expect(entry(capacity.pools, 'pool_id', 'h100')).toMatchObject({
          used_gpu_hours: 1,
          remaining_gpu_hours: 99,
        });
        expect(entry(capacity.initiatives, 'initiative_id', 'vision').used_gpu_hours).toBe(1);
        expect(entry(capacity.initiatives, 'initiative_id', 'nlp').used_gpu_hours).toBe(0);
        expect(usedByDay(capacity.summary.daily)).toEqual({ '2026-11-10': 1 });
        expect(usedByDay(entry(capacity.pools, 'pool_id', 'h100').daily)).toEqual({ '2026-11-10': 1 });
        expect(usedByDay(entry(capacity.initiatives, 'initiative_id', 'vision').daily)).toEqual({
          '2026-11-10': 1,
        });
      }

      // The period starts at 10:30: half of that hour, cut from the hourly buckets at a mid-hour instant.
      await t.dataSource.query(
        'UPDATE organizations SET budget_period_start = $2 WHERE organization_id = $1',
        [organizationId, '2026-11-10T10:30:00Z'],
      );
      for (const query of [{}, { cluster_id: 'c-east' }]) {
        const capacity = (await get(headers, '/v1/capacity', { ...query, interval: 'day' })).data;
        expect(capacity.summary.total_used_gpu_hours).toBe(0.5);
        expect(entry(capacity.pools, 'pool_id', 'h100').used_gpu_hours).toBe(0.5);
        expect(usedByDay(capacity.summary.daily)).toEqual({ '2026-11-10': 0.5 });
      }
    });

    it('three of them, with windows cut mid-hour at both ends', async () => {
      const { organizationId, headers } = await importOrganization((org) =>
        Array.from({ length: 3 }, (_, k) => workloadRecord(org, `mig-${k}`, { gpu_sharing: MIG_1G })),
      );
      const stats = await get(headers, '/v1/workloads/stats', {
        start_date: '2026-11-10T09:58:30Z',
        end_date: '2026-11-10T09:59:30Z',
      });
      expect(stats.data.summary.total_gpu_hours).toBe(round4(3 / 7));
      // A period from 10:20 to 10:50: 3 × 1/7 GPU × 30 minutes = 3/14 GPU-hour.
      await t.dataSource.query(
        'UPDATE organizations SET budget_period_start = $2, budget_period_end = $3 WHERE organization_id = $1',
        [organizationId, '2026-11-10T10:20:00Z', '2026-11-10T10:50:00Z'],
      );
      for (const query of [{}, { cluster_id: 'c-east' }]) {
        const capacity = (await get(headers, '/v1/capacity', { ...query, interval: 'day' })).data;
        expect(capacity.summary.total_used_gpu_hours).toBe(round4(3 / 14));
        expect(entry(capacity.initiatives, 'initiative_id', 'vision').used_gpu_hours).toBe(round4(3 / 14));
        expect(entry(capacity.pools, 'pool_id', 'h100').used_gpu_hours).toBe(round4(3 / 14));
        expect(
          capacity.summary.daily.map((day: { date: string; used_gpu_hours: number }) => [
            day.date,
            day.used_gpu_hours,
          ]),
        ).toEqual([['2026-11-10', round4(3 / 14)]]);
      }
    });

    it('seven running 1g instances, the clock mid-hour: half a GPU-hour and one GPU held', async () => {
      now = Date.parse('2026-11-10T10:30:00Z');
      const { headers } = await importOrganization((org) =>
        Array.from({ length: 7 }, (_, k) =>
          workloadRecord(org, `mig-${k}`, {
            gpu_sharing: MIG_1G,
            status: 'running',
            completed_at: null,
            exit_code: null,
          }),
        ),
      );
      for (const query of [{}, { cluster_id: 'c-east' }]) {
        const capacity = (await get(headers, '/v1/capacity', { ...query, interval: 'day' })).data;
        expect(capacity.summary).toMatchObject({
          total_used_gpu_hours: 0.5,
          current_active_gpus: 7,
          current_active_gpu_share: 1,
        });
        expect(usedByDay(capacity.summary.daily)).toEqual({ '2026-11-10': 0.5 });
        const stats = await get(headers, '/v1/workloads/stats', {
          ...query,
          start_date: '2026-11-10',
          end_date: '2026-11-11',
        });
        expect(stats.data.summary.total_gpu_hours).toBe(0.5);
      }
    });

    it('time-sliced and MPS replicas: four of one GPU each a quarter, four replicas of four GPUs one GPU', async () => {
      const { headers } = await importOrganization((org) => [
        ...Array.from({ length: 4 }, (_, k) =>
          workloadRecord(org, `ts-${k}`, { gpu_sharing: { mode: 'time-slicing', replicas: 4 } }),
        ),
        workloadRecord(org, 'mps-0', { gpu_count: 4, gpu_sharing: { mode: 'mps', replicas: 4 } }),
      ]);
      const detail = await get(headers, '/v1/workloads/ts-0');
      expect(detail.data).toMatchObject({ gpu_share: 0.25, gpu_hours_used: 0.25 });
      for (const query of [{}, { cluster_id: 'c-east' }]) {
        const stats = await get(headers, '/v1/workloads/stats', {
          ...query,
          start_date: '2026-11-10',
          end_date: '2026-11-11',
        });
        expect(stats.data.summary.total_gpu_hours).toBe(2);
        const capacity = (await get(headers, '/v1/capacity', { ...query, interval: 'day' })).data;
        expect(capacity.summary.total_used_gpu_hours).toBe(2);
        expect(usedByDay(capacity.summary.daily)).toEqual({ '2026-11-10': 2 });
      }
    });
  });

  describe('import', () => {
    it('derives the share of known profiles and replicas, takes an explicit one, and defaults to whole GPUs', async () => {
      const records = (org: string) => [
        workloadRecord(org, 'mig-1g', { gpu_sharing: MIG_1G }),
        workloadRecord(org, 'mig-3g-x2', { gpu_count: 2, gpu_sharing: { mode: 'mig', profile: '3g.40gb' } }),
        workloadRecord(org, 'mig-me', { gpu_sharing: { mode: 'mig', profile: '1g.10gb+me' } }),
        workloadRecord(org, 'mig-a30', {
          instance_type: 'a30.xlarge',
          gpu_sharing: { mode: 'mig', profile: '1g.6gb' },
        }),
        workloadRecord(org, 'mig-7g', { gpu_sharing: { mode: 'mig', profile: '7g.80gb' } }),
        workloadRecord(org, 'ts-x2', { gpu_count: 2, gpu_sharing: { mode: 'time-slicing', replicas: 4 } }),
        workloadRecord(org, 'mps-3', { gpu_sharing: { mode: 'mps', replicas: 3 } }),
        workloadRecord(org, 'mig-custom', {
          gpu_share: 0.125,
          gpu_sharing: { mode: 'mig', profile: 'custom-1c.8gb' },
        }),
        workloadRecord(org, 'explicit', { gpu_count: 2, gpu_share: 1.5 }),
        workloadRecord(org, 'whole', { gpu_count: 2 }),
      ];
      const organizationId = uniqueId('org-shares');
      const document = { ...organizationDocument(organizationId), workloads: records(organizationId) };
      await importDocument(t.dataSource, document);
      const rows = await t.dataSource.query(
        `SELECT workload_id, share_units, gpu_share_units, gpu_sharing_mode AS mode, gpu_sharing_profile AS profile,
                gpu_sharing_replicas AS replicas
         FROM workloads WHERE organization_id = $1 ORDER BY workload_id COLLATE "C"`,
        [organizationId],
      );
      const row = (
        share_units: number | null,
        gpu_share_units: number,
        mode: string | null,
        profile: string | null,
        replicas: number | null,
      ) => ({
        share_units,
        gpu_share_units,
        mode,
        profile,
        replicas,
      });
      expect(
        Object.fromEntries(
          rows.map(({ workload_id, ...rest }: Record<string, unknown>) => [workload_id, rest]),
        ),
      ).toEqual({
        explicit: row(7560, 7560, null, null, null),
        'mig-1g': row(720, 720, 'mig', '1g.10gb', null),
        'mig-3g-x2': row(4320, 4320, 'mig', '3g.40gb', null),
        'mig-7g': row(null, 5040, 'mig', '7g.80gb', null),
        'mig-a30': row(1260, 1260, 'mig', '1g.6gb', null),
        'mig-custom': row(630, 630, 'mig', 'custom-1c.8gb', null),
        'mig-me': row(720, 720, 'mig', '1g.10gb+me', null),
        'mps-3': row(1680, 1680, 'mps', null, 3),
        'ts-x2': row(2520, 2520, 'time-slicing', null, 4),
        whole: row(null, 10080, null, null, null),
      });
      const headers = authHeaders(
        await createApiToken(t.dataSource, organizationId, { role: 'ORG_ADMIN' }),
        organizationId,
      );
      for (const [id, gpuShare, sharing] of [
        ['whole', 2, null],
        ['explicit', 1.5, null],
        ['mig-3g-x2', 0.8571, { mode: 'mig', profile: '3g.40gb' }],
        ['mps-3', 0.3333, { mode: 'mps', replicas: 3 }],
        ['mig-custom', 0.125, { mode: 'mig', profile: 'custom-1c.8gb' }],
      ] as const) {
        const detail = await get(headers, `/v1/workloads/${id}`);
        expect([id, detail.data.gpu_share, detail.data.gpu_sharing]).toEqual([id, gpuShare, sharing]);
      }
      // The same file again writes nothing: shares and sharing compare equal to what is stored.
      const again = await importDocument(t.dataSource, document);
      expect(again.written).toEqual(
        Object.fromEntries(Object.keys(again.written).map((section) => [section, 0])),
      );
    });

    it.each([
      [
        'an unknown MIG profile without gpu_share',
        { gpu_sharing: { mode: 'mig', profile: 'weird.5gb' } },
        /workloads\[0\]: .*'weird\.5gb'.*gpu_share/,
      ],
      [
        'gpu_share above gpu_count',
        { gpu_count: 2, gpu_share: 2.5 },
        /workloads\[0\]: gpu_share must not exceed gpu_count/,
      ],
    ])('refuses %s, naming the record, and writes nothing', async (_name, patch, message) => {
      const organizationId = uniqueId('org-shares');
      const error = await importDocument(t.dataSource, {
        ...organizationDocument(organizationId),
        workloads: [workloadRecord(organizationId, 'bad', patch), workloadRecord(organizationId, 'fine')],
      }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ImportRejectedError);
      const lines = (error as ImportRejectedError).lines();
      expect(lines.filter((line) => message.test(line))).toHaveLength(1);
      expect(lines.join('\n')).not.toContain('workloads[1]');
      const [{ count }] = await t.dataSource.query(
        'SELECT count(*)::int AS count FROM organizations WHERE organization_id = $1',
        [organizationId],
      );
      expect(count).toBe(0);
    });
  });

  describe('API fields', () => {
    let headers: Record<string, string>;

    beforeAll(async () => {
      ({ headers } = await importOrganization(
        (org) => [
          workloadRecord(org, 'mig-run', {
            gpu_sharing: { mode: 'mig', profile: '2g.20gb' },
            status: 'running',
            submitted_at: '2026-11-20T09:59:00Z',
            started_at: '2026-11-20T10:00:00Z',
            completed_at: null,
            exit_code: null,
          }),
          workloadRecord(org, 'whole-run', {
            gpu_count: 2,
            status: 'running',
            submitted_at: '2026-11-20T10:59:00Z',
            started_at: '2026-11-20T11:00:00Z',
            completed_at: null,
            exit_code: null,
          }),
          workloadRecord(org, 'ts-done', {
            gpu_count: 2,
            gpu_sharing: { mode: 'time-slicing', replicas: 4 },
          }),
          workloadRecord(org, 'mig-done', {
            gpu_sharing: MIG_1G,
            submitted_at: '2026-11-19T09:59:00Z',
            started_at: '2026-11-19T10:00:00Z',
            completed_at: '2026-11-19T11:00:00Z',
          }),
        ],
        (org) =>
          [70, 35].map((utilization, k) => ({
            organization_id: org,
            workload_id: 'mig-done',
            timestamp: new Date(Date.parse('2026-11-19T10:10:00Z') + k * 10 * MINUTE).toISOString(),
            gpu_utilization: utilization,
            memory_utilization: 50,
            temperature: 60,
            power_usage: 200,
          })),
      ));
    });

    const EXPECTED: Record<
      string,
      { gpu_count: number; gpu_share: number; gpu_sharing: unknown; gpu_hours: number }
    > = {
      // 2/7 GPU from 10:00 to now (12:00).
      'mig-run': {
        gpu_count: 1,
        gpu_share: 0.2857,
        gpu_sharing: { mode: 'mig', profile: '2g.20gb' },
        gpu_hours: round4(4 / 7),
      },
      'whole-run': { gpu_count: 2, gpu_share: 2, gpu_sharing: null, gpu_hours: 2 },
      'ts-done': {
        gpu_count: 2,
        gpu_share: 0.5,
        gpu_sharing: { mode: 'time-slicing', replicas: 4 },
        gpu_hours: 0.5,
      },
      'mig-done': { gpu_count: 1, gpu_share: 0.1429, gpu_sharing: MIG_1G, gpu_hours: 0.1429 },
    };

    it('list and detail items carry gpu_share, gpu_sharing and cluster_id', async () => {
      const list = await get(headers, '/v1/workloads', { limit: '100' });
      expect(list.metadata.total_count).toBe(4);
      for (const item of list.data.workloads) {
        const expected = EXPECTED[item.workload_id];
        expect(item).toMatchObject({
          gpu_count: expected.gpu_count,
          gpu_share: expected.gpu_share,
          gpu_sharing: expected.gpu_sharing,
          cluster_id: 'c-east',
        });
        const detail = await get(headers, `/v1/workloads/${item.workload_id}`);
        expect(detail.data).toMatchObject({
          workload_id: item.workload_id,
          gpu_share: expected.gpu_share,
          gpu_sharing: expected.gpu_sharing,
          gpu_hours_used: expected.gpu_hours,
        });
      }
    });

    it('ranked items carry the share and rank by share × hours', async () => {
      const ranked = await get(headers, '/v1/workloads/metrics', { sort_by: 'gpu_hours', limit: '10' });
      expect(ranked.metadata.total_count).toBe(4);
      expect(
        ranked.data.workloads.map((w: Record<string, unknown>) => [
          w.workload_id,
          w.gpu_count,
          w.gpu_share,
          w.gpu_sharing,
          w.gpu_hours,
        ]),
      ).toEqual(
        ['whole-run', 'mig-run', 'ts-done', 'mig-done'].map((id) => {
          const e = EXPECTED[id];
          return [id, e.gpu_count, e.gpu_share, e.gpu_sharing, { avg: e.gpu_hours, current: e.gpu_hours }];
        }),
      );
      expect(ranked.data.scope_average.gpu_hours).toBe(round4((2 + 4 / 7 + 0.5 + 1 / 7) / 4));
    });

    it('the CSV list has the share columns', async () => {
      const response = await request(t.server)
        .get('/v1/workloads')
        .set(headers)
        .set('Accept', 'text/csv')
        .expect(200);
      const rows = parse<Record<string, string>>(response.text, { columns: true, record_delimiter: '\r\n' });
      expect(
        Object.fromEntries(
          rows.map((row) => [
            row.workload_id,
            [
              row.gpu_count,
              row.gpu_share,
              row.gpu_sharing_mode,
              row.gpu_sharing_profile,
              row.gpu_sharing_replicas,
              row.cluster_id,
            ],
          ]),
        ),
      ).toEqual({
        'mig-run': ['1', '0.2857', 'mig', '2g.20gb', '', 'c-east'],
        'whole-run': ['2', '2', '', '', '', 'c-east'],
        'ts-done': ['2', '0.5', 'time-slicing', '', '4', 'c-east'],
        'mig-done': ['1', '0.1429', 'mig', '1g.10gb', '', 'c-east'],
      });
    });

    it('capacity counts the GPUs held by running workloads', async () => {
      const capacity = (await get(headers, '/v1/capacity')).data;
      expect(capacity.summary.current_active_gpus).toBe(3);
      expect(capacity.summary.current_active_gpu_share).toBe(round4(2 + 2 / 7));
    });

    it("a MIG workload's gpu_usage is its share × utilization / 100", async () => {
      const metrics = await get(headers, '/v1/workloads/mig-done/metrics', {
        time_range: 'job_lifetime',
        metrics: 'gpu_utilization,gpu_usage',
      });
      expect(metrics.data.metrics.gpu_utilization).toMatchObject({
        avg: 52.5,
        min: 35,
        max: 70,
        current: 35,
      });
      // A 1g instance fully busy does a seventh of a GPU's work: 70 % of 1/7 is 0.1 GPU.
      expect(metrics.data.metrics.gpu_usage).toMatchObject({
        avg: 0.075,
        min: 0.05,
        max: 0.1,
        current: 0.05,
      });
    });
  });

  describe('cluster_id filters every read to that cluster’s raw rows, in scope', () => {
    const INITIATIVES = ['i-1', 'i-2', 'i-3'];
    const STATUSES = ['completed', 'failed', 'running', 'cancelled', 'completed', 'pending'] as const;
    const INSTANCE_TYPES = ['p5.48xlarge', 'a30.xlarge', 'x1.large']; // x1 belongs to no pool
    let organizationId: string;
    const tokens: { role: string; headers: Record<string, string>; scope: string[] }[] = [];

    beforeAll(async () => {
      organizationId = await seedOrganization(t.dataSource, {
        initiatives: INITIATIVES,
        budgetPeriodStart: PERIOD.start,
        budgetPeriodEnd: PERIOD.end,
        pools: [
          { poolId: 'h100', instanceTypes: ['p5.48xlarge'] },
          { poolId: 'a30', instanceTypes: ['a30.xlarge'] },
        ],
        allocations: [
          { initiativeId: 'i-1', poolId: 'h100', allocatedGpuHours: 500 },
          { initiativeId: 'i-2', poolId: 'a30', allocatedGpuHours: 300 },
        ],
      });
      const seeds: WorkloadSeed[] = [];
      const samples: SampleSeed[] = [];
      for (let k = 0; k < 90; k++) {
        const status = STATUSES[k % STATUSES.length];
        const gpuCount = k % 11 === 0 ? 0 : 1 + (k % 4);
        const kind = SHARE_KINDS[(k * 7) % SHARE_KINDS.length];
        const started = NOW - (1 + (k % 17)) * 7 * HOUR - (k % 13) * 11 * MINUTE - (k % 7) * 1000 - 250;
        const workloadId = `w-${String(k).padStart(2, '0')}`;
        seeds.push({
          workloadId,
          initiativeId: INITIATIVES[Math.floor(k / STATUSES.length) % 3],
          clusterId: k % 5 < 3 ? 'c-east' : 'c-west',
          instanceType: INSTANCE_TYPES[k % 3],
          gpuCount,
          shareUnits: deviceShareUnits(gpuCount, kind),
          gpuSharing: gpuCount === 0 ? null : kind.sharing,
          status,
          submittedAt: new Date(started - MINUTE),
          startedAt: status === 'pending' ? null : new Date(started),
          completedAt:
            status === 'running' || status === 'pending'
              ? null
              : new Date(started + ((k * 37) % 600) * MINUTE + (k % 3) * 500),
          exitCode: status === 'completed' ? 0 : status === 'failed' ? 1 : null,
        });
        if (status !== 'pending' && k % 3 !== 1) {
          // One reading value per workload, so its lifetime average is that integer exactly.
          for (let s = 0; s < 1 + (k % 2); s++) {
            samples.push({
              workloadId,
              at: new Date(started + (s + 1) * MINUTE),
              gpuUtilization: (k * 17) % 101,
            });
          }
        }
      }
      await insertWorkloads(t.dataSource, organizationId, seeds);
      await insertSamples(t.dataSource, organizationId, samples);
      for (const [role, scope] of [
        ['ORG_ADMIN', INITIATIVES],
        ['MEMBER', ['i-1', 'i-3']],
      ] as const) {
        const token = await createApiToken(t.dataSource, organizationId, {
          role,
          initiativeIds: role === 'MEMBER' ? [...scope] : undefined,
        });
        tokens.push({ role, headers: authHeaders(token, organizationId), scope: [...scope] });
      }
    });

    interface RawRow {
      workload_id: string;
      initiative_id: string;
      cluster_id: string;
      status: string;
      instance_type: string;
      gpu_share_units: number;
      started_at: Date | null;
      completed_at: Date | null;
      submitted_at: Date;
      utilization: number | null;
    }

    async function rawRows(scope: string[], clusterId: string | null): Promise<RawRow[]> {
      return t.dataSource.query(
        `SELECT w.workload_id, w.initiative_id, w.cluster_id, w.status, w.instance_type, w.gpu_share_units,
                w.started_at, w.completed_at, w.submitted_at,
                (SELECT avg(s.gpu_utilization)::float8 FROM metric_samples s
                 WHERE s.organization_id = w.organization_id AND s.workload_id = w.workload_id) AS utilization
         FROM workloads w
         WHERE w.organization_id = $1 AND w.initiative_id = ANY ($2::text[])
           AND ($3::text IS NULL OR w.cluster_id = $3)
         ORDER BY w.workload_id`,
        [organizationId, scope, clusterId],
      );
    }

    /** Whole seconds run (up to now while running) × the share held, in GPU-hours. */
    function gpuHours(row: RawRow): number {
      if (row.started_at === null) return 0;
      const end = row.completed_at?.getTime() ?? NOW;
      const seconds = Math.max(0, Math.floor((end - row.started_at.getTime()) / 1000));
      return (row.gpu_share_units * seconds) / GPU_SHARE_UNITS / 3600;
    }

    /** GPU-hours inside [from, to), running runs up to now. */
    function usedBetween(rows: RawRow[], from: number, to: number): number {
      let unitMs = 0;
      for (const row of rows) {
        if (row.started_at === null) continue;
        const end = Math.min(row.completed_at?.getTime() ?? NOW, to);
        const start = Math.max(row.started_at.getTime(), from);
        if (end > start) unitMs += row.gpu_share_units * (end - start);
      }
      return unitMs / GPU_SHARE_UNITS / HOUR;
    }

    function expectNear(actual: number, expected: number, what: string, tolerance = 0.00006) {
      expect({ what, off: Math.abs(actual - expected) <= tolerance ? 0 : actual - expected }).toEqual({
        what,
        off: 0,
      });
    }

    it('holds data in both clusters, for every initiative', async () => {
      const all = await rawRows(INITIATIVES, null);
      const east = all.filter((row) => row.cluster_id === 'c-east');
      expect(east.length).toBeGreaterThan(30);
      expect(all.length - east.length).toBeGreaterThan(20);
      for (const initiative of INITIATIVES) {
        expect(
          east.filter((row) => row.initiative_id === initiative && row.status === 'running').length,
        ).toBeGreaterThan(0);
      }
      expect(new Set(east.map((row) => row.gpu_share_units % GPU_SHARE_UNITS)).size).toBeGreaterThan(3);
    });

    it.each(['ORG_ADMIN', 'MEMBER'])('list, total_count and stats as %s', async (role) => {
      const { headers, scope } = tokens.find((token) => token.role === role)!;
      for (const clusterId of ['c-east', 'c-west']) {
        const raw = await rawRows(scope, clusterId);
        const list = await get(headers, '/v1/workloads', { cluster_id: clusterId, limit: '100' });
        expect(list.metadata.total_count).toBe(raw.length);
        expect(list.data.workloads.map((w: { workload_id: string }) => w.workload_id).sort()).toEqual(
          raw.map((row) => row.workload_id),
        );
        for (const item of list.data.workloads) {
          const row = raw.find((r) => r.workload_id === item.workload_id)!;
          expect([item.cluster_id, scope.includes(item.initiative_id), item.gpu_share]).toEqual([
            clusterId,
            true,
            round4(row.gpu_share_units / GPU_SHARE_UNITS),
          ]);
        }
        const completed = await get(headers, '/v1/workloads', {
          cluster_id: clusterId,
          status: 'completed',
          limit: '1',
        });
        expect(completed.metadata.total_count).toBe(raw.filter((row) => row.status === 'completed').length);

        const window = { start_date: '2026-11-01', end_date: '2026-11-21' };
        const stats = await get(headers, '/v1/workloads/stats', {
          ...window,
          cluster_id: clusterId,
          group_by: 'initiative_id',
        });
        expect(stats.data.summary.total_workloads).toBe(raw.length);
        expectNear(
          stats.data.summary.total_gpu_hours,
          sum(raw.map(gpuHours)),
          `${clusterId} stats gpu_hours`,
        );
        expect(stats.data.grouped.map((g: Record<string, unknown>) => g.initiative_id).sort()).toEqual(
          [...new Set(raw.map((row) => row.initiative_id))].sort(),
        );
        for (const group of stats.data.grouped) {
          const rows = raw.filter((row) => row.initiative_id === group.initiative_id);
          expect(group.workload_count).toBe(rows.length);
          expectNear(
            group.gpu_hours,
            sum(rows.map(gpuHours)),
            `${clusterId} ${group.initiative_id} gpu_hours`,
          );
        }
        const byCluster = await get(headers, '/v1/workloads/stats', {
          ...window,
          cluster_id: clusterId,
          group_by: 'cluster_id',
        });
        expect(
          byCluster.data.grouped.map((g: Record<string, unknown>) => [g.cluster_id, g.workload_count]),
        ).toEqual([[clusterId, raw.length]]);
      }
      // Grouped by cluster without the filter: each group is its cluster's raw rows in scope.
      const all = await rawRows(scope, null);
      const grouped = await get(headers, '/v1/workloads/stats', {
        start_date: '2026-11-01',
        end_date: '2026-11-21',
        group_by: 'cluster_id',
      });
      expect(grouped.data.grouped.map((g: Record<string, unknown>) => g.cluster_id).sort()).toEqual([
        'c-east',
        'c-west',
      ]);
      for (const group of grouped.data.grouped) {
        const rows = all.filter((row) => row.cluster_id === group.cluster_id);
        expect(group.workload_count).toBe(rows.length);
        expectNear(group.gpu_hours, sum(rows.map(gpuHours)), `${group.cluster_id} grouped gpu_hours`);
      }
    });

    const RANKED_VALUES: Record<string, (row: RawRow) => number | null> = {
      gpu_hours: gpuHours,
      idle_gpu_hours: (row) =>
        row.utilization === null ? null : gpuHours(row) * (1 - row.utilization / 100),
      gpu_utilization: (row) => row.utilization,
    };

    /** One ranking in c-east, both orders and a few statuses, against the raw rows in scope. */
    async function expectRankedInCluster(role: string, sortBy: string) {
      const { headers, scope } = tokens.find((token) => token.role === role)!;
      const raw = await rawRows(scope, 'c-east');
      const value = RANKED_VALUES[sortBy];
      for (const order of ['desc', 'asc'] as const) {
        for (const status of [undefined, 'running', 'completed']) {
          const ranked = raw
            .filter((row) => status === undefined || row.status === status)
            .map((row) => ({ row, value: value(row) }))
            .filter((entry): entry is { row: RawRow; value: number } => entry.value !== null)
            .sort(
              (a, b) =>
                (order === 'asc' ? a.value - b.value : b.value - a.value) ||
                (a.row.workload_id < b.row.workload_id ? -1 : 1),
            );
          const query: Record<string, string> = { cluster_id: 'c-east', sort_by: sortBy, order, limit: '7' };
          if (status) query.status = status;
          const body = await get(headers, '/v1/workloads/metrics', query);
          const what = `${role} ${sortBy} ${order} ${status ?? 'all'}`;
          expect({ what, total: body.metadata.total_count }).toEqual({ what, total: ranked.length });
          expect({
            what,
            page: body.data.workloads.map((w: { workload_id: string }) => w.workload_id),
          }).toEqual({
            what,
            page: ranked.slice(0, 7).map((entry) => entry.row.workload_id),
          });
          body.data.workloads.forEach((w: Record<string, { avg: number }>, index: number) =>
            expectNear(w[sortBy].avg, ranked[index].value, `${what} #${index}`),
          );
          const mean = ranked.length === 0 ? null : sum(ranked.map((entry) => entry.value)) / ranked.length;
          if (mean === null) expect(body.data.scope_average[sortBy]).toBeNull();
          else expectNear(body.data.scope_average[sortBy], mean, `${what} scope_average`, 0.00011);
        }
      }
    }

    it.each(['ORG_ADMIN', 'MEMBER'])('ranked gpu_hours and idle_gpu_hours as %s', async (role) => {
      await expectRankedInCluster(role, 'gpu_hours');
      await expectRankedInCluster(role, 'idle_gpu_hours');
    });

    // A sample-metric ranking reads no clock: its statement still takes `now` as a typed parameter.
    it.each(['ORG_ADMIN', 'MEMBER'])('ranked gpu_utilization as %s', async (role) => {
      await expectRankedInCluster(role, 'gpu_utilization');
    });

    it.each(['ORG_ADMIN', 'MEMBER'])(
      'capacity per pool and initiative, and the burn-down, as %s',
      async (role) => {
        const { headers, scope } = tokens.find((token) => token.role === role)!;
        const raw = await rawRows(scope, 'c-east');
        const pools: Record<string, string> = { 'p5.48xlarge': 'h100', 'a30.xlarge': 'a30' };
        const periodStart = Date.parse(PERIOD.start);
        const body = (await get(headers, '/v1/capacity', { cluster_id: 'c-east', interval: 'day' })).data;
        const unfiltered = (await get(headers, '/v1/capacity')).data;
        const check = (
          entry: { used_gpu_hours: number; daily: { date: string; used_gpu_hours: number }[] },
          rows: RawRow[],
          what: string,
        ) => {
          expectNear(entry.used_gpu_hours, usedBetween(rows, periodStart, NOW), `${role} ${what} used`);
          expect(entry.daily).toHaveLength(20);
          entry.daily.forEach((day, index) => {
            const from = periodStart + index * DAY;
            expect(day.date).toBe(new Date(from).toISOString().slice(0, 10));
            expectNear(
              day.used_gpu_hours,
              usedBetween(rows, from, Math.min(from + DAY, NOW)),
              `${role} ${what} ${day.date}`,
            );
          });
        };
        check({ ...body.summary, used_gpu_hours: body.summary.total_used_gpu_hours }, raw, 'summary');
        expect(body.summary.total_used_gpu_hours).toBeLessThan(unfiltered.summary.total_used_gpu_hours);
        expect(body.initiatives.map((entry: { initiative_id: string }) => entry.initiative_id)).toEqual(
          scope,
        );
        for (const entry of body.initiatives) {
          check(
            entry,
            raw.filter((row) => row.initiative_id === entry.initiative_id),
            entry.initiative_id,
          );
        }
        expect(body.pools.length).toBeGreaterThan(0);
        for (const entry of body.pools) {
          check(
            entry,
            raw.filter((row) => pools[row.instance_type] === entry.pool_id),
            entry.pool_id,
          );
        }
        const running = raw.filter((row) => row.status === 'running');
        expect(body.summary.current_active_gpu_share).toBe(
          round4(sum(running.map((row) => row.gpu_share_units / GPU_SHARE_UNITS))),
        );
      },
    );
  });
});

interface Day {
  date: string;
  used_gpu_hours: number;
}

interface CapacityEntry {
  used_gpu_hours: number;
  remaining_gpu_hours: number;
  daily: Day[];
}

function entry(entries: Record<string, unknown>[], key: string, id: string): CapacityEntry {
  const found = entries.find((item) => item[key] === id);
  expect({ [key]: found?.[key] }).toEqual({ [key]: id });
  return found as unknown as CapacityEntry;
}

/** The days of a burn-down that used anything. */
function usedByDay(daily: Day[]): Record<string, number> {
  return Object.fromEntries(
    daily.filter((day) => day.used_gpu_hours !== 0).map((day) => [day.date, day.used_gpu_hours]),
  );
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
