import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { proxiedUrl, TcpProxy } from '../../support/tcp-proxy';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';

/** PostgreSQL goes away and comes back (through a proxy only this app uses); the process stays up. */
describe('database outage', () => {
  const target = new URL(testDatabaseUrl());
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  let testApp: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    const port = await proxy.start();
    testApp = await createTestApp({}, proxiedUrl(testDatabaseUrl(), port));
    const orgId = await seedOrganization(testApp.dataSource);
    headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  });

  afterAll(async () => {
    await proxy.start().catch(() => undefined);
    await testApp.close();
    await proxy.stop();
  });

  it('turns health to 503 unhealthy and back to 200 without a restart', async () => {
    await request(testApp.server).get('/v1/health').expect(200);

    await proxy.stop();
    const down = await request(testApp.server).get('/v1/health').expect(503);
    expect(down.body).toEqual({
      data: {
        status: 'unhealthy',
        version: '1.4.0',
        timestamp: expect.any(String),
        checks: { database: 'down' },
      },
      request_id: expect.any(String),
    });

    const api = await request(testApp.server).get('/v1/workloads').set(headers).expect(503);
    expect(api.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(api.body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|postgres/i);

    await proxy.start();
    await waitFor(async () => (await request(testApp.server).get('/v1/health')).status === 200);
    const up = await request(testApp.server).get('/v1/health').expect(200);
    expect(up.body.data).toMatchObject({ status: 'healthy', checks: { database: 'ok' } });
    await request(testApp.server).get('/v1/workloads').set(headers).expect(200);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('condition not met in time');
}
