import request from 'supertest';
import { proxiedUrl, TcpProxy } from '../../support/tcp-proxy';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';

describe('GET /v1/health', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('answers healthy without credentials or organization header, with no redis check when REDIS_URL is unset', async () => {
    const response = await request(testApp.server).get('/v1/health').expect(200);
    expect(response.body).toEqual({
      data: {
        status: 'healthy',
        version: '1.4.0',
        timestamp: expect.any(String),
        checks: { database: 'ok' },
      },
      request_id: expect.any(String),
    });
    expect(new Date(response.body.data.timestamp).toISOString()).toBe(response.body.data.timestamp);
    expect(response.headers['x-request-id']).toBe(response.body.request_id);
  });

  it('answers liveness at /v1/health/live without credentials', async () => {
    const response = await request(testApp.server).get('/v1/health/live').expect(200);
    expect(response.body).toEqual({
      data: { status: 'alive', version: '1.4.0', timestamp: expect.any(String) },
      request_id: expect.any(String),
    });
    expect(response.headers['cache-control']).toBe('no-store');
    const write = await request(testApp.server).post('/v1/health/live').expect(405);
    expect(write.headers.allow).toBe('GET, HEAD');
  });

  it('refuses unknown query parameters like every other path (contract §1)', async () => {
    for (const path of ['/v1/health?verbose=1', '/v1/health/live?x=1']) {
      const response = await request(testApp.server).get(path).expect(400);
      expect(response.body.error).toEqual({
        code: 'VALIDATION_ERROR',
        message: expect.any(String),
        details: [expect.objectContaining({ location: 'query', issue: 'is not a known parameter' })],
      });
    }
  });

  it('documents both probes in the OpenAPI document', async () => {
    const { body } = await request(testApp.server).get('/v1/openapi.json').expect(200);
    expect(Object.keys(body.paths)).toEqual(expect.arrayContaining(['/v1/health', '/v1/health/live']));
    expect(Object.keys(body.paths['/v1/health/live'].get.responses).sort()).toEqual([
      '200',
      '400',
      '404',
      '405',
      '500',
    ]);
    expect(body.paths['/v1/health'].get.responses).toHaveProperty('503');
  });
});

/** Liveness must not depend on the database: an orchestrator would restart every replica in an outage. */
describe('liveness during a database outage', () => {
  const target = new URL(testDatabaseUrl());
  const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
  let testApp: TestApp;

  beforeAll(async () => {
    const port = await proxy.start();
    testApp = await createTestApp({}, proxiedUrl(testDatabaseUrl(), port));
  });

  afterAll(async () => {
    await testApp.close();
    await proxy.stop();
  });

  it('stays 200 alive while readiness answers 503', async () => {
    await proxy.stop();
    const ready = await request(testApp.server).get('/v1/health').expect(503);
    expect(ready.body.data.checks).toEqual({ database: 'down' });
    const live = await request(testApp.server).get('/v1/health/live').expect(200);
    expect(live.body.data.status).toBe('alive');
  });
});
