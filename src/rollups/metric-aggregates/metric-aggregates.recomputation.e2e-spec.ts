import request from 'supertest';
import type { DataSource } from 'typeorm';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  writeAs,
} from '../../../test/support/factories';
import { createTestApp, type TestApp } from '../../../test/support/test-app';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'] as const;
const BASE = new Date('2026-04-05T23:00:00.000Z').getTime(); // two weekly partitions: crosses Monday 00:00
const STEP = 30_000;

type Row = [workloadId: string, step: number, values: [number, number, number, number]];

/** The importer's statement: one multi-row upsert that only rewrites rows whose values changed. */
async function upsert(dataSource: DataSource, orgId: string, rows: Row[]): Promise<void> {
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
    new Date(BASE),
    new Date(BASE + 1000 * STEP),
  ]);
  await writeAs(
    dataSource,
    `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, ${METRICS.join(', ')})
     SELECT $1, * FROM unnest($2::text[], $3::timestamptz[], $4::float8[], $5::float8[], $6::float8[], $7::float8[])
     ON CONFLICT (organization_id, workload_id, sampled_at) DO UPDATE
       SET ${METRICS.map((m) => `${m} = excluded.${m}`).join(', ')}
       WHERE (${METRICS.map((m) => `metric_samples.${m}`).join(', ')})
             IS DISTINCT FROM (${METRICS.map((m) => `excluded.${m}`).join(', ')})`,
    [
      orgId,
      rows.map((row) => row[0]),
      rows.map((row) => new Date(BASE + row[1] * STEP)),
      ...METRICS.map((_, index) => rows.map((row) => row[2][index])),
    ],
  );
}

/** The aggregate table next to the same figures recomputed from the raw samples, per workload. */
async function compare(dataSource: DataSource, orgId: string) {
  const select = (prefix: string) =>
    `sample_count::text, first_sampled_at, latest_sampled_at,
     ${METRICS.map((m) => `${prefix}${m}_sum::text AS ${m}_sum, ${prefix}${m}_min AS ${m}_min, ${prefix}${m}_max AS ${m}_max, ${prefix}${m}_latest AS ${m}_latest`).join(',\n')}`;
  const stored = await dataSource.query(
    `SELECT workload_id, ${select('')} FROM metric_aggregates WHERE organization_id = $1 ORDER BY workload_id`,
    [orgId],
  );
  const recomputed = await dataSource.query(
    `SELECT workload_id, ${select('r.')}
     FROM (
       SELECT workload_id, count(*) AS sample_count, min(sampled_at) AS first_sampled_at,
              max(sampled_at) AS latest_sampled_at,
              ${METRICS.map((m) => `sum(${m}::numeric) AS ${m}_sum, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max, (array_agg(${m} ORDER BY sampled_at DESC))[1] AS ${m}_latest`).join(',\n')}
       FROM metric_samples WHERE organization_id = $1 GROUP BY workload_id
     ) r ORDER BY workload_id`,
    [orgId],
  );
  const rankedTotals = await compareRankedTotals(dataSource, orgId);
  expect(rankedTotals.stored).toEqual(rankedTotals.recomputed);
  return { stored, recomputed };
}

const RANKED_METRICS = ['gpu_utilization', 'memory_utilization', 'power_usage'] as const;

/** The ranked endpoint's per (initiative, status) totals next to a recomputation from the aggregates. */
async function compareRankedTotals(dataSource: DataSource, orgId: string) {
  const sums = (prefix: string) =>
    RANKED_METRICS.map((m) => `trim_scale(${prefix}${m}_avg_sum)::text AS ${m}_avg_sum`).join(', ');
  const stored = await dataSource.query(
    `SELECT initiative_id, status, workload_count::text, ${sums('')}
     FROM metric_ranked_totals WHERE organization_id = $1 AND workload_count <> 0
     ORDER BY initiative_id, status`,
    [orgId],
  );
  const recomputed = await dataSource.query(
    `SELECT initiative_id, status, workload_count::text, ${sums('r.')}
     FROM (
       SELECT initiative_id, status, count(*) AS workload_count,
              ${RANKED_METRICS.map((m) => `sum(${m}_avg::numeric) AS ${m}_avg_sum`).join(', ')}
       FROM metric_aggregates
       WHERE organization_id = $1 AND sample_count > 0 AND initiative_id IS NOT NULL
       GROUP BY initiative_id, status
     ) r ORDER BY initiative_id, status`,
    [orgId],
  );
  return { stored, recomputed };
}

function randomValues(seed: number): [number, number, number, number] {
  const x = Math.sin(seed) * 10_000;
  const fraction = x - Math.floor(x);
  return [
    Math.round(fraction * 1000) / 10,
    Math.round((1 - fraction) * 1000) / 10,
    40 + fraction * 45.123,
    fraction * 700 + 0.1,
  ];
}

describe('metric aggregates stay equal to a recomputation from raw samples', () => {
  let t: TestApp;
  let orgId: string;
  let admin: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp();
    orgId = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await insertWorkloads(
      t.dataSource,
      orgId,
      ['agg-1', 'agg-2', 'agg-3'].map((workloadId) => ({ workloadId, status: 'completed' as const })),
    );
  });

  afterAll(() => t.close());

  it('after several imports, overlapping re-imports with changed values, identical re-imports and deletes', async () => {
    const batch = (workloadId: string, from: number, to: number, salt: number): Row[] =>
      Array.from({ length: to - from }, (_, i) => [
        workloadId,
        from + i,
        randomValues((from + i) * 7 + salt),
      ]);

    await upsert(t.dataSource, orgId, [...batch('agg-1', 0, 200, 1), ...batch('agg-2', 0, 100, 1)]);
    let { stored, recomputed } = await compare(t.dataSource, orgId);
    expect(stored).toEqual(recomputed);
    expect(stored.map((row: { sample_count: string }) => row.sample_count)).toEqual(['200', '100']);

    // Overlap: 150..249 of agg-1 again with changed values, so some rows update and some are new.
    await upsert(t.dataSource, orgId, [...batch('agg-1', 150, 250, 2), ...batch('agg-3', 0, 50, 1)]);
    ({ stored, recomputed } = await compare(t.dataSource, orgId));
    expect(stored).toEqual(recomputed);
    expect(stored.map((row: { sample_count: string }) => row.sample_count)).toEqual(['250', '100', '50']);

    // The same import again changes nothing.
    await upsert(t.dataSource, orgId, batch('agg-1', 150, 250, 2));
    expect((await compare(t.dataSource, orgId)).stored).toEqual(stored);

    // A re-import that rewrites the extremes and the latest sample of agg-2.
    await upsert(t.dataSource, orgId, [
      ['agg-2', 99, [0, 0, 0, 0]],
      ['agg-2', 0, [100, 100, 100, 1000]],
      ...batch('agg-2', 1, 99, 3),
    ]);
    ({ stored, recomputed } = await compare(t.dataSource, orgId));
    expect(stored).toEqual(recomputed);

    // Deletes: some samples, then all samples of one workload.
    await writeAs(
      t.dataSource,
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'agg-1' AND sampled_at > $2`,
      [orgId, new Date(BASE + 120 * STEP)],
    );
    await writeAs(
      t.dataSource,
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'agg-3'`,
      [orgId],
    );
    ({ stored, recomputed } = await compare(t.dataSource, orgId));
    expect(stored).toEqual(recomputed);
    expect(stored.map((row: { workload_id: string }) => row.workload_id)).toEqual(['agg-1', 'agg-2']);

    // A workload that changes status moves its averages to the other status's totals.
    await writeAs(
      t.dataSource,
      `UPDATE workloads SET status = 'failed' WHERE organization_id = $1 AND workload_id = 'agg-2'`,
      [orgId],
    );
    const moved = await compareRankedTotals(t.dataSource, orgId);
    expect(moved.stored).toEqual(moved.recomputed);
    expect(
      moved.stored.map((row: { status: string; workload_count: string }) => [row.status, row.workload_count]),
    ).toEqual([
      ['completed', '1'],
      ['failed', '1'],
    ]);
  });

  it('the ranked endpoint reports the raw lifetime average and latest sample', async () => {
    const raw: { workload_id: string; avg: number; current: number }[] = await t.dataSource.query(
      `SELECT workload_id, avg(power_usage) AS avg,
              (array_agg(power_usage ORDER BY sampled_at DESC))[1] AS current
       FROM metric_samples WHERE organization_id = $1 GROUP BY workload_id ORDER BY avg DESC`,
      [orgId],
    );
    const response = await request(t.server)
      .get('/v1/workloads/metrics?sort_by=power_usage')
      .set(admin)
      .expect(200);
    expect(response.body.data.workloads).toEqual(
      raw.map((row) => ({
        workload_id: row.workload_id,
        name: 'training-job',
        initiative_id: 'init-a',
        gpu_count: 1,
        gpu_share: 1,
        gpu_sharing: null,
        power_usage: {
          avg: Math.round(row.avg * 10_000) / 10_000,
          current: Math.round(row.current * 10_000) / 10_000,
        },
      })),
    );
  });
});
