import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('errors, envelope and request ids', () => {
  let testApp: TestApp;
  let orgId: string;
  let headers: Record<string, string>;

  beforeAll(async () => {
    testApp = await createTestApp();
    orgId = await seedOrganization(testApp.dataSource);
    headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('answers an unknown path with NOT_FOUND in the error envelope', async () => {
    const response = await request(testApp.server).get('/v1/nothing-here').set(headers).expect(404);
    expect(response.body).toEqual({
      error: { code: 'NOT_FOUND', message: 'No such resource: GET /v1/nothing-here', details: [] },
      request_id: expect.stringMatching(UUID),
    });
  });

  it.each(['post', 'put', 'patch', 'delete'] as const)(
    'answers %s on an existing path with 405 and Allow',
    async (method) => {
      for (const path of [
        '/v1/workloads',
        '/v1/workloads/wl-1',
        '/v1/workloads/stats',
        '/v1/capacity',
        '/v1/health',
      ]) {
        const response = await request(testApp.server)[method](path).set(headers);
        expect(response.status).toBe(405);
        expect(response.headers.allow).toBe('GET, HEAD');
        expect(response.body).toEqual({
          error: {
            code: 'METHOD_NOT_ALLOWED',
            message: expect.stringContaining(method.toUpperCase()),
            details: [],
          },
          request_id: expect.any(String),
        });
      }
    },
  );

  it('answers a write method on an unknown path with 404', async () => {
    const response = await request(testApp.server).post('/v1/unknown').expect(404);
    expect(response.body.error.code).toBe('NOT_FOUND');
  });

  it('never answers OPTIONS with an error', async () => {
    for (const path of ['/v1/workloads', '/v1/health', '/v1/unknown']) {
      const response = await request(testApp.server).options(path);
      expect(response.status).toBe(204);
      expect(response.headers.allow).toContain('GET');
    }
  });

  it('answers HEAD like GET without a body', async () => {
    const health = await request(testApp.server).head('/v1/health').expect(200);
    expect(health.text).toBeUndefined();
    const list = await request(testApp.server).head('/v1/workloads').set(headers).expect(200);
    expect(list.headers['content-type']).toMatch(/json/);
    await request(testApp.server).head('/v1/workloads').expect(401);
  });

  it('rejects an unknown query parameter, naming it', async () => {
    const response = await request(testApp.server)
      .get('/v1/workloads?statuss=running')
      .set(headers)
      .expect(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(response.body.error.details).toEqual([
      { field: 'statuss', location: 'query', issue: 'is not a known parameter', value: 'running' },
    ]);
  });

  it('echoes a valid X-Request-Id in body and header', async () => {
    const response = await request(testApp.server)
      .get('/v1/workloads')
      .set({ ...headers, 'X-Request-Id': 'trace-42 abc' });
    expect(response.body.request_id).toBe('trace-42 abc');
    expect(response.headers['x-request-id']).toBe('trace-42 abc');
  });

  it('echoes the request id on errors too', async () => {
    const response = await request(testApp.server).get('/v1/nope').set('X-Request-Id', 'err-1').expect(404);
    expect(response.body.request_id).toBe('err-1');
    expect(response.headers['x-request-id']).toBe('err-1');
  });

  it('replaces an over-long or non-printable X-Request-Id with a new UUID', async () => {
    const long = await request(testApp.server).get('/v1/health').set('X-Request-Id', 'x'.repeat(129));
    expect(long.body.request_id).toMatch(UUID);
    expect(long.headers['x-request-id']).toBe(long.body.request_id);
    const exactly128 = await request(testApp.server).get('/v1/health').set('X-Request-Id', 'y'.repeat(128));
    expect(exactly128.body.request_id).toBe('y'.repeat(128));
    const unicode = await request(testApp.server).get('/v1/health').set('X-Request-Id', 'caf\u00e9');
    expect(unicode.body.request_id).toMatch(UUID);
  });

  it('generates a request id when none is sent, different per request', async () => {
    const first = await request(testApp.server).get('/v1/health');
    const second = await request(testApp.server).get('/v1/health');
    expect(first.body.request_id).toMatch(UUID);
    expect(first.body.request_id).not.toBe(second.body.request_id);
  });

  it('publishes the OpenAPI document without credentials', async () => {
    const response = await request(testApp.server).get('/v1/openapi.json').expect(200);
    expect(response.body.openapi).toMatch(/^3\./);
    expect(Object.keys(response.body.paths)).toEqual(expect.arrayContaining(['/v1/health', '/v1/workloads']));
  });
});

describe('rate limiting per credential', () => {
  let testApp: TestApp;
  let orgId: string;

  beforeAll(async () => {
    testApp = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3' });
    orgId = await seedOrganization(testApp.dataSource);
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('answers 429 RATE_LIMITED with Retry-After once a credential is over its limit', async () => {
    const first = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await request(testApp.server).get('/v1/workloads').set(first).expect(200);
    await request(testApp.server).get('/v1/workloads/stats').set(first).expect(200);
    await request(testApp.server).get('/v1/workloads').set(first).expect(200);
    const limited = await request(testApp.server).get('/v1/workloads').set(first).expect(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body).toEqual({
      error: { code: 'RATE_LIMITED', message: expect.any(String), details: [] },
      request_id: expect.any(String),
    });

    // The budget is the credential's, not a route's.
    await request(testApp.server).get('/v1/capacity').set(first).expect(429);

    // Another credential has its own budget, and health is never limited.
    const second = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    await request(testApp.server).get('/v1/workloads').set(second).expect(200);
    for (let i = 0; i < 5; i++) await request(testApp.server).get('/v1/health').expect(200);
  });
});
