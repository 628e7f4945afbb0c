import { createHmac, generateKeyPairSync } from 'node:crypto';
import { createServer, Server } from 'node:http';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  signJwt,
  uniqueId,
} from '../../support/factories';
import { createTestApp, TestApp } from '../../support/test-app';

const PROTECTED = '/v1/workloads';
/** Every JWT failure but expiry and nbf says only this: jsonwebtoken's messages name the IdP. */
const NOT_VALID = /^The token is not valid$/;

function expectUnauthenticated(response: request.Response, messagePart?: RegExp) {
  expect(response.status).toBe(401);
  expect(response.headers['www-authenticate']).toBe('Bearer');
  expect(response.body).toEqual({
    error: { code: 'UNAUTHENTICATED', message: expect.any(String), details: [] },
    request_id: expect.any(String),
  });
  if (messagePart) expect(response.body.error.message).toMatch(messagePart);
}

describe('authentication and scope (HS256 JWTs and API tokens)', () => {
  let testApp: TestApp;
  let orgId: string;
  let otherOrgId: string;
  const member = 'member@example.com';

  beforeAll(async () => {
    testApp = await createTestApp();
    orgId = await seedOrganization(testApp.dataSource, {
      initiatives: ['init-a', 'init-b'],
      members: [
        { subject: member, role: 'MEMBER', initiativeIds: ['init-a'] },
        { subject: 'admin@example.com', role: 'ORG_ADMIN' },
      ],
    });
    otherOrgId = await seedOrganization(testApp.dataSource, {
      members: [{ subject: 'admin@example.com', role: 'MEMBER', initiativeIds: ['init-b'] }],
    });
    await insertWorkloads(testApp.dataSource, orgId, [
      { workloadId: 'wl-a', initiativeId: 'init-a' },
      { workloadId: 'wl-b', initiativeId: 'init-b' },
    ]);
  });

  afterAll(async () => {
    await testApp.close();
  });

  const get = (headers: Record<string, string>) => request(testApp.server).get(PROTECTED).set(headers);

  it('rejects a request with no bearer token', async () => {
    expectUnauthenticated(await get({ 'X-Organization-Id': orgId }), /Missing bearer token/);
  });

  it('rejects a non-Bearer Authorization scheme', async () => {
    expectUnauthenticated(await get({ Authorization: 'Basic abc', 'X-Organization-Id': orgId }), /Malformed/);
  });

  it('rejects a garbage token', async () => {
    expectUnauthenticated(await get(authHeaders('not-a-jwt', orgId)));
  });

  it('rejects an expired JWT (beyond the 30 s skew)', async () => {
    const token = signJwt({ sub: member, exp: Math.floor(Date.now() / 1000) - 60 });
    expectUnauthenticated(await get(authHeaders(token, orgId)), /^The token has expired$/);
  });

  it('accepts a JWT that expired within the 30 s clock skew', async () => {
    const token = signJwt({ sub: member, exp: Math.floor(Date.now() / 1000) - 10 });
    expect((await get(authHeaders(token, orgId))).status).toBe(200);
  });

  it('rejects a JWT that is not valid yet', async () => {
    const token = signJwt({ sub: member, nbf: Math.floor(Date.now() / 1000) + 600 });
    expectUnauthenticated(await get(authHeaders(token, orgId)), /^The token is not valid yet$/);
  });

  it('rejects a JWT without exp', async () => {
    const token = jwt.sign({ sub: member }, 'test-only-jwt-secret-not-for-production', {
      algorithm: 'HS256',
    });
    expectUnauthenticated(await get(authHeaders(token, orgId)));
  });

  it('rejects a JWT whose exp is beyond any number (1e400 reads as Infinity)', async () => {
    const encode = (text: string) => Buffer.from(text).toString('base64url');
    const signed = `${encode('{"alg":"HS256","typ":"JWT"}')}.${encode(`{"sub":"${member}","exp":1e400}`)}`;
    const signature = createHmac('sha256', 'test-only-jwt-secret-not-for-production')
      .update(signed)
      .digest('base64url');
    expectUnauthenticated(await get(authHeaders(`${signed}.${signature}`, orgId)));
  });

  it('rejects a JWT that names critical header parameters (RFC 7515 §4.1.11)', async () => {
    const token = signJwt({ sub: member }, { header: { alg: 'HS256', crit: ['exp-2'] } });
    expectUnauthenticated(await get(authHeaders(token, orgId)));
    // The same token without crit is let in: the refusal is the header's.
    expect((await get(authHeaders(signJwt({ sub: member }), orgId))).status).toBe(200);
  });

  it('rejects a JWT signed with another key', async () => {
    const token = signJwt({ sub: member }, {}, 'some-other-secret');
    expectUnauthenticated(await get(authHeaders(token, orgId)), NOT_VALID);
  });

  it('rejects alg: none', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const payload = Buffer.from(
      JSON.stringify({ sub: member, exp: Math.floor(Date.now() / 1000) + 600 }),
    ).toString('base64url');
    expectUnauthenticated(await get(authHeaders(`${header}.${payload}.`, orgId)));
  });

  it('needs the X-Organization-Id header (400, location header)', async () => {
    const response = await get({ Authorization: `Bearer ${signJwt({ sub: member })}` });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({
      code: 'VALIDATION_ERROR',
      message: expect.any(String),
      details: [{ field: 'X-Organization-Id', location: 'header', issue: 'is required' }],
    });
  });

  it('reports a missing or malformed X-Organization-Id together with every bad path and query parameter', async () => {
    const bearer = { Authorization: `Bearer ${signJwt({ sub: member })}` };
    const missing = await request(testApp.server).get('/v1/capacity?foo=1&interval=x').set(bearer);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([
      { field: 'X-Organization-Id', location: 'header', issue: 'is required' },
      { field: 'foo', location: 'query', issue: 'is not a known parameter', value: '1' },
      expect.objectContaining({ field: 'interval', location: 'query', value: 'x' }),
    ]);
    const malformed = await request(testApp.server)
      .get('/v1/workloads/bad%20id/metrics?limit=0')
      .set({ ...bearer, 'X-Organization-Id': 'bad org!' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details).toEqual([
      expect.objectContaining({ field: 'X-Organization-Id', location: 'header', value: 'bad org!' }),
      expect.objectContaining({ field: 'workload_id', location: 'path', value: 'bad id' }),
      expect.objectContaining({ field: 'limit', location: 'query', value: '0' }),
    ]);
  });

  it('rejects a malformed X-Organization-Id', async () => {
    const response = await get(authHeaders(signJwt({ sub: member }), 'bad org!'));
    expect(response.status).toBe(400);
    expect(response.body.error.details[0]).toMatchObject({ field: 'X-Organization-Id', location: 'header' });
  });

  it('is 403 for an organization the person is not a member of', async () => {
    const response = await get(authHeaders(signJwt({ sub: member }), otherOrgId));
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe('FORBIDDEN');
    const unknown = await get(authHeaders(signJwt({ sub: member }), uniqueId('org-none')));
    expect(unknown.status).toBe(403);
  });

  it('takes role and initiatives from membership records, never from JWT claims', async () => {
    const token = signJwt({
      sub: member,
      role: 'ORG_ADMIN',
      initiative_ids: ['init-b'],
      roles: ['ORG_ADMIN'],
    });
    const response = await get(authHeaders(token, orgId)).expect(200);
    expect(response.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toEqual(['wl-a']);
    const outOfScope = await request(testApp.server)
      .get(`${PROTECTED}?initiative_id=init-b`)
      .set(authHeaders(token, orgId));
    expect(outOfScope.status).toBe(403);
  });

  it('resolves one person to different roles in different organizations', async () => {
    const token = signJwt({ sub: 'admin@example.com' });
    const asAdmin = await get(authHeaders(token, orgId)).expect(200);
    expect(asAdmin.body.metadata.total_count).toBe(2);
    const asMember = await get(authHeaders(token, otherOrgId)).expect(200);
    expect(asMember.body.metadata.total_count).toBe(0);
  });

  it('applies a membership change and a removal within a second', async () => {
    const subject = 'moving@example.com';
    await testApp.dataSource.query(
      `INSERT INTO members (organization_id, subject, role, initiative_ids) VALUES ($1, $2, 'MEMBER', '{init-b}')`,
      [orgId, subject],
    );
    const headers = authHeaders(signJwt({ sub: subject }), orgId);
    const ids = (response: request.Response) =>
      response.body.data.workloads.map((w: { workload_id: string }) => w.workload_id);
    expect(ids(await get(headers).expect(200))).toEqual(['wl-b']);
    await testApp.dataSource.query(
      `UPDATE members SET initiative_ids = '{init-a}' WHERE organization_id = $1 AND subject = $2`,
      [orgId, subject],
    );
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(ids(await get(headers).expect(200))).toEqual(['wl-a']);
    await testApp.dataSource.query(`DELETE FROM members WHERE organization_id = $1 AND subject = $2`, [
      orgId,
      subject,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await get(headers)).status).toBe(403);
  });

  describe('API tokens', () => {
    it('accepts a valid token scoped to its initiatives', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, {
        role: 'MEMBER',
        initiativeIds: ['init-b'],
      });
      const response = await get(authHeaders(token, orgId)).expect(200);
      expect(response.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toEqual([
        'wl-b',
      ]);
    });

    it('rejects a revoked token', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN', revoked: true });
      expectUnauthenticated(await get(authHeaders(token, orgId)), /revoked/);
    });

    it('stops accepting a token within a second of its revocation', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' });
      await get(authHeaders(token, orgId)).expect(200);
      await testApp.dataSource.query('UPDATE api_tokens SET revoked_at = now() WHERE token_id = $1', [
        token.split('_')[1],
      ]);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expectUnauthenticated(await get(authHeaders(token, orgId)), /revoked/);
    });

    it('rejects an expired token', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, {
        role: 'ORG_ADMIN',
        expiresAt: new Date(Date.now() - 1000),
      });
      expectUnauthenticated(await get(authHeaders(token, orgId)), /expired/);
    });

    it('rejects a token whose secret was altered', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' });
      const altered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
      expectUnauthenticated(await get(authHeaders(altered, orgId)), /not valid/);
    });

    it('rejects a malformed gpucap_ token', async () => {
      expectUnauthenticated(await get(authHeaders('gpucap_short', orgId)), /malformed/);
    });

    it('is 403 when the header names another organization', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' });
      const response = await get(authHeaders(token, otherOrgId));
      expect(response.status).toBe(403);
      expect(response.body.error.code).toBe('FORBIDDEN');
    });

    it('records when a token was last used', async () => {
      const token = await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' });
      await get(authHeaders(token, orgId)).expect(200);
      const tokenId = token.split('_')[1];
      await new Promise((resolve) => setTimeout(resolve, 100));
      const [row] = await testApp.dataSource.query(
        'SELECT last_used_at FROM api_tokens WHERE token_id = $1',
        [tokenId],
      );
      expect(row.last_used_at).not.toBeNull();
    });
  });
});

describe('authentication with a PEM public key (RS256)', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  let testApp: TestApp;
  let orgId: string;

  beforeAll(async () => {
    testApp = await createTestApp({
      JWT_SECRET: '',
      JWT_PUBLIC_KEY: publicPem,
      JWT_ISSUER: 'https://idp.example',
      JWT_AUDIENCE: 'gpucap',
    });
    orgId = await seedOrganization(testApp.dataSource, {
      members: [{ subject: 'rs@example.com', role: 'ORG_ADMIN' }],
    });
  });

  afterAll(async () => {
    await testApp.close();
  });

  const sign = (claims: Record<string, unknown>, options: jwt.SignOptions = {}) =>
    jwt.sign({ sub: 'rs@example.com', exp: Math.floor(Date.now() / 1000) + 600, ...claims }, privateKey, {
      algorithm: 'RS256',
      issuer: 'https://idp.example',
      audience: 'gpucap',
      ...options,
    });
  const get = (token: string) => request(testApp.server).get(PROTECTED).set(authHeaders(token, orgId));

  it('accepts a correctly signed token with the configured issuer and audience', async () => {
    expect((await get(sign({}))).status).toBe(200);
  });

  it('rejects a wrong issuer and a wrong audience without naming the expected ones', async () => {
    for (const token of [sign({}, { issuer: 'https://evil.example' }), sign({}, { audience: 'other' })]) {
      const response = await get(token);
      expectUnauthenticated(response, NOT_VALID);
      expect(response.text).not.toMatch(/idp\.example|gpucap|issuer|audience|expected/);
    }
  });

  it('refuses algorithm confusion: an HS256 token keyed with the public key', async () => {
    const forged = jwt.sign(
      {
        sub: 'rs@example.com',
        exp: Math.floor(Date.now() / 1000) + 600,
        iss: 'https://idp.example',
        aud: 'gpucap',
      },
      publicPem,
      { algorithm: 'HS256' },
    );
    expectUnauthenticated(await get(forged));
  });

  it('rejects a token signed by another key pair', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const token = jwt.sign({ sub: 'rs@example.com', exp: Math.floor(Date.now() / 1000) + 600 }, other, {
      algorithm: 'RS256',
      issuer: 'https://idp.example',
      audience: 'gpucap',
    });
    expectUnauthenticated(await get(token), NOT_VALID);
  });
});

describe('authentication with a JWKS URL', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let jwks: Server;
  let testApp: TestApp;
  let orgId: string;

  beforeAll(async () => {
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'key-1', use: 'sig', alg: 'RS256' };
    jwks = createServer((_request, response) => {
      response.setHeader('Content-Type', 'application/json');
      response.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const port = (jwks.address() as { port: number }).port;
    testApp = await createTestApp({
      JWT_SECRET: '',
      JWT_JWKS_URI: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    });
    orgId = await seedOrganization(testApp.dataSource, {
      members: [{ subject: 'jw@example.com', role: 'ORG_ADMIN' }],
    });
  });

  afterAll(async () => {
    await testApp.close();
    await new Promise((resolve) => jwks.close(resolve));
  });

  it('verifies a token against the key named by its kid', async () => {
    const token = jwt.sign({ sub: 'jw@example.com', exp: Math.floor(Date.now() / 1000) + 600 }, privateKey, {
      algorithm: 'RS256',
      keyid: 'key-1',
    });
    expect((await request(testApp.server).get(PROTECTED).set(authHeaders(token, orgId))).status).toBe(200);
  });

  it('rejects a token whose kid is unknown', async () => {
    const token = jwt.sign({ sub: 'jw@example.com', exp: Math.floor(Date.now() / 1000) + 600 }, privateKey, {
      algorithm: 'RS256',
      keyid: 'unknown',
    });
    expectUnauthenticated(await request(testApp.server).get(PROTECTED).set(authHeaders(token, orgId)));
  });
});

describe('authentication with a JWKS URL that does not answer', () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let testApp: TestApp;
  let orgId: string;

  beforeAll(async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    testApp = await createTestApp({
      JWT_SECRET: '',
      JWT_JWKS_URI: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    });
    orgId = await seedOrganization(testApp.dataSource, {
      members: [{ subject: 'jw@example.com', role: 'ORG_ADMIN' }],
    });
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('answers 401 with the generic message, naming neither the URL nor the failure', async () => {
    const token = jwt.sign({ sub: 'jw@example.com', exp: Math.floor(Date.now() / 1000) + 600 }, privateKey, {
      algorithm: 'RS256',
      keyid: 'key-1',
    });
    const response = await request(testApp.server).get(PROTECTED).set(authHeaders(token, orgId));
    expectUnauthenticated(response, NOT_VALID);
    expect(response.text).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|jwks/i);
  });
});
