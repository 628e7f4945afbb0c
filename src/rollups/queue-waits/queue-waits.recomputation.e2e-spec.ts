import request from 'supertest';
import type { DataSource } from 'typeorm';
import { authHeaders, createApiToken, seedOrganization, writeAs } from '../../../test/support/factories';
import { rollupResidue } from '../../../test/support/rollup-residue';
import { queueWaitHistogramsBackfill } from '../../database/backfills/1763800032000-queue-wait-histograms';
import { waitBlocksBackfill } from '../../database/backfills/1763800044000-wait-blocks';
import { runBackfillParts } from '../../../test/support/backfills';
import { createTestApp, TestApp } from '../../../test/support/test-app';

/*
 * workload_period_waits equals, row for row, its recomputation from the workloads (each wait's bucket
 * by the formula, not by the triggers' function) after every kind of write; and the statistics it
 * answers hold their bound against percentile_cont over the raw waits, for every scope, filter,
 * group and timeline bucket, over ranges that read block rows, day rows, hour rows and raw edges.
 */

const GAMMA = 1.02;
const COLUMNS = `organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type, gpu_count,
  is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code`;

/** Workloads over ~20 days with waits from 0 s to ~40 h, ties included; every status. */
async function generate(dataSource: DataSource, organizationId: string, count: number): Promise<void> {
  await writeAs(
    dataSource,
    `INSERT INTO workloads (${COLUMNS})
     SELECT $1, 'gen-' || g, 'init-' || (1 + g % 3), 'job', st, 'user' || (g % 5), 'type-' || (g % 4), 1 + g % 4,
            true, 'c-' || (g % 2), 'n', sub,
            CASE WHEN st = 'pending' OR (st = 'cancelled' AND g % 2 = 0) THEN NULL ELSE sub + wait END,
            CASE WHEN st IN ('pending', 'running') THEN NULL ELSE sub + wait + interval '10 minutes' END,
            CASE st WHEN 'completed' THEN 0 WHEN 'failed' THEN 1 ELSE NULL END
     FROM (SELECT g, timestamptz '2026-10-01T00:00:00Z' + (g * 7919 % 1728000) * interval '1 second' AS sub,
                  -- Squares spread the waits over every scale; g % 11 = 0 waits 0 s, g % 13 = 0 exactly 1 h.
                  CASE WHEN g % 11 = 0 THEN interval '0' WHEN g % 13 = 0 THEN interval '1 hour'
                       ELSE ((g * g) % 150000) * interval '1 second' + interval '0.6 seconds' END AS wait,
                  (ARRAY['completed','completed','failed','cancelled','running','pending'])[1 + g % 6] AS st
           FROM generate_series(1, $2::int) g) s`,
    [organizationId, count],
  );
}

/** Rows of the table that differ from the recomputation, both ways. */
async function differences(dataSource: DataSource, organizationId: string): Promise<number> {
  const [row] = await dataSource.query(
    `WITH waits AS (
       SELECT *, floor(extract(epoch FROM started_at - submitted_at))::bigint AS wait
       FROM workloads WHERE organization_id = $1 AND started_at IS NOT NULL),
     raw AS (
       SELECT organization_id, p.period, d.dimension,
              CASE WHEN p.block_days IS NULL THEN date_trunc(p.period, submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                   -- Blocks of whole UTC days counted from the epoch.
                   ELSE (date '1970-01-01' + ((submitted_at AT TIME ZONE 'UTC')::date - date '1970-01-01') / p.block_days * p.block_days)::timestamp
                        AT TIME ZONE 'UTC' END AS bucket_start,
              initiative_id, d.dimension_value,
              (CASE WHEN wait = 0 THEN 0 ELSE 1 + ceil(ln(wait) / ln($2::float8)) END)::smallint AS wait_bucket,
              count(*)::bigint, sum(wait)::bigint, max(wait)::bigint, cluster_id
       FROM waits
       CROSS JOIN (VALUES ('day', NULL), ('hour', NULL), ('days16', 16)) AS p (period, block_days)
       CROSS JOIN LATERAL (VALUES ('none', ''), ('instance_type', instance_type))
         AS d (dimension, dimension_value)
       GROUP BY 1, 2, 3, 4, 5, 6, 7, cluster_id),
     rolled AS (SELECT * FROM workload_period_waits WHERE organization_id = $1)
     SELECT (SELECT count(*) FROM (SELECT * FROM raw EXCEPT SELECT * FROM rolled) a)
          + (SELECT count(*) FROM (SELECT * FROM rolled EXCEPT SELECT * FROM raw) b) AS differences,
            (SELECT count(*) FROM rolled) AS rolled_rows`,
    [organizationId, GAMMA],
  );
  expect(Number(row.rolled_rows)).toBeGreaterThan(0);
  return Number(row.differences);
}

describe('queue-wait histograms: exact equality with raw rows', () => {
  let testApp: TestApp;
  let organizationId: string;
  let scopes: { name: string; headers: Record<string, string>; initiatives: string[] | null }[];

  beforeAll(async () => {
    testApp = await createTestApp();
    organizationId = await seedOrganization(testApp.dataSource, {
      initiatives: ['init-1', 'init-2', 'init-3'],
    });
    await generate(testApp.dataSource, organizationId, 2500);
    const token = async (role: 'ORG_ADMIN' | 'TEAM_LEAD' | 'MEMBER', initiativeIds?: string[]) =>
      authHeaders(
        await createApiToken(testApp.dataSource, organizationId, { role, initiativeIds }),
        organizationId,
      );
    scopes = [
      { name: 'ORG_ADMIN', headers: await token('ORG_ADMIN'), initiatives: null },
      { name: 'TEAM_LEAD', headers: await token('TEAM_LEAD', ['init-2']), initiatives: ['init-2'] },
      {
        name: 'MEMBER',
        headers: await token('MEMBER', ['init-1', 'init-3']),
        initiatives: ['init-1', 'init-3'],
      },
    ];
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('matches after a bulk insert', async () => {
    expect(await differences(testApp.dataSource, organizationId)).toBe(0);
  });

  it('matches after starts, moves, changed and removed largest waits, deletes and re-imports', async () => {
    const ds = testApp.dataSource;
    // Pending workloads start: waits appear.
    await writeAs(
      ds,
      `UPDATE workloads SET status = 'running', started_at = submitted_at + interval '45 minutes'
       WHERE organization_id = $1 AND status = 'pending' AND workload_id LIKE 'gen-1%'`,
      [organizationId],
    );
    // Running ones finish: the waits stay, nothing may change.
    await writeAs(
      ds,
      `UPDATE workloads SET status = 'completed', completed_at = started_at + interval '1 hour', exit_code = 0
       WHERE organization_id = $1 AND status = 'running' AND workload_id LIKE 'gen-2%'`,
      [organizationId],
    );
    expect(await differences(ds, organizationId)).toBe(0);
    // The largest wait of every hour row loses its workload's start: those maxima are recomputed.
    await writeAs(
      ds,
      `UPDATE workloads w SET started_at = submitted_at + interval '2 seconds'
       FROM (SELECT DISTINCT ON (date_trunc('hour', submitted_at), initiative_id) workload_id
             FROM workloads WHERE organization_id = $1 AND started_at IS NOT NULL
             ORDER BY date_trunc('hour', submitted_at), initiative_id, started_at - submitted_at DESC) AS top
       WHERE w.organization_id = $1 AND w.workload_id = top.workload_id`,
      [organizationId],
    );
    // Team, submitter and submission moves; deletes.
    await writeAs(
      ds,
      `UPDATE workloads SET initiative_id = 'init-2', submitted_by = 'moved', submitted_at = submitted_at - interval '3 hours'
       WHERE organization_id = $1 AND workload_id LIKE 'gen-3%'`,
      [organizationId],
    );
    await writeAs(ds, `DELETE FROM workloads WHERE organization_id = $1 AND workload_id LIKE 'gen-4%'`, [
      organizationId,
    ]);
    expect(await differences(ds, organizationId)).toBe(0);
    // One statement removing a bucket's largest wait while adding others of the same count and sum.
    await writeAs(
      ds,
      `UPDATE workloads SET started_at = started_at + CASE WHEN workload_id = 'gen-5' THEN interval '-1 second' ELSE interval '1 second' END
       WHERE organization_id = $1 AND workload_id IN ('gen-5', 'gen-7') AND started_at IS NOT NULL`,
      [organizationId],
    );
    // An upsert import of existing rows with new types and starts, and an identical one.
    const upsert = `INSERT INTO workloads AS w (${COLUMNS})
       SELECT organization_id, workload_id, initiative_id, name, status, submitted_by, 'type-new', gpu_count,
              is_managed, cluster_id, namespace, submitted_at, started_at + interval '17 minutes', completed_at + interval '17 minutes', exit_code
       FROM workloads WHERE organization_id = $1 AND workload_id LIKE 'gen-6%' AND started_at IS NOT NULL
       ON CONFLICT (organization_id, workload_id) DO UPDATE SET
         instance_type = excluded.instance_type, started_at = excluded.started_at, completed_at = excluded.completed_at`;
    await writeAs(ds, upsert, [organizationId]);
    expect(await differences(ds, organizationId)).toBe(0);
    await writeAs(
      ds,
      `INSERT INTO workloads (${COLUMNS}) SELECT ${COLUMNS} FROM workloads WHERE organization_id = $1 AND workload_id LIKE 'gen-8%'
       ON CONFLICT (organization_id, workload_id) DO UPDATE SET started_at = excluded.started_at`,
      [organizationId],
    );
    expect(await differences(ds, organizationId)).toBe(0);
    expect((await rollupResidue(ds, organizationId)).workload_period_waits ?? []).toEqual([]);
  });

  it('are rebuilt by the backfill a month at a time, whatever the table held', async () => {
    const ds = testApp.dataSource;
    // A table the triggers left half kept: rows missing, rows wrong, a row that belongs to nothing.
    await ds.query(
      `DELETE FROM workload_period_waits WHERE organization_id = $1 AND period = 'hour' AND wait_bucket % 2 = 0`,
      [organizationId],
    );
    await ds.query(
      `UPDATE workload_period_waits SET started_count = started_count + 5 WHERE organization_id = $1 AND period = 'day'`,
      [organizationId],
    );
    await ds.query(
      `INSERT INTO workload_period_waits VALUES ($1, 'day', 'none', '2026-10-05T00:00:00Z', 'init-1', '', 999, 1, 1, 1)`,
      [organizationId],
    );
    expect(await differences(ds, organizationId)).toBeGreaterThan(0);
    expect(await runBackfillParts(ds, queueWaitHistogramsBackfill, organizationId)).toBeGreaterThanOrEqual(1);
    expect(await differences(ds, organizationId)).toBe(0);
  });

  it('blocks are rebuilt from the days by their backfill, whatever the table held', async () => {
    const ds = testApp.dataSource;
    await ds.query(
      `DELETE FROM workload_period_waits WHERE organization_id = $1 AND period = 'days16' AND wait_bucket % 2 = 0`,
      [organizationId],
    );
    await ds.query(
      `UPDATE workload_period_waits SET wait_seconds_max = wait_seconds_max + 1 WHERE organization_id = $1 AND period = 'days16'`,
      [organizationId],
    );
    expect(await differences(ds, organizationId)).toBeGreaterThan(0);
    expect(await runBackfillParts(ds, waitBlocksBackfill, organizationId)).toBe(1);
    expect(await differences(ds, organizationId)).toBe(0);
  });

  it('answer p50 and p95 within 1 % of percentile_cont, the rest exactly, in every scope, filter and group', async () => {
    const ranges = [
      // Whole days, whole hours of edge days and partial hours.
      { start_date: '2026-10-02T05:17:00Z', end_date: '2026-10-15T19:41:30Z' },
      { start_date: '2026-10-03T00:00:00Z', end_date: '2026-10-04T00:00:00Z' },
      // A 16-day block too.
      { start_date: '2026-09-25T03:00:00Z', end_date: '2026-10-27T10:00:00Z' },
    ];
    const filters: Record<string, string>[] = [{}, { initiative_id: 'init-2' }, { cluster_id: 'c-1' }];
    const groups = [undefined, 'initiative_id', 'submitted_by', 'instance_type', 'cluster_id'];
    let compared = 0;
    for (const scope of scopes)
      for (const range of ranges)
        for (const filter of filters)
          for (const groupBy of groups) {
            if (
              filter.initiative_id &&
              scope.initiatives &&
              !scope.initiatives.includes(filter.initiative_id)
            )
              continue;
            const { body } = await request(testApp.server)
              .get('/v1/workloads/stats')
              .query({ ...range, ...filter, ...(groupBy ? { group_by: groupBy } : {}) })
              .set(scope.headers)
              .expect(200);
            const raw = await rawWaitFigures(
              testApp.dataSource,
              organizationId,
              groupBy,
              range.start_date,
              range.end_date,
              {
                initiatives: scope.initiatives,
                initiativeId: filter.initiative_id,
                clusterId: filter.cluster_id,
              },
            );
            compared += compareWithRaw(body.data.summary.queue_wait, body.data.grouped, groupBy, raw);
          }
    expect(compared).toBeGreaterThan(150);
  });

  it('answer each timeline bucket within the same bound, buckets cut across blocks', async () => {
    const RANGE = { start_date: '2026-09-25T03:00:00Z', end_date: '2026-10-27T10:00:00Z' };
    let compared = 0;
    for (const scope of scopes)
      for (const groupBy of [undefined, 'initiative_id']) {
        const { body } = await request(testApp.server)
          .get('/v1/workloads/stats')
          .query({
            ...RANGE,
            interval: 'week',
            ...(groupBy ? { group_by: groupBy } : {}),
          })
          .set(scope.headers)
          .expect(200);
        for (const bucket of body.data.timeline) {
          const raw = await rawWaitFigures(
            testApp.dataSource,
            organizationId,
            groupBy,
            bucket.bucket_start < RANGE.start_date ? RANGE.start_date : bucket.bucket_start,
            bucket.bucket_end > RANGE.end_date ? RANGE.end_date : bucket.bucket_end,
            { initiatives: scope.initiatives },
          );
          compared += compareWithRaw(bucket.queue_wait, bucket.grouped, groupBy, raw);
        }
      }
    expect(compared).toBeGreaterThan(20);
  });
});

/**
 * Started, average, percentile_cont and largest of the raw waits submitted in [from, to), in the
 * scope's initiatives and the filters, per `groupBy` (one row without).
 */
async function rawWaitFigures(
  dataSource: DataSource,
  organizationId: string,
  groupBy: string | undefined,
  from: string,
  to: string,
  filters: { initiatives: string[] | null; initiativeId?: string; clusterId?: string },
): Promise<Record<string, unknown>[]> {
  const key = groupBy ?? 'NULL::text';
  return dataSource.query(
    `SELECT ${key}::text AS group_key, count(*)::int AS started, round(avg(wait)::numeric, 4)::float8 AS avg,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY wait) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY wait) AS p95, max(wait)::float8 AS max
     FROM (SELECT *, floor(extract(epoch FROM started_at - submitted_at))::float8 AS wait FROM workloads) w
     WHERE organization_id = $1 AND started_at IS NOT NULL AND submitted_at >= $2 AND submitted_at < $3
       AND ($4::text[] IS NULL OR initiative_id = ANY ($4)) AND ($5::text IS NULL OR initiative_id = $5)
       AND ($6::text IS NULL OR cluster_id = $6)
     GROUP BY ${key}`,
    [organizationId, from, to, filters.initiatives, filters.initiativeId ?? null, filters.clusterId ?? null],
  );
}

/** An answer's queue figures (its summary's, or each group's) against the raw ones: how many were compared. */
function compareWithRaw(
  summary: Record<string, number | null>,
  grouped: Record<string, unknown>[] | undefined,
  groupBy: string | undefined,
  raw: Record<string, unknown>[],
): number {
  const entries = groupBy
    ? grouped!.map((entry) => ({
        key: entry[groupBy] as string,
        figures: entry.queue_wait as Record<string, number | null>,
      }))
    : [{ key: null, figures: summary }];
  const started = entries.filter((entry) => (entry.figures.started ?? 0) > 0);
  expect(started.map((entry) => entry.key).sort()).toEqual(raw.map((row) => row.group_key).sort());
  for (const entry of started)
    expectWithinBound(
      entry.figures,
      raw.find((row) => row.group_key === entry.key)!,
    );
  return started.length;
}

/** Started, average and largest exactly; p50 and p95 within 1 % of percentile_cont's (and rounding). */
function expectWithinBound(figures: Record<string, number | null>, exact: Record<string, unknown>): void {
  expect([figures.started, figures.avg_seconds, figures.max_seconds]).toEqual([
    exact.started,
    exact.avg,
    exact.max,
  ]);
  for (const [figure, reference] of [
    ['p50_seconds', exact.p50],
    ['p95_seconds', exact.p95],
  ] as const) {
    const value = figures[figure]!;
    const bound = (reference as number) * 0.01 + 0.0001;
    expect({ figure, off: Math.abs(value - (reference as number)) <= bound }).toEqual({ figure, off: true });
  }
}
