import type { INestApplication } from '@nestjs/common';
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import type { Server } from 'node:http';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp } from '../../../src/app.factory';
import { parseApiToken } from '../../../src/common/auth/api-token-format';
import { loadConfig } from '../../../src/core/config/app-config';
import { authHeaders, createApiToken, seedOrganization, signJwt } from '../../support/factories';
import { listenOnLoopback, rawRequest } from '../../support/raw-http';
import { TEST_JWT_SECRET, testDatabaseUrl } from '../../support/test-app';

type LogLine = Record<string, unknown> & { level: unknown; msg?: string };

/**
 * One sink for the whole file: nestjs-pino keeps the first logger it is given for the rest of the
 * process, so application logs of a second app land where the first app's went.
 */
const lines: LogLine[] = [];
const raw: string[] = [];

/** The real app with its logs captured line by line instead of written to stdout. */
async function appWithCapturedLogs(env: Record<string, string>) {
  const config = loadConfig({
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '100000',
    DATABASE_POOL_SIZE: '3',
    ...env,
  });
  const app: INestApplication = await createApp(config, testDatabaseUrl(), {
    logDestination: {
      write: (line: string) => {
        raw.push(line);
        lines.push(JSON.parse(line) as LogLine);
      },
    },
  });
  return { app, server: app.getHttpServer() as Server };
}

describe('request logs', () => {
  let app: INestApplication;
  let server: Server;
  let orgId: string;
  let token: string;

  beforeAll(async () => {
    ({ app, server } = await appWithCapturedLogs({ JWT_SECRET: TEST_JWT_SECRET }));
    const dataSource = app.get(DataSource);
    orgId = await seedOrganization(dataSource, { members: [{ subject: 'ann@example.com', role: 'MEMBER' }] });
    token = await createApiToken(dataSource, orgId, { role: 'ORG_ADMIN' });
  });

  afterAll(async () => {
    await app.close();
  });

  const lineOf = (requestId: string) => {
    const found = lines.filter((line) => line.request_id === requestId && line.msg?.startsWith('request'));
    expect(found).toHaveLength(1);
    return found[0];
  };

  it('logs no credential of any header, only an allowlist of headers', async () => {
    const secrets = ['proxy-secret-1', 'api-key-secret-2', 'cookie-secret-3', 'bearer-secret-4'];
    const response = await request(server)
      .get('/v1/workloads')
      .set(authHeaders(token, orgId))
      .set('Proxy-Authorization', `Basic ${secrets[0]}`)
      .set('X-Api-Key', secrets[1])
      .set('Cookie', `session=${secrets[2]}`)
      .set('X-Forwarded-Authorization', `Bearer ${secrets[3]}`)
      .set('User-Agent', 'log-test/1.0')
      .expect(200);
    const line = lineOf(response.body.request_id);
    expect(line).toMatchObject({
      level: 'info',
      request_id: response.body.request_id,
      req: {
        method: 'GET',
        url: '/v1/workloads',
        headers: { 'user-agent': 'log-test/1.0', 'x-organization-id': orgId },
      },
      res: { statusCode: 200 },
    });
    expect(Object.keys((line.req as { headers: object }).headers).sort()).toEqual(
      ['user-agent', 'x-organization-id'].sort(),
    );
    const everything = raw.join('');
    // The secret is base64url and may itself hold '_': take it the way the service does, never by split.
    const tokenSecret = parseApiToken(token)!.secret;
    for (const secret of [...secrets, token, tokenSecret]) expect(everything).not.toContain(secret);
  });

  it('writes level names and one request id key', async () => {
    await request(server)
      .get('/v1/workloads')
      .set('X-Request-Id', 'one-key-1')
      .set(authHeaders(token, orgId));
    const line = lineOf('one-key-1');
    expect(line.level).toBe('info');
    expect(line).not.toHaveProperty('reqId');
    expect(line).not.toHaveProperty('requestId');
    expect(line.req).not.toHaveProperty('id');
  });

  it('logs a 4xx at warn with the error code, organization and credential id (claimed, when not verified)', async () => {
    const tokenId = token.split('_')[1];
    const forbidden = await request(server)
      .get('/v1/workloads')
      .set('X-Request-Id', 'forbidden-1')
      .set(authHeaders(signJwt({ sub: 'stranger@example.com' }), orgId))
      .expect(403);
    expect(forbidden.body.request_id).toBe('forbidden-1');
    expect(lineOf('forbidden-1')).toMatchObject({
      level: 'warn',
      error_code: 'FORBIDDEN',
      organization_id: orgId,
      credential_id: 'sub:stranger@example.com',
    });

    const invalid = await request(server)
      .get('/v1/workloads?limit=0')
      .set('X-Request-Id', 'invalid-1')
      .set(authHeaders(token, orgId))
      .expect(400);
    expect(invalid.body.error.code).toBe('VALIDATION_ERROR');
    expect(lineOf('invalid-1')).toMatchObject({
      level: 'warn',
      error_code: 'VALIDATION_ERROR',
      organization_id: orgId,
      credential_id: `token:${tokenId}`,
    });

    const altered = `${token.slice(0, -4)}AAAA`;
    await request(server)
      .get('/v1/workloads')
      .set('X-Request-Id', 'unauthenticated-1')
      .set(authHeaders(altered, orgId))
      .expect(401);
    expect(lineOf('unauthenticated-1')).toMatchObject({
      level: 'warn',
      error_code: 'UNAUTHENTICATED',
      organization_id: orgId,
      claimed_credential_id: `token:${tokenId}`,
    });
    expect(lineOf('unauthenticated-1')).not.toHaveProperty('credential_id');
    expect(raw.join('')).not.toContain(altered);
  });

  it('never writes out a token sent where it does not belong (?access_token=…)', async () => {
    const secret = parseApiToken(token)!.secret;
    const response = await request(server)
      .get(`/v1/workloads?access_token=${token}`)
      .set('X-Request-Id', 'token-in-url-1')
      .set(authHeaders(token, orgId))
      .expect(400);
    const tokenId = parseApiToken(token)!.tokenId;
    expect(response.body.error.details).toEqual([
      {
        field: 'access_token',
        location: 'query',
        issue: 'is not a known parameter',
        value: `gpucap_${tokenId}_[redacted]`,
      },
    ]);
    expect(lineOf('token-in-url-1').req).toMatchObject({
      url: `/v1/workloads?access_token=gpucap_${tokenId}_[redacted]`,
    });
    expect(raw.join('')).not.toContain(secret);
  });

  it('logs answers given before routing (405, 404) with their code', async () => {
    await request(server).post('/v1/workloads').set('X-Request-Id', 'post-1').expect(405);
    expect(lineOf('post-1')).toMatchObject({ level: 'warn', error_code: 'METHOD_NOT_ALLOWED' });
    await request(server).get('/v1/nowhere').set('X-Request-Id', 'nowhere-1').set(authHeaders(token, orgId));
    expect(lineOf('nowhere-1')).toMatchObject({ level: 'warn', error_code: 'NOT_FOUND' });
  });

  it('logs a request Node refuses before routing, with the request id it answered', async () => {
    const port = await listenOnLoopback(app);
    const response = await rawRequest(port, 'NOT HTTP AT ALL\r\n\r\n');
    const requestId = response.headers['x-request-id'];
    expect(lines.find((line) => line.request_id === requestId)).toMatchObject({
      level: 'warn',
      status: 400,
      error_code: 'VALIDATION_ERROR',
    });
  });
});

describe('JWKS failures in the logs', () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  it('logs a failed key fetch as a warning without the URL, host or port', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const { app, server } = await appWithCapturedLogs({
      JWT_JWKS_URI: `http://localhost:${port}/idp-jwks-path`,
    });
    try {
      const token = jwt.sign({ sub: 'x@example.com', exp: Math.floor(Date.now() / 1000) + 600 }, privateKey, {
        algorithm: 'RS256',
        keyid: 'k1',
      });
      await request(server).get('/v1/workloads').set(authHeaders(token, 'org-x')).expect(401);
      expect(lines.find((line) => String(line.msg).includes('JWKS'))).toMatchObject({
        level: 'warn',
        error: { code: 'ECONNREFUSED' },
      });
      const everything = raw.join('');
      for (const leak of ['localhost', '127.0.0.1', String(port), 'idp-jwks-path']) {
        expect(everything).not.toContain(leak);
      }
    } finally {
      await app.close();
    }
  });
});
