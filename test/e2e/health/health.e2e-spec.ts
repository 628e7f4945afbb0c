import request from 'supertest';
import { createTestApp, TestApp } from '../../support/test-app';

describe('GET /v1/health', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await createTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('answers healthy without credentials or organization header', async () => {
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
});
