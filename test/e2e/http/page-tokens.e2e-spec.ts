import request from 'supertest';
import { filterFingerprint, KeysetCursorCodec } from '../../../src/common/pagination/keyset-cursor';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

/** The key every deployment without CURSOR_SECRET and JWT_SECRET used to sign page tokens with. */
const FORMER_CONSTANT = 'gpucap-default-cursor-key';

async function seed(testApp: TestApp) {
  const orgId = await seedOrganization(testApp.dataSource);
  await insertWorkloads(testApp.dataSource, orgId, [{ workloadId: 'wl-1' }, { workloadId: 'wl-2' }]);
  const headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
  return { orgId, headers };
}

/**
 * A token signed under another key: refused on next_token. Without that key the service cannot tell
 * a forgery from a token of an earlier process, so the issue names the restart and CURSOR_SECRET.
 */
function expectRefusedToken(response: request.Response) {
  expect(response.status).toBe(400);
  const issue = expect.stringMatching(
    /^(is not a token issued by this service|.*issued before the service restarted.*)$/,
  );
  expect(response.body.error).toEqual({
    code: 'VALIDATION_ERROR',
    message: expect.stringContaining("Invalid query parameter 'next_token': "),
    details: [{ field: 'next_token', location: 'query', issue, value: expect.any(String) }],
  });
}

describe('page tokens without CURSOR_SECRET (nor JWT_SECRET)', () => {
  let testApp: TestApp;
  let orgId: string;
  let headers: Record<string, string>;

  beforeAll(async () => {
    testApp = await createTestApp({ JWT_SECRET: '' });
    ({ orgId, headers } = await seed(testApp));
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('refuses a token forged with a key written in the source', async () => {
    const forged = KeysetCursorCodec.fromSecret(FORMER_CONSTANT).encode(
      { key: '2000-01-01 00:00:00+00', id: 'wl-9' },
      filterFingerprint({ organization: orgId }),
    );
    expectRefusedToken(
      await request(testApp.server).get('/v1/workloads').query({ next_token: forged }).set(headers),
    );
  });

  it('still pages with the tokens this process issued', async () => {
    const first = await request(testApp.server).get('/v1/workloads?limit=1').set(headers).expect(200);
    const next = await request(testApp.server)
      .get('/v1/workloads')
      .query({ limit: 1, next_token: first.body.metadata.next_token })
      .set(headers)
      .expect(200);
    const ids = [first, next].map((page) => page.body.data.workloads[0].workload_id);
    expect(ids.sort()).toEqual(['wl-1', 'wl-2']);
    expect(next.body.metadata.next_token).toBeNull();
  });
});

describe('page tokens signed with CURSOR_SECRET but holding a bad position', () => {
  const secret = 'cursor-secret-of-this-test';
  let testApp: TestApp;
  let orgId: string;
  let headers: Record<string, string>;

  beforeAll(async () => {
    testApp = await createTestApp({ CURSOR_SECRET: secret });
    ({ orgId, headers } = await seed(testApp));
  });

  afterAll(async () => {
    await testApp.close();
  });

  it.each([
    ['an unparsable timestamp', 'yesterday', 'wl-1'],
    ['a timestamp PostgreSQL cannot hold', '0000-01-01 00:00:00+00', 'wl-1'],
    ['an impossible date', '2026-02-30 00:00:00+00', 'wl-1'],
    ['an id that is no identifier', '2026-11-20 10:00:00+00', "wl' OR 1=1"],
  ])('answers 400 on next_token for %s, never 500', async (_case, key, id) => {
    const token = KeysetCursorCodec.fromSecret(secret).encode(
      { key, id },
      filterFingerprint({ organization: orgId }),
    );
    expectRefusedToken(
      await request(testApp.server).get('/v1/workloads').query({ next_token: token }).set(headers),
    );
  });

  it('honours a well-formed position signed with the shared secret (another replica)', async () => {
    const token = KeysetCursorCodec.fromSecret(secret).encode(
      { key: '2999-01-01 00:00:00+00', id: 'zz' },
      filterFingerprint({ organization: orgId }),
    );
    const response = await request(testApp.server)
      .get('/v1/workloads')
      .query({ next_token: token })
      .set(headers)
      .expect(200);
    expect(response.body.data.workloads).toHaveLength(2);
  });
});
