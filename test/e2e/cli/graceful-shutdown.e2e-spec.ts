import { Client } from 'pg';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { startServe } from '../../support/serve-process';
import { createTestApp, testDatabaseUrl } from '../../support/test-app';

/**
 * SIGTERM while a request is in flight: the request is held inside the database (a lock the test
 * owns), the signal arrives, the lock is released, and the request still completes before exit.
 */
describe('gpucap serve: graceful shutdown', () => {
  let headers: Record<string, string>;

  beforeAll(async () => {
    const setup = await createTestApp();
    const orgId = await seedOrganization(setup.dataSource);
    headers = authHeaders(await createApiToken(setup.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await setup.close();
  });

  it('finishes in-flight requests on SIGTERM, exits 0, and starts again afterwards', async () => {
    const serve = await startServe({ DATABASE_URL: testDatabaseUrl() });
    const base = `http://127.0.0.1:${serve.port}`;
    expect((await fetch(`${base}/v1/health`)).status).toBe(200);

    const locker = new Client({ connectionString: testDatabaseUrl() });
    locker.on('error', () => undefined);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE');
    const inFlight = fetch(`${base}/v1/workloads`, { headers });
    await new Promise((resolve) => setTimeout(resolve, 500));

    serve.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(serve.child.exitCode).toBeNull();
    await locker.query('ROLLBACK');
    await locker.end();

    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: { workloads: unknown[] } }).data.workloads).toEqual([]);
    expect(await serve.exited).toBe(0);
    expect(serve.output()).toContain('SIGTERM received');

    const again = await startServe({ DATABASE_URL: testDatabaseUrl() });
    expect((await fetch(`http://127.0.0.1:${again.port}/v1/health`)).status).toBe(200);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });
});
