import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { ResponseCache } from '../../../src/server/response-cache/response-cache';
import { WorkloadsService } from '../../../src/workloads/workloads.service';
import { pruneSamples } from '../../../src/cli/commands/prune.command';
import {
  authHeaders,
  createApiToken,
  importDocument,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  writeAs,
} from '../../support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { createTestApp, testDatabaseUrl, type TestApp } from '../../support/test-app';

/*
 * Warm reads: ETag / 304, Cache-Control, metadata.as_of, answers kept per scope and data
 * version, coalesced cold reads, and no stale answer after a write, on one replica and across two
 * (two apps on one database, as replicas behind a load balancer are).
 */

const NOW = new Date('2026-11-20T12:00:00.000Z');

function importedWorkload(organizationId: string, workloadId: string, initiativeId: string) {
  return {
    organization_id: organizationId,
    workload_id: workloadId,
    initiative_id: initiativeId,
    name: 'imported',
    status: 'completed',
    submitted_by: 'alice',
    instance_type: 'p5',
    gpu_count: 2,
    is_managed: true,
    cluster_id: 'c',
    namespace: 'n',
    submitted_at: '2026-11-20T08:00:00Z',
    started_at: '2026-11-20T08:01:00Z',
    completed_at: '2026-11-20T09:01:00Z',
    exit_code: 0,
  };
}

describe('response cache, ETag and as_of', () => {
  let a: TestApp;
  let b: TestApp;
  let org: string;
  let admin: Record<string, string>;
  let memberOfA: Record<string, string>;
  let memberOfB: Record<string, string>;
  let now: Date;

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({}, testDatabaseUrl());
    now = new Date(NOW);
    for (const app of [a, b]) jest.spyOn(app.app.get(Clock), 'now').mockImplementation(() => new Date(now));
    org = await seedOrganization(a.dataSource);
    admin = authHeaders(await createApiToken(a.dataSource, org, { role: 'ORG_ADMIN' }), org);
    memberOfA = authHeaders(
      await createApiToken(a.dataSource, org, { role: 'MEMBER', initiativeIds: ['init-a'] }),
      org,
    );
    memberOfB = authHeaders(
      await createApiToken(a.dataSource, org, { role: 'MEMBER', initiativeIds: ['init-b'] }),
      org,
    );
    await insertWorkloads(a.dataSource, org, [
      { workloadId: 'w-a', initiativeId: 'init-a', submittedAt: '2026-11-20T06:00:00Z' },
      { workloadId: 'w-b', initiativeId: 'init-b', submittedAt: '2026-11-20T07:00:00Z' },
    ]);
  });

  afterAll(async () => {
    await a.close();
    await b.close();
  });

  const list = (app: TestApp, headers: Record<string, string>, query = '') =>
    request(app.server).get(`/v1/workloads${query}`).set(headers);

  it('labels an answer with as_of, a stable ETag and its validity, and answers If-None-Match with 304', async () => {
    const before = Date.now();
    const first = await list(a, admin).expect(200);
    expect(first.body.metadata).toEqual({
      next_token: null,
      total_count: 2,
      as_of: NOW.toISOString(),
      data_as_of: expect.any(String),
      currency: null,
    });
    // On the primary: when its read began, on the database's clock (the same machine's here).
    const dataAsOf = Date.parse(first.body.metadata.data_as_of);
    expect(dataAsOf).toBeGreaterThanOrEqual(before - 1000);
    expect(dataAsOf).toBeLessThanOrEqual(Date.now() + 1000);
    expect(first.headers['x-data-as-of']).toBe(first.body.metadata.data_as_of);
    expect(first.headers['cache-control']).toBe('private, max-age=10');
    expect(first.headers.etag).toMatch(/^W\/"[A-Za-z0-9_-]{32}"$/);

    const again = await list(a, admin).expect(200);
    expect(again.headers.etag).toBe(first.headers.etag);
    // A kept answer states the freshness it was computed with, in its body and its header alike.
    expect(again.body.metadata.data_as_of).toBe(first.body.metadata.data_as_of);
    expect(again.headers['x-data-as-of']).toBe(first.body.metadata.data_as_of);
    expect(again.body.data).toEqual(first.body.data);
    expect(again.body.request_id).not.toBe(first.body.request_id);

    const notModified = await list(a, admin).set('If-None-Match', first.headers.etag).expect(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers.etag).toBe(first.headers.etag);

    const detail = await request(a.server).get('/v1/workloads/w-a').set(admin).expect(200);
    expect(detail.body.metadata).toEqual({
      as_of: NOW.toISOString(),
      data_as_of: expect.any(String),
      currency: null,
    });
    expect(detail.headers.etag).not.toBe(first.headers.etag);
  });

  it('never gives one scope the answer kept for another', async () => {
    const ofA = await list(a, memberOfA).expect(200);
    const ofB = await list(a, memberOfB).expect(200);
    expect(ofA.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toEqual(['w-a']);
    expect(ofB.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toEqual(['w-b']);
    expect(ofA.headers.etag).not.toBe(ofB.headers.etag);
    await list(a, memberOfB).set('If-None-Match', ofA.headers.etag).expect(200);
    const filtered = await list(a, admin, '?initiative_id=init-a').expect(200);
    expect(filtered.headers.etag).not.toBe(ofA.headers.etag);
  });

  it('keys a query by its parameters, whatever their order', async () => {
    const one = await list(a, admin, '?status=completed&limit=5').expect(200);
    const other = await list(a, admin, '?limit=5&status=completed').expect(200);
    expect(other.headers.etag).toBe(one.headers.etag);
    const different = await list(a, admin, '?limit=4&status=completed').expect(200);
    expect(different.headers.etag).not.toBe(one.headers.etag);
  });

  it('shows an import to the next request, on the replica that cached and on another', async () => {
    const before = await list(a, admin).expect(200);
    await list(b, admin).expect(200);
    await importDocument(a.dataSource, { workloads: [importedWorkload(org, 'w-new', 'init-a')] });
    for (const app of [a, b]) {
      const after = await list(app, admin).expect(200);
      expect(after.body.metadata.total_count).toBe(before.body.metadata.total_count + 1);
      expect(after.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toContain('w-new');
      expect(after.headers.etag).not.toBe(before.headers.etag);
      await list(app, admin).set('If-None-Match', before.headers.etag).expect(200);
    }
  });

  it('shows a moved workload at once to both scopes, on both replicas', async () => {
    for (const app of [a, b]) {
      await list(app, memberOfA).expect(200);
      await list(app, memberOfB).expect(200);
    }
    await writeAs(
      a.dataSource,
      `UPDATE workloads SET initiative_id = 'init-b' WHERE organization_id = $1 AND workload_id = 'w-a'`,
      [org],
    );
    for (const app of [b, a]) {
      const ofA = await list(app, memberOfA).expect(200);
      const ofB = await list(app, memberOfB).expect(200);
      expect(ofA.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).not.toContain('w-a');
      expect(ofB.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toContain('w-a');
    }
  });

  it('sees capacity changes (allocations are data too)', async () => {
    const before = await request(a.server).get('/v1/capacity').set(admin).expect(200);
    await a.dataSource.query(
      'INSERT INTO capacity_pools (organization_id, pool_id, name) VALUES ($1, $2, $3)',
      [org, 'pool-x', 'X'],
    );
    await a.dataSource.query(
      `INSERT INTO allocations (organization_id, initiative_id, pool_id, allocated_gpu_hours) VALUES ($1, 'init-a', 'pool-x', 77)`,
      [org],
    );
    const after = await request(a.server).get('/v1/capacity').set(admin).expect(200);
    expect(after.body.data.summary.total_allocated_gpu_hours).toBe(
      before.body.data.summary.total_allocated_gpu_hours + 77,
    );
  });

  it('recomputes an answer once its validity has passed, even with no write', async () => {
    const first = await list(a, admin, '?limit=3').expect(200);
    now = new Date(NOW.getTime() + 4_000);
    const within = await list(a, admin, '?limit=3').expect(200);
    expect(within.body.metadata.as_of).toBe(first.body.metadata.as_of);
    expect(within.headers['cache-control']).toBe('private, max-age=6');
    now = new Date(NOW.getTime() + 10_000);
    const later = await list(a, admin, '?limit=3').expect(200);
    expect(later.body.metadata.as_of).toBe(now.toISOString());
    expect(later.headers.etag).not.toBe(first.headers.etag);
    now = new Date(NOW);
  });

  it('recomputes a key in the background once half its validity has passed, serving the kept answer meanwhile', async () => {
    const first = await list(a, admin, '?limit=4').expect(200);
    now = new Date(NOW.getTime() + 6_000);
    const kept = await list(a, admin, '?limit=4').expect(200);
    expect(kept.body.metadata.as_of).toBe(first.body.metadata.as_of);
    let refreshed = kept;
    for (
      let attempt = 0;
      attempt < 50 && refreshed.body.metadata.as_of === first.body.metadata.as_of;
      attempt++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      refreshed = await list(a, admin, '?limit=4').expect(200);
    }
    expect(refreshed.body.metadata.as_of).toBe(now.toISOString());
    expect(refreshed.headers['cache-control']).toBe('private, max-age=10');
    now = new Date(NOW);
  });

  it('computes identical concurrent cold requests once', async () => {
    const cache = a.app.get(ResponseCache);
    const listed = jest.spyOn(a.app.get(WorkloadsService), 'list');
    const before = { ...cache.outcomes };
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        request(a.server).get('/v1/workloads?status=completed&limit=7').set(admin),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(200));
    expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    expect(listed).toHaveBeenCalledTimes(1);
    expect(cache.outcomes.miss - before.miss).toBe(1);
    expect(cache.outcomes.hit + cache.outcomes.coalesced - before.hit - before.coalesced).toBe(11);
    listed.mockRestore();
  });

  it('keeps errors and CSV out of the cache', async () => {
    const invalid = await list(a, admin, '?limit=0').expect(400);
    expect(invalid.headers.etag).toBeUndefined();
    const csv = await list(a, admin).set('Accept', 'text/csv').expect(200);
    expect(csv.headers.etag).toBeUndefined();
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
  });

  it('moves the data version with every kind of write, in the writing transaction', async () => {
    const version = async () =>
      (
        await a.dataSource.query(
          'SELECT version::text AS version FROM organization_data_versions WHERE organization_id = $1',
          [org],
        )
      )[0].version as string;
    const seen = [await version()];
    await a.dataSource.query(`UPDATE organizations SET name = 'renamed' WHERE organization_id = $1`, [org]);
    seen.push(await version());
    await a.dataSource.query(`UPDATE members SET role = role WHERE organization_id = $1 AND false`, [org]);
    seen.push(await version());
    await writeAs(
      a.dataSource,
      `DELETE FROM workloads WHERE organization_id = $1 AND workload_id = 'w-new'`,
      [org],
    );
    seen.push(await version());
    const runner = a.dataSource.createQueryRunner();
    await runner.startTransaction();
    await runner.query(`UPDATE initiatives SET name = 'x' WHERE organization_id = $1`, [org]);
    await runner.rollbackTransaction();
    await runner.release();
    seen.push(await version());
    expect(BigInt(seen[1])).toBeGreaterThan(BigInt(seen[0]));
    // A statement that changes no row, and a rolled-back one, leave the version (and the cache) alone.
    expect(seen[2]).toBe(seen[1]);
    expect(BigInt(seen[3])).toBeGreaterThan(BigInt(seen[2]));
    expect(seen[4]).toBe(seen[3]);
  });
});

describe('response cache after prune', () => {
  let db: OwnDatabase;
  let t: TestApp;

  beforeAll(async () => {
    // Prune drops weekly partitions shared by every organization: a database of its own.
    db = await createOwnDatabase('cache_prune');
    t = await createTestApp({}, db.url);
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
  });

  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('answers afresh once prune has dropped sample partitions (no trigger fires there)', async () => {
    const org = await seedOrganization(t.dataSource);
    const admin = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
    await insertWorkloads(t.dataSource, org, [
      {
        workloadId: 'old',
        status: 'completed',
        submittedAt: '2024-01-02T00:00:00Z',
        startedAt: '2024-01-02T00:01:00Z',
        completedAt: '2024-01-05T00:00:00Z',
        exitCode: 0,
      },
    ]);
    await insertSamples(t.dataSource, org, [
      { workloadId: 'old', at: '2024-01-03T00:00:00Z', gpuUtilization: 70 },
    ]);
    const path = '/v1/workloads/old/metrics?time_range=job_lifetime';
    const before = await request(t.server).get(path).set(admin).expect(200);
    expect(before.body.data.metrics.gpu_utilization.avg).toBe(70);
    const { partitions } = await pruneSamples(t.dataSource, new Date('2024-02-01T00:00:00Z'));
    expect(partitions.length).toBeGreaterThan(0);
    const after = await request(t.server).get(path).set(admin).expect(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body.data.metrics.gpu_utilization.avg).toBeNull();
  });
});
