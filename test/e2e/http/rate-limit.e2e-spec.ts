import request from 'supertest';
import { generateApiToken } from '../../../src/common/auth/api-token-format';
import { ApiTokenService } from '../../../src/common/auth/api-token.service';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const PROTECTED = '/v1/workloads';

function expectRateLimited(response: request.Response, limit: number): void {
  expect(response.status).toBe(429);
  expect(response.body).toEqual({
    error: { code: 'RATE_LIMITED', message: expect.any(String), details: [] },
    request_id: expect.any(String),
  });
  expect(response.headers['ratelimit-limit']).toBe(String(limit));
  expect(response.headers['ratelimit-remaining']).toBe('0');
  const reset = Number(response.headers['ratelimit-reset']);
  expect(reset).toBeGreaterThanOrEqual(1);
  expect(reset).toBeLessThanOrEqual(60);
  expect(response.headers['retry-after']).toBe(String(reset));
}

function expectNoLegacyHeaders(response: request.Response): void {
  expect(Object.keys(response.headers).filter((name) => /x-ratelimit|per-credential/i.test(name))).toEqual(
    [],
  );
}

describe('rate limit per client address, before authentication', () => {
  let testApp: TestApp;
  let tokenLookups: jest.SpyInstance;

  beforeAll(async () => {
    testApp = await createTestApp({ RATE_LIMIT_PER_IP_PER_MINUTE: '3', RATE_LIMIT_PER_MINUTE: '100' });
    tokenLookups = jest.spyOn(testApp.app.get(ApiTokenService), 'verify');
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('refuses a flood of unknown tokens with 429 before any more of them reach the database', async () => {
    const statuses: number[] = [];
    let last: request.Response | undefined;
    for (let i = 0; i < 10; i++) {
      last = await request(testApp.server)
        .get(PROTECTED)
        .set(authHeaders(generateApiToken().token, 'org-any'));
      statuses.push(last.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
    expect(tokenLookups).toHaveBeenCalledTimes(3);
    expectRateLimited(last!, 3);
    expect(last!.body.error.message).toMatch(/client address/);
    expectNoLegacyHeaders(last!);
  });

  it('never limits health, readiness or liveness, even for an address over its budget', async () => {
    await request(testApp.server).get(PROTECTED).expect(429);
    for (let i = 0; i < 5; i++) {
      const ready = await request(testApp.server).get('/v1/health').expect(200);
      expect(ready.body.data.status).toBe('healthy');
      expect(ready.headers['ratelimit-limit']).toBeUndefined();
      const live = await request(testApp.server).get('/v1/health/live').expect(200);
      expect(live.body.data.status).toBe('alive');
    }
  });
});

describe('client address behind proxies (TRUSTED_PROXIES)', () => {
  const get = (app: TestApp, forwardedFor: string) =>
    request(app.server)
      .get(PROTECTED)
      .set('X-Forwarded-For', forwardedFor)
      .then((response) => response.status);

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy, so it cannot buy a fresh budget', async () => {
    const testApp = await createTestApp({ RATE_LIMIT_PER_IP_PER_MINUTE: '2' });
    try {
      expect([
        await get(testApp, '203.0.113.1'),
        await get(testApp, '203.0.113.2'),
        await get(testApp, '203.0.113.3'),
      ]).toEqual([401, 401, 429]);
    } finally {
      await testApp.close();
    }
  });

  it('counts per forwarded client behind a trusted proxy, using the hop the proxy saw, not a spoofed one', async () => {
    const testApp = await createTestApp({ RATE_LIMIT_PER_IP_PER_MINUTE: '2', TRUSTED_PROXIES: 'loopback' });
    try {
      expect([
        await get(testApp, '203.0.113.1'),
        await get(testApp, '198.51.100.7, 203.0.113.1'),
        await get(testApp, '198.51.100.8, 203.0.113.1'),
        await get(testApp, '203.0.113.2'),
      ]).toEqual([401, 401, 429, 401]);
    } finally {
      await testApp.close();
    }
  });
});

describe('rate limit per credential', () => {
  let testApp: TestApp;
  let orgId: string;

  beforeAll(async () => {
    testApp = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_PER_IP_PER_MINUTE: '100' });
    orgId = await seedOrganization(testApp.dataSource);
  });

  afterAll(async () => {
    await testApp.close();
  });

  const newHeaders = async () =>
    authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);

  it('reports the budget in standard headers and answers 429 with the seconds really left', async () => {
    const headers = await newHeaders();
    const first = await request(testApp.server).get(PROTECTED).set(headers).expect(200);
    expect(first.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '2' });
    expectNoLegacyHeaders(first);
    // A second into the window, the reset must say less than a full minute.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const second = await request(testApp.server).get(PROTECTED).set(headers).expect(200);
    expect(second.headers['ratelimit-remaining']).toBe('1');
    await request(testApp.server).get(PROTECTED).set(headers).expect(200);

    const limited = await request(testApp.server).get(PROTECTED).set(headers);
    expectRateLimited(limited, 3);
    expect(limited.body.error.message).toMatch(/credential/);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(59);
    expectNoLegacyHeaders(limited);
  });

  it('keeps one budget per credential: another token from the same address is still served', async () => {
    const exhausted = await newHeaders();
    for (let i = 0; i < 3; i++) await request(testApp.server).get(PROTECTED).set(exhausted).expect(200);
    await request(testApp.server).get(PROTECTED).set(exhausted).expect(429);
    const other = await request(testApp.server)
      .get(PROTECTED)
      .set(await newHeaders())
      .expect(200);
    expect(other.headers['ratelimit-remaining']).toBe('2');
  });
});
