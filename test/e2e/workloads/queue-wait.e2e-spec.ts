import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import {
  authHeaders,
  createApiToken,
  deviceShareUnits,
  insertWorkloads,
  seedOrganization,
  SHARE_KINDS,
  type WorkloadRow,
  type WorkloadSeed,
  writeAs,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';
import { percentileCont, percentileFigure, queueFiguresOf, waitOf } from './queue-figures';

/*
 * Queue wait and pending demand — wait_seconds on the list and the detail, queue_wait and pending in
 * the statistics' summary, groups and timeline buckets, pending_gpu_share and queue_wait_p95_seconds
 * on capacity's pools — equal a recomputation from the rows this test inserted, for every scope,
 * filter, group and timeline bucket, at an as_of that moves while pending workloads start, running
 * ones finish, and a workload changes team. Percentiles from the wait histograms are held to their
 * stated bound, within 1 % of percentile_cont (queue-figures.ts); every other figure is exact.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const FIRST_SUBMISSION = Date.parse('2026-05-01T00:00:00Z');
const INITIATIVES = ['init-a', 'init-b', 'init-c'];
const TYPES = ['type-1', 'type-2', 'type-3'];
const POOL_TYPES: Record<string, string[]> = { 'pool-1': ['type-1'], 'pool-2': ['type-2'] };
const CLUSTERS = ['c-east', 'c-west'];
const SUBMITTERS = ['alice', 'bob', 'carol'];
const GROUPS = [undefined, 'submitted_by', 'initiative_id', 'instance_type', 'cluster_id'] as const;
type GroupBy = Exclude<(typeof GROUPS)[number], undefined>;

/** A deterministic sequence in [0, 1): the data are varied, and the same at every run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

/**
 * Ninety workloads over five days with every status (cancelled both before and after starting),
 * waits from 0 to 3 h with milliseconds (floor matters) and some repeated (ties in percentiles),
 * whole and shared GPUs, two clusters, an instance type no pool owns.
 */
function workloadSeeds(): WorkloadSeed[] {
  const random = generator(7);
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)];
  const kinds = ['completed', 'failed', 'running', 'pending', 'cancelled-started', 'cancelled-queued'];
  return Array.from({ length: 90 }, (_, index) => {
    const kind = kinds[index % kinds.length];
    const submittedAt = FIRST_SUBMISSION + Math.floor(random() * 5 * DAY);
    const wait =
      index % 7 === 0 ? 0 : index % 5 === 0 ? 90_500 : Math.floor(random() * 3 * HOUR) + (index % 1000);
    const queued = kind === 'pending' || kind === 'cancelled-queued';
    const startedAt = queued ? null : submittedAt + wait;
    const endedAt = (startedAt ?? submittedAt) + Math.floor(random() * 5 * HOUR) + MINUTE;
    const share = SHARE_KINDS[index % SHARE_KINDS.length];
    const gpuCount = 1 + (index % 4);
    const status = kind.startsWith('cancelled') ? 'cancelled' : kind;
    return {
      workloadId: `qw-${String(index).padStart(3, '0')}`,
      initiativeId: pick(INITIATIVES),
      submittedBy: pick(SUBMITTERS),
      instanceType: pick(TYPES),
      clusterId: pick(CLUSTERS),
      gpuCount,
      shareUnits: deviceShareUnits(gpuCount, share),
      gpuSharing: share.sharing,
      status: status as WorkloadSeed['status'],
      submittedAt: new Date(submittedAt),
      startedAt: startedAt === null ? null : new Date(startedAt),
      completedAt: status === 'running' || status === 'pending' ? null : new Date(endedAt),
      exitCode: status === 'completed' ? 0 : status === 'failed' ? 2 : null,
    };
  });
}

/** A row's wait_seconds at `asOf`, as the list and the detail must give it. */
function expectedWait(row: WorkloadRow, asOf: Date): number | null {
  if (row.startedAt !== null) return waitOf(row);
  if (row.status === 'pending')
    return Math.max(0, Math.floor((asOf.getTime() - row.submittedAt.getTime()) / 1000));
  return null;
}

const KEY_OF: Record<GroupBy, (row: WorkloadRow) => string> = {
  submitted_by: (row) => row.submittedBy,
  initiative_id: (row) => row.initiativeId,
  instance_type: (row) => row.instanceType,
  cluster_id: (row) => row.clusterId,
};

interface Figures {
  queue_wait: unknown;
  pending: unknown;
}

const queueFieldsOf = (entry: Figures) => ({ queue_wait: entry.queue_wait, pending: entry.pending });

describe('queue wait and pending demand, recomputed from the rows', () => {
  let t: TestApp;
  let orgId: string;
  let rows: WorkloadRow[];
  let asOf = new Date('2026-05-06T09:17:23.456Z');
  const scopes: { name: string; initiatives: string[] | null; headers: Record<string, string> }[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(asOf));
    orgId = await seedOrganization(t.dataSource, {
      initiatives: INITIATIVES,
      budgetPeriodStart: '2026-04-01T00:00:00Z',
      budgetPeriodEnd: '2026-07-01T00:00:00Z',
      pools: Object.entries(POOL_TYPES).map(([poolId, instanceTypes]) => ({ poolId, instanceTypes })),
      allocations: INITIATIVES.flatMap((initiativeId) =>
        Object.keys(POOL_TYPES).map((poolId) => ({ initiativeId, poolId, allocatedGpuHours: 1000 })),
      ),
    });
    const token = async (role: 'ORG_ADMIN' | 'TEAM_LEAD' | 'MEMBER', initiativeIds: string[] = []) =>
      authHeaders(await createApiToken(t.dataSource, orgId, { role, initiativeIds }), orgId);
    scopes.push(
      { name: 'ORG_ADMIN', initiatives: null, headers: await token('ORG_ADMIN') },
      { name: 'TEAM_LEAD', initiatives: ['init-b'], headers: await token('TEAM_LEAD', ['init-b']) },
      {
        name: 'MEMBER',
        initiatives: ['init-a', 'init-c'],
        headers: await token('MEMBER', ['init-a', 'init-c']),
      },
    );
    rows = await insertWorkloads(t.dataSource, orgId, workloadSeeds());
  });

  afterAll(() => t.close());

  const inScope = (initiatives: string[] | null) =>
    rows.filter((row) => initiatives === null || initiatives.includes(row.initiativeId));

  async function expectWorkloadWaits() {
    for (const scope of scopes) {
      const { body } = await request(t.server)
        .get('/v1/workloads')
        .query({ limit: 100 })
        .set(scope.headers)
        .expect(200);
      expect(body.metadata.as_of).toBe(asOf.toISOString());
      const visible = inScope(scope.initiatives);
      expect(body.data.workloads).toHaveLength(visible.length);
      for (const item of body.data.workloads as { workload_id: string; wait_seconds: number | null }[]) {
        const row = visible.find((candidate) => candidate.workloadId === item.workload_id)!;
        expect({ id: item.workload_id, wait: item.wait_seconds }).toEqual({
          id: row.workloadId,
          wait: expectedWait(row, asOf),
        });
      }
    }
    // The detail, for one of each kind: started, pending (so far), cancelled before starting.
    const samples = [
      rows.find((row) => row.startedAt !== null && row.status === 'running'),
      rows.find((row) => row.status === 'pending'),
      rows.find((row) => row.status === 'cancelled' && row.startedAt === null),
    ];
    for (const row of samples) {
      const { body } = await request(t.server)
        .get(`/v1/workloads/${row!.workloadId}`)
        .set(scopes[0].headers)
        .expect(200);
      expect(body.data.wait_seconds).toBe(expectedWait(row!, asOf));
    }
  }

  /** The rows a stats answer covers: scope, filters, and submission in the answer's range. */
  function covered(initiatives: string[] | null, filters: Record<string, string>, from: number, to: number) {
    return inScope(initiatives).filter(
      (row) =>
        (filters.initiative_id === undefined || row.initiativeId === filters.initiative_id) &&
        (filters.cluster_id === undefined || row.clusterId === filters.cluster_id) &&
        row.submittedAt.getTime() >= from &&
        row.submittedAt.getTime() < to,
    );
  }

  function expectGroups(entries: Record<string, unknown>[], set: WorkloadRow[], groupBy: GroupBy) {
    expect(entries.map((entry) => entry[groupBy]).sort()).toEqual(
      [...new Set(set.map(KEY_OF[groupBy]))].sort(),
    );
    for (const entry of entries) {
      const own = set.filter((row) => KEY_OF[groupBy](row) === entry[groupBy]);
      expect({ key: entry[groupBy], ...queueFieldsOf(entry as unknown as Figures) }).toEqual({
        key: entry[groupBy],
        ...queueFiguresOf(own),
      });
    }
  }

  async function expectStatistics() {
    const ranges: Record<string, string>[] = [
      { start_date: '2026-05-01T10:30:00Z', end_date: '2026-05-05T17:45:00Z' },
      { time_range: 'last_7_days' },
    ];
    let checked = 0;
    for (const scope of scopes) {
      const filters: Record<string, string>[] = [
        {},
        { initiative_id: scope.initiatives?.[0] ?? 'init-a' },
        { cluster_id: 'c-west' },
      ];
      for (const range of ranges)
        for (const filter of filters)
          for (const groupBy of GROUPS) {
            const query = { ...range, ...filter, interval: 'day', ...(groupBy ? { group_by: groupBy } : {}) };
            const { body } = await request(t.server)
              .get('/v1/workloads/stats')
              .query(query)
              .set(scope.headers)
              .expect(200);
            const from = Date.parse(body.data.range.start);
            const to = Date.parse(body.data.range.end);
            if (range.time_range) {
              expect(to).toBe(asOf.getTime());
              expect(to - from).toBe(7 * DAY);
            }
            const set = covered(scope.initiatives, filter, from, to);
            expect(queueFieldsOf(body.data.summary)).toEqual(queueFiguresOf(set));
            if (groupBy) expectGroups(body.data.grouped, set, groupBy);
            for (const bucket of body.data.timeline) {
              const inBucket = set.filter(
                (row) =>
                  row.submittedAt.getTime() >= Date.parse(bucket.bucket_start) &&
                  row.submittedAt.getTime() < Date.parse(bucket.bucket_end),
              );
              expect(queueFieldsOf(bucket)).toEqual(queueFiguresOf(inBucket));
              if (groupBy) expectGroups(bucket.grouped, inBucket, groupBy);
            }
            checked += 1;
          }
    }
    expect(checked).toBe(scopes.length * ranges.length * 3 * GROUPS.length);
  }

  async function expectCapacity() {
    for (const scope of scopes) {
      const filters: Record<string, string>[] = [
        {},
        { initiative_id: scope.initiatives?.[0] ?? 'init-a' },
        { cluster_id: 'c-west' },
        { pool_id: 'pool-2' },
      ];
      for (const filter of filters) {
        const { body } = await request(t.server)
          .get('/v1/capacity')
          .query(filter)
          .set(scope.headers)
          .expect(200);
        const visible = inScope(scope.initiatives).filter(
          (row) =>
            (filter.initiative_id === undefined || row.initiativeId === filter.initiative_id) &&
            (filter.cluster_id === undefined || row.clusterId === filter.cluster_id),
        );
        const pools = body.data.pools as {
          pool_id: string;
          pending_gpu_share: number;
          queue_wait_p95_seconds: number | null;
        }[];
        expect(pools.map((pool) => pool.pool_id)).toEqual(
          filter.pool_id ? [filter.pool_id] : Object.keys(POOL_TYPES),
        );
        for (const pool of pools) {
          const own = visible.filter((row) => POOL_TYPES[pool.pool_id].includes(row.instanceType));
          const pendingUnits = own
            .filter((row) => row.status === 'pending')
            .reduce((sum, row) => sum + row.shareUnits, 0);
          const waits = own
            .filter(
              (row) =>
                row.startedAt !== null &&
                row.submittedAt.getTime() >= asOf.getTime() - 7 * DAY &&
                row.submittedAt.getTime() < asOf.getTime(),
            )
            .map(waitOf)
            .sort((a, b) => a - b);
          expect({
            pool: pool.pool_id,
            pending: pool.pending_gpu_share,
            p95: pool.queue_wait_p95_seconds,
          }).toEqual({
            pool: pool.pool_id,
            pending: Math.round((pendingUnits / 5040) * 10_000) / 10_000,
            p95: percentileFigure(
              waits.length === 0 ? null : Math.round(percentileCont(waits, 0.95) * 10_000) / 10_000,
            ),
          });
        }
      }
    }
  }

  async function expectEverything() {
    await expectWorkloadWaits();
    await expectStatistics();
    await expectCapacity();
  }

  it('holds a guard: the data have waits, ties, pending and shared GPUs in every initiative', () => {
    for (const initiative of INITIATIVES) {
      const own = rows.filter((row) => row.initiativeId === initiative);
      expect(own.some((row) => row.status === 'pending')).toBe(true);
      expect(own.filter((row) => row.startedAt !== null).length).toBeGreaterThan(5);
    }
    const waits = rows.filter((row) => row.startedAt !== null).map(waitOf);
    expect(new Set(waits).size).toBeLessThan(waits.length);
    expect(Math.max(...waits)).toBeGreaterThan(HOUR / 1000);
    expect(rows.some((row) => row.status === 'cancelled' && row.startedAt === null)).toBe(true);
    expect(rows.some((row) => row.shareUnits % 5040 !== 0)).toBe(true);
  });

  it('equal the recomputation at the first as_of', async () => {
    await expectEverything();
  });

  it('carry the same figures in the CSV exports', async () => {
    const csv = async (path: string) => {
      const response = await request(t.server)
        .get(path)
        .set(scopes[0].headers)
        .set('Accept', 'text/csv')
        .expect(200);
      return parse<Record<string, string>>(response.text, { columns: true, record_delimiter: '\r\n' });
    };
    const cell = (value: number | string | null) => (value === null ? '' : String(value));
    const list = await csv('/v1/workloads');
    expect(list).toHaveLength(rows.length);
    for (const line of list) {
      const row = rows.find((candidate) => candidate.workloadId === line.workload_id)!;
      expect({ id: line.workload_id, wait: line.wait_seconds }).toEqual({
        id: row.workloadId,
        wait: cell(expectedWait(row, asOf)),
      });
    }
    const byTeam = await csv('/v1/workloads/stats?time_range=last_7_days&group_by=initiative_id');
    for (const line of byTeam) {
      const figures = queueFiguresOf(
        rows.filter(
          (row) =>
            row.initiativeId === line.initiative_id &&
            row.submittedAt.getTime() >= asOf.getTime() - 7 * DAY &&
            row.submittedAt.getTime() < asOf.getTime(),
        ),
      );
      expect(line).toMatchObject({
        queue_wait_started: cell(figures.queue_wait.started),
        queue_wait_p50_seconds: figures.queue_wait.p50_seconds ?? '',
        queue_wait_p95_seconds: figures.queue_wait.p95_seconds ?? '',
        queue_wait_max_seconds: cell(figures.queue_wait.max_seconds),
        pending_count: cell(figures.pending.count),
        pending_gpu_share: cell(figures.pending.gpu_share),
        pending_oldest_submitted_at: cell(figures.pending.oldest_submitted_at),
      });
    }
    const capacity = (await request(t.server).get('/v1/capacity').set(scopes[0].headers).expect(200)).body
      .data;
    const poolLines = (await csv('/v1/capacity')).filter((line) => line.kind === 'pool');
    expect(poolLines.map((line) => [line.id, line.pending_gpu_share, line.queue_wait_p95_seconds])).toEqual(
      capacity.pools.map(
        (pool: { pool_id: string; pending_gpu_share: number; queue_wait_p95_seconds: number | null }) => [
          pool.pool_id,
          cell(pool.pending_gpu_share),
          cell(pool.queue_wait_p95_seconds),
        ],
      ),
    );
  });

  it('follow pending workloads that start or are cancelled, a run that ends and a change of team', async () => {
    asOf = new Date(asOf.getTime() + 2 * HOUR + 13 * MINUTE + 7_890);
    const pending = rows.filter((row) => row.status === 'pending');
    const [starts, cancelled] = [pending[0], pending[1]];
    const running = rows.find((row) => row.status === 'running')!;
    const moved = rows.find(
      (row) =>
        row.status === 'pending' && row.initiativeId !== 'init-b' && row !== starts && row !== cancelled,
    )!;
    starts.status = 'running';
    starts.startedAt = new Date(asOf.getTime() - 17 * MINUTE - 250);
    cancelled.status = 'cancelled';
    cancelled.completedAt = new Date(asOf.getTime() - MINUTE);
    running.status = 'completed';
    running.completedAt = new Date(asOf.getTime() - 5 * MINUTE);
    running.exitCode = 0;
    moved.initiativeId = 'init-b';
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET status = 'running', started_at = $3 WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, starts.workloadId, starts.startedAt],
    );
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET status = 'cancelled', completed_at = $3 WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, cancelled.workloadId, cancelled.completedAt],
    );
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET status = 'completed', completed_at = $3, exit_code = 0
       WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, running.workloadId, running.completedAt],
    );
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET initiative_id = 'init-b' WHERE organization_id = $1 AND workload_id = $2`,
      [orgId, moved.workloadId],
    );
    await expectEverything();
  });

  it('move with as_of: three days later the last 7 days and the waits so far are others', async () => {
    asOf = new Date(asOf.getTime() + 3 * DAY + 41 * MINUTE);
    await expectEverything();
  });
});
