import { connect } from 'node:net';
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
  let leftOver: (() => void) | undefined;

  afterEach(() => leftOver?.());

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

  it('with PORT=0 names the port the system picked, and answers there', async () => {
    const serve = await startServe({ DATABASE_URL: testDatabaseUrl(), PORT: '0' });
    leftOver = () => serve.child.exitCode === null && serve.child.kill('SIGKILL');
    const named = /listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(serve.output());
    expect(Number(named?.[1])).toBeGreaterThan(0);
    const health = await fetch(`http://127.0.0.1:${named?.[1]}/v1/health/live`);
    expect(health.status).toBe(200);
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  });

  it('stops promptly on SIGTERM while a client holds a half-sent request open', async () => {
    const serve = await startServe({ DATABASE_URL: testDatabaseUrl() });
    const socket = connect(serve.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ');
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 300));

    leftOver = () => {
      socket.destroy();
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    };

    serve.child.kill('SIGTERM');
    // Without the drain, the server waits for the headers (60 s by default) and this test times out.
    expect(await serve.exited).toBe(0);
    await closed;
    expect(serve.output()).toContain('SIGTERM received');
  }, 20_000);
});
