import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { startServe } from '../../support/serve-process';
import { proxiedUrl, TcpProxy } from '../../support/tcp-proxy';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';

const target = new URL(testDatabaseUrl());
const UNHEALTHY = {
  data: {
    status: 'unhealthy',
    version: '1.4.0',
    timestamp: expect.any(String),
    checks: { database: 'down' },
  },
  request_id: expect.any(String),
};

/** PostgreSQL goes away and comes back (through a proxy only this app uses); the process stays up. */
describe('database outage', () => {
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  let testApp: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    const port = await proxy.start();
    // The default statement bound (10 s): a frozen database must not make requests wait it out.
    testApp = await createTestApp({}, proxiedUrl(testDatabaseUrl(), port));
    const orgId = await seedOrganization(testApp.dataSource);
    headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  });

  afterAll(async () => {
    proxy.resume();
    await proxy.start().catch(() => undefined);
    await testApp.close();
    await proxy.stop();
  });

  it('turns health to 503 unhealthy and back to 200 without a restart', async () => {
    await request(testApp.server).get('/v1/health').expect(200);

    await proxy.stop();
    const down = await request(testApp.server).get('/v1/health').expect(503);
    expect(down.body).toEqual(UNHEALTHY);

    const api = await request(testApp.server).get('/v1/workloads').set(headers).expect(503);
    expect(api.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(api.body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|postgres/i);
    // A read that runs as a named prepared statement fails the same way.
    const detail = await request(testApp.server).get('/v1/workloads/wl-away').set(headers).expect(503);
    expect(detail.body.error.code).toBe('SERVICE_UNAVAILABLE');

    await proxy.start();
    await waitFor(async () => (await request(testApp.server).get('/v1/health')).status === 200);
    const up = await request(testApp.server).get('/v1/health').expect(200);
    expect(up.body.data).toMatchObject({ status: 'healthy', checks: { database: 'ok' } });
    await request(testApp.server).get('/v1/workloads').set(headers).expect(200);
    await request(testApp.server).get('/v1/workloads/wl-away').set(headers).expect(404);
  });

  it('answers 503 instead of waiting while the database is frozen, and recovers when it resumes', async () => {
    await request(testApp.server).get('/v1/workloads').set(headers).expect(200);

    proxy.freeze();
    // Pooled connections hang on a query, new ones on connect; the stall watch's own probe (SELECT 1 on
    // a connection of its own) finds the server gone and releases the wait, long before the 10 s bound.
    const [onPooled, health] = await Promise.all([
      request(testApp.server).get('/v1/workloads').set(headers),
      request(testApp.server).get('/v1/health'),
    ]);
    expect(onPooled.status).toBe(503);
    expect(onPooled.body).toEqual({
      error: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String), details: [] },
      request_id: expect.any(String),
    });
    expect(health.status).toBe(503);
    expect(health.body).toEqual(UNHEALTHY);
    // Found unresponsive: the next request is refused before it takes a connection.
    const refused = await request(testApp.server).get('/v1/capacity').set(headers).expect(503);
    expect(refused.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(refused.headers['retry-after']).toBe('5');

    proxy.resume();
    await waitFor(
      async () => (await request(testApp.server).get('/v1/workloads').set(headers)).status === 200,
    );
    const up = await request(testApp.server).get('/v1/health').expect(200);
    expect(up.body.data.checks).toEqual({ database: 'ok' });
  }, 20_000);
});

/** `gpucap serve` started while PostgreSQL cannot be reached stays up and serves once it can. */
describe('database away at boot', () => {
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  let headers: Record<string, string>;

  beforeAll(async () => {
    const setup = await createTestApp();
    const orgId = await seedOrganization(setup.dataSource);
    headers = authHeaders(await createApiToken(setup.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await setup.close();
  });

  afterAll(() => proxy.stop());

  it.each([[[]], [['--no-migrate']]])(
    'answers 503 until the database answers, then 200 (serve %j)',
    async (flags) => {
      const port = await proxy.start();
      await proxy.stop();
      const serve = await startServe({ DATABASE_URL: proxiedUrl(testDatabaseUrl(), port) }, 45_000, flags);
      try {
        const base = `http://127.0.0.1:${serve.port}`;
        const health = await fetch(`${base}/v1/health`);
        expect(health.status).toBe(503);
        expect(await health.json()).toEqual(UNHEALTHY);
        const api = await fetch(`${base}/v1/workloads`, { headers });
        expect(api.status).toBe(503);
        expect(((await api.json()) as { error: { code: string } }).error.code).toBe('SERVICE_UNAVAILABLE');

        await proxy.start(port);
        await waitFor(async () => (await fetch(`${base}/v1/health`)).status === 200, 20_000);
        const workloads = await fetch(`${base}/v1/workloads`, { headers });
        expect(workloads.status).toBe(200);
        expect(((await workloads.json()) as { data: { workloads: unknown[] } }).data.workloads).toEqual([]);
        expect(serve.child.exitCode).toBeNull();
      } finally {
        serve.child.kill('SIGTERM');
        await serve.exited;
        await proxy.stop();
      }
    },
  );
});

/** A database that answers, but not within the statement bound (here: a lock held elsewhere). */
describe('database too slow for the statement bound', () => {
  let testApp: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    testApp = await createTestApp({ DATABASE_STATEMENT_TIMEOUT_MS: '500' });
    const orgId = await seedOrganization(testApp.dataSource);
    headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  });

  afterAll(() => testApp.close());

  it('answers 503 with Retry-After, not 500, and 200 once the lock is gone', async () => {
    await request(testApp.server).get('/v1/workloads').set(headers).expect(200);
    const locker = testApp.dataSource.createQueryRunner();
    await locker.connect();
    try {
      await locker.startTransaction();
      await locker.query('LOCK TABLE workloads IN ACCESS EXCLUSIVE MODE');
      // A query not answered before, so the response cache cannot answer it.
      const slow = await request(testApp.server).get('/v1/workloads?limit=7').set(headers).expect(503);
      expect(slow.headers['retry-after']).toBe('5');
      expect(slow.body.error).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        message: 'The database is unavailable or too slow right now; retry shortly',
        details: [],
      });
    } finally {
      await locker.rollbackTransaction();
      await locker.release();
    }
    await request(testApp.server).get('/v1/workloads?limit=7').set(headers).expect(200);
  });
});
