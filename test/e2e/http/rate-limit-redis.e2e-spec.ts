import Redis from 'ioredis';
import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { credentialCounterKey, redisAvailableForTests, TEST_REDIS_URL } from '../../support/redis';
import { createTestApp, TestApp } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';

async function redisHealth(app: TestApp): Promise<string> {
  return (await request(app.server).get('/v1/health')).body.data.checks.redis;
}

/** Two replicas sharing Redis share one budget per credential, as behind a load balancer. */
describe('rate limit shared across replicas through Redis', () => {
  let replicas: TestApp[] = [];
  let redis: Redis | undefined;

  beforeAll(async () => {
    if (!(await redisAvailableForTests('a rate limit shared across replicas through Redis'))) return;
    redis = new Redis(TEST_REDIS_URL);
    replicas = [
      await createTestApp({ RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: TEST_REDIS_URL }),
      await createTestApp({ RATE_LIMIT_PER_MINUTE: '4', REDIS_URL: TEST_REDIS_URL }),
    ];
    // Until its connection is ready a replica counts in-process, like during an outage.
    for (const replica of replicas) await waitFor(async () => (await redisHealth(replica)) === 'ok');
  });

  afterAll(async () => {
    for (const replica of replicas) await replica.close();
    redis?.disconnect();
  });

  it('counts requests to either replica against the same budget, kept in Redis', async () => {
    if (!redis) return;
    const [first, second] = replicas;
    const orgId = await seedOrganization(first.dataSource);
    const token = await createApiToken(first.dataSource, orgId, { role: 'ORG_ADMIN' });
    const headers = authHeaders(token, orgId);

    const remaining: string[] = [];
    for (const replica of [first, second, first, second]) {
      const response = await request(replica.server).get('/v1/workloads').set(headers).expect(200);
      remaining.push(response.headers['ratelimit-remaining']);
    }
    expect(remaining).toEqual(['3', '2', '1', '0']);

    for (const replica of [first, second]) {
      const limited = await request(replica.server).get('/v1/workloads').set(headers).expect(429);
      expect(limited.body.error.code).toBe('RATE_LIMITED');
      expect(limited.headers['retry-after']).toBe(limited.headers['ratelimit-reset']);
    }
    expect(await redis.get(credentialCounterKey(token))).toBe('6');
    const ttl = await redis.pttl(credentialCounterKey(token));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('reports Redis as ok in health while it is reachable', async () => {
    if (!redis) return;
    const health = await request(replicas[0].server).get('/v1/health').expect(200);
    expect(health.body.data.checks).toEqual({ database: 'ok', redis: 'ok' });
  });
});
