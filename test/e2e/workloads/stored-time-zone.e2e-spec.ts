import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/** Zones stored before import validated them must not break an organization's statistics. */
describe('statistics of an organization whose stored zone PostgreSQL does not know', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });

  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['today', '2026-11-23T00:00:00.000Z'],
    ['this_week', '2026-11-23T00:00:00.000Z'],
    ['this_month', '2026-11-01T00:00:00.000Z'],
  ])('answers %s in UTC instead of a 500', async (timeRange, start) => {
    const org = await seedOrganization(t.dataSource, { timezone: 'US/Pacific-New' });
    const headers = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
    jest.spyOn(t.app.get(Clock), 'now').mockReturnValue(new Date('2026-11-23T15:00:00Z'));
    const res = await request(t.server)
      .get('/v1/workloads/stats')
      .query({ time_range: timeRange })
      .set(headers);
    expect(res.status).toBe(200);
    expect(res.body.data.range).toEqual({ time_range: timeRange, start, end: '2026-11-23T15:00:00.000Z' });
  });
});
