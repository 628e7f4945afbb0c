import Redis from 'ioredis';
import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { TcpProxy } from '../../support/tcp-proxy';
import { credentialCounterKey, redisAvailableForTests, TEST_REDIS_URL } from '../../support/redis';
import { startServe } from '../../support/serve-process';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';

const redisTarget = new URL(TEST_REDIS_URL);
const newProxy = () => new TcpProxy(redisTarget.hostname, Number(redisTarget.port || 6379));
const proxiedRedisUrl = (port: number) => `redis://127.0.0.1:${port}`;

/**
 * Redis goes away (refusing, or silent) behind a proxy only this app uses: every request is still
 * answered, limits hold per replica in-process, health says degraded but stays 200, and the shared
 * counters are used again once Redis is back.
 */
describe('rate limiting while Redis is unreachable', () => {
  const proxy = newProxy();
  let testApp: TestApp | undefined;
  let redis: Redis;
  let orgId: string;

  const health = () => request(testApp!.server).get('/v1/health');
  const redisState = async () => (await health()).body.data.checks.redis;
  const freshToken = () => createApiToken(testApp!.dataSource, orgId, { role: 'ORG_ADMIN' });

  /** Limit 3: three answers, then a refusal, all counted without Redis. */
  async function expectLimitedInProcess(token: string): Promise<void> {
    const headers = authHeaders(token, orgId);
    const statuses: number[] = [];
    let last: request.Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await request(testApp!.server).get('/v1/workloads').set(headers);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.body.error.code).toBe('RATE_LIMITED');
    expect(last!.headers['retry-after']).toBe(last!.headers['ratelimit-reset']);
    expect(await redis.exists(credentialCounterKey(token))).toBe(0);
  }

  async function expectCountedInRedis(): Promise<void> {
    const token = await freshToken();
    await request(testApp!.server).get('/v1/workloads').set(authHeaders(token, orgId)).expect(200);
    expect(await redis.get(credentialCounterKey(token))).toBe('1');
  }

  beforeAll(async () => {
    if (!(await redisAvailableForTests('the rate limiter falling back while Redis is away'))) return;
    redis = new Redis(TEST_REDIS_URL);
    const port = await proxy.start();
    testApp = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3', REDIS_URL: proxiedRedisUrl(port) });
    orgId = await seedOrganization(testApp.dataSource);
    await waitFor(async () => (await redisState()) === 'ok');
  });

  afterAll(async () => {
    proxy.resume();
    await testApp?.close();
    await proxy.stop();
    redis?.disconnect();
  });

  it('answers from the in-process store while Redis refuses connections, then uses Redis again', async () => {
    if (!testApp) return;
    await expectCountedInRedis();

    await proxy.stop();
    await waitFor(async () => (await redisState()) === 'degraded');
    await expectLimitedInProcess(await freshToken());
    const degraded = await health().expect(200);
    expect(degraded.body.data).toMatchObject({
      status: 'healthy',
      checks: { database: 'ok', redis: 'degraded' },
    });

    await proxy.start();
    await waitFor(async () => (await redisState()) === 'ok');
    await expectCountedInRedis();
  });

  it('does not hang while Redis accepts connections but never answers, then uses Redis again', async () => {
    if (!testApp) return;
    await waitFor(async () => (await redisState()) === 'ok');
    proxy.freeze();
    await expectLimitedInProcess(await freshToken());
    const degraded = await health().expect(200);
    expect(degraded.body.data).toMatchObject({
      status: 'healthy',
      checks: { database: 'ok', redis: 'degraded' },
    });

    proxy.resume();
    await waitFor(async () => (await redisState()) === 'ok');
    await expectCountedInRedis();
  });
});

describe('gpucap serve logs a Redis outage once, not per request', () => {
  const proxy = newProxy();

  afterAll(async () => {
    await proxy.stop();
  });

  it('writes one structured warning when Redis goes away and one info line when it returns', async () => {
    if (!(await redisAvailableForTests('the logging of a Redis outage'))) return;
    const port = await proxy.start();
    const serve = await startServe({
      DATABASE_URL: testDatabaseUrl(),
      REDIS_URL: proxiedRedisUrl(port),
      LOG_LEVEL: 'info',
    });
    const base = `http://127.0.0.1:${serve.port}`;
    const redisState = async () =>
      ((await (await fetch(`${base}/v1/health`)).json()) as HealthBody).data.checks.redis;
    try {
      await waitFor(async () => (await redisState()) === 'ok');
      // Start-up is left out: a start slow enough to stall the event loop may log a blip of its own.
      const before = serve.output().length;
      const outputSinceOutage = () => serve.output().slice(before);
      await proxy.stop();
      await waitFor(async () => (await redisState()) === 'degraded');
      for (let i = 0; i < 20; i++) expect((await fetch(`${base}/v1/workloads`)).status).toBe(401);
      await proxy.start();
      await waitFor(async () => (await redisState()) === 'ok');
      await waitFor(async () => redisLines(outputSinceOutage()).length === 2);

      const [warning, recovery] = redisLines(outputSinceOutage());
      expect(warning).toMatchObject({ level: 'warn', context: 'RateLimit' });
      expect(['ECONNREFUSED', 'ECONNCLOSED', 'ECONNRESET']).toContain(warning.reason);
      expect(recovery).toMatchObject({ level: 'info', context: 'RateLimit' });
      expect(serve.output()).not.toMatch(/Unhandled error event/);
      expect(JSON.stringify([warning, recovery])).not.toMatch(/127\.0\.0\.1|redis:\/\//);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  });
});

interface HealthBody {
  data: { checks: { redis?: string } };
}

function redisLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => /^Redis /.test(String(entry.msg)));
}
