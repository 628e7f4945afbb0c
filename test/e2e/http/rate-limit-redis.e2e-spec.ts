import { createConnection } from 'node:net';
import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function redisReachable(): Promise<boolean> {
  const { hostname, port } = new URL(REDIS_URL);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Two replicas sharing Redis share one budget per credential, as behind a load balancer. */
describe('rate limit shared across replicas through Redis', () => {
  let replicas: TestApp[] = [];
  let available = false;

  beforeAll(async () => {
    available = await redisReachable();
    if (!available) return;
    replicas = [
      await createTestApp({ RATE_LIMIT_PER_MINUTE: '4', REDIS_URL }),
      await createTestApp({ RATE_LIMIT_PER_MINUTE: '4', REDIS_URL }),
    ];
  });

  afterAll(async () => {
    for (const replica of replicas) await replica.close();
  });

  it('counts requests to either replica against the same limit', async () => {
    if (!available) {
      console.warn(`Redis not reachable at ${REDIS_URL}: shared rate limit not exercised`);
      return;
    }
    const [first, second] = replicas;
    const orgId = await seedOrganization(first.dataSource);
    const headers = authHeaders(await createApiToken(first.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await request(first.server).get('/v1/workloads').set(headers).expect(200);
    await request(second.server).get('/v1/workloads').set(headers).expect(200);
    await request(first.server).get('/v1/workloads').set(headers).expect(200);
    await request(second.server).get('/v1/workloads').set(headers).expect(200);
    const limited = await request(first.server).get('/v1/workloads').set(headers).expect(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    await request(second.server).get('/v1/workloads').set(headers).expect(429);
  });
});
