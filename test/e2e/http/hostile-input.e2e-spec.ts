import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertWorkloads,
  seedOrganization,
  signJwt,
} from '../../support/factories';
import { listenOnLoopback, rawRequest, RawResponse } from '../../support/raw-http';
import { createTestApp, TestApp } from '../../support/test-app';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NUL_ISSUE = 'must not contain NUL characters';
const OBJECT_MEMBER_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
];
const GUARDED_PATHS = [
  '/v1/workloads',
  '/v1/workloads/stats',
  '/v1/workloads/metrics',
  '/v1/workloads/wl-x',
  '/v1/workloads/wl-x/metrics',
  '/v1/capacity',
];

function expectErrorShape(body: unknown, code: string): void {
  expect(body).toEqual({
    error: { code, message: expect.any(String), details: expect.any(Array) },
    request_id: expect.any(String),
  });
}

describe('hostile input: NUL bytes, object-member names, malformed requests', () => {
  let testApp: TestApp;
  let orgId: string;
  let headers: Record<string, string>;
  let port: number;

  beforeAll(async () => {
    testApp = await createTestApp();
    orgId = await seedOrganization(testApp.dataSource, {
      members: [{ subject: 'admin@example.com', role: 'ORG_ADMIN' }],
    });
    await insertWorkloads(testApp.dataSource, orgId, [{ workloadId: 'wl-x' }]);
    headers = authHeaders(await createApiToken(testApp.dataSource, orgId, { role: 'ORG_ADMIN' }), orgId);
    port = await listenOnLoopback(testApp.app);
  });

  afterAll(async () => {
    await testApp.close();
  });

  describe('NUL bytes, which PostgreSQL cannot hold in text', () => {
    it.each([
      ['/v1/workloads', 'submitted_by'],
      ['/v1/workloads', 'status'],
      ['/v1/workloads', 'next_token'],
      ['/v1/workloads/stats', 'initiative_id'],
      ['/v1/workloads/metrics', 'sort_by'],
      ['/v1/capacity', 'pool_id'],
    ])('answers %s?%s=<NUL> with 400 naming the parameter', async (path, field) => {
      const response = await request(testApp.server).get(`${path}?${field}=a%00b`).set(headers).expect(400);
      expect(response.body).toEqual({
        error: {
          code: 'VALIDATION_ERROR',
          message: `Invalid request: ${field}`,
          details: [{ field, location: 'query', issue: NUL_ISSUE, value: 'a\u0000b' }],
        },
        request_id: expect.stringMatching(UUID),
      });
    });

    it('reports a NUL next to other invalid parameters, all at once', async () => {
      const response = await request(testApp.server)
        .get('/v1/workloads?submitted_by=%00&limit=0&bogus=1')
        .set(headers)
        .expect(400);
      expect(response.body.error.details).toEqual([
        { field: 'submitted_by', location: 'query', issue: NUL_ISSUE, value: '\u0000' },
        { field: 'bogus', location: 'query', issue: 'is not a known parameter', value: '1' },
        { field: 'limit', location: 'query', issue: 'must be an integer from 1 to 100', value: '0' },
      ]);
    });

    it('refuses a NUL inside a repeated parameter', async () => {
      const response = await request(testApp.server)
        .get('/v1/workloads?submitted_by=a&submitted_by=%00')
        .set(headers)
        .expect(400);
      expect(response.body.error.details).toEqual([
        expect.objectContaining({ field: 'submitted_by', issue: NUL_ISSUE }),
      ]);
    });

    it('answers a NUL in a path id with 400 (location path)', async () => {
      const response = await request(testApp.server).get('/v1/workloads/wl%00x').set(headers).expect(400);
      expect(response.body.error.details).toEqual([
        expect.objectContaining({ field: 'workload_id', location: 'path' }),
      ]);
    });

    it('answers a path id that is not valid percent-encoding with 400 naming workload_id', async () => {
      for (const id of ['%', '%zz', '%C0%AF', '%ED%A0%80']) {
        for (const path of [`/v1/workloads/${id}`, `/v1/workloads/${id}/metrics`]) {
          const response = await request(testApp.server).get(path).set(headers).expect(400);
          expect(response.body.error.details).toEqual([
            { field: 'workload_id', location: 'path', issue: 'is not valid percent-encoding', value: id },
          ]);
        }
      }
    });

    it('answers a validly signed JWT whose sub holds a NUL with 401', async () => {
      const token = signJwt({ sub: 'admin@example.com\u0000' });
      const response = await request(testApp.server).get('/v1/workloads').set(authHeaders(token, orgId));
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer');
      expect(response.body).toEqual({
        error: { code: 'UNAUTHENTICATED', message: 'The token is not valid', details: [] },
        request_id: expect.stringMatching(UUID),
      });
    });

    it('refuses two Authorization headers with 401, even when both are valid', async () => {
      const send = (authorizations: string[]) =>
        rawRequest(
          port,
          `GET /v1/workloads HTTP/1.1\r\nHost: x\r\n` +
            authorizations.map((value) => `Authorization: ${value}\r\n`).join('') +
            `X-Organization-Id: ${orgId}\r\nConnection: close\r\n\r\n`,
        );
      expect((await send([headers.Authorization])).status).toBe(200);
      const twice = await send([headers.Authorization, headers.Authorization]);
      expect(twice.status).toBe(401);
      expect(JSON.parse(twice.body).error).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'Send one Authorization header, not several',
        details: [],
      });
    });

    it('answers a NUL in a header value with the error envelope, not an empty 400', async () => {
      const response = await rawRequest(
        port,
        `GET /v1/workloads HTTP/1.1\r\nHost: x\r\nAuthorization: ${headers.Authorization}\r\n` +
          `X-Organization-Id: ${orgId}\u0000\r\nConnection: close\r\n\r\n`,
      );
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(response.body)).toEqual({
        error: {
          code: 'VALIDATION_ERROR',
          message: 'The request is not valid HTTP',
          details: [{ field: 'request', location: 'header', issue: 'is not a valid HTTP/1.1 request' }],
        },
        request_id: response.headers['x-request-id'],
      });
      expect(response.headers['x-request-id']).toMatch(UUID);
    });
  });

  describe('parameters named like members of Object.prototype', () => {
    it.each(OBJECT_MEMBER_NAMES)('rejects ?%s= as an unknown parameter on every route', async (name) => {
      for (const path of GUARDED_PATHS) {
        const response = await request(testApp.server).get(`${path}?${name}=1`).set(headers);
        expect({ path, status: response.status }).toEqual({ path, status: 400 });
        expect(response.body.error).toEqual({
          code: 'VALIDATION_ERROR',
          message: `Invalid request: ${name}`,
          details: [{ field: name, location: 'query', issue: 'is not a known parameter', value: '1' }],
        });
      }
    });

    it('keeps the contract answer for repeated parameters and array forms', async () => {
      const repeated = await request(testApp.server).get('/v1/workloads?limit=1&limit=2').set(headers);
      expect(repeated.status).toBe(400);
      expect(repeated.body.error.details).toEqual([
        { field: 'limit', location: 'query', issue: 'must be an integer from 1 to 100', value: '["1","2"]' },
      ]);
      const bracketed = await request(testApp.server).get('/v1/workloads?status[]=running').set(headers);
      expect(bracketed.body.error.details).toEqual([
        { field: 'status[]', location: 'query', issue: 'is not a known parameter', value: 'running' },
      ]);
      const nested = await request(testApp.server).get('/v1/workloads?limit[__proto__]=1').set(headers);
      expect(nested.status).toBe(400);
      expect(nested.body.error.details[0].field).toBe('limit[__proto__]');
    });

    it('reads every parameter, however many come before it', async () => {
      const padding = '&'.repeat(1000);
      const filtered = await request(testApp.server)
        .get(`/v1/workloads?limit=5${padding}&status=failed`)
        .set(headers)
        .expect(200);
      expect(filtered.body.data.workloads).toEqual([]);
      const refused = await request(testApp.server)
        .get(`/v1/workloads?limit=5${'&x=1'.repeat(1000)}&status=bogus`)
        .set(headers)
        .expect(400);
      expect(refused.body.error.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ field: 'status', location: 'query' })]),
      );
    });

    it('still accepts the declared parameters', async () => {
      const response = await request(testApp.server)
        .get('/v1/workloads?limit=5&status=completed&submitted_by=alice%40example.com')
        .set(headers)
        .expect(200);
      expect(response.body.data.workloads.map((w: { workload_id: string }) => w.workload_id)).toEqual([
        'wl-x',
      ]);
    });
  });

  describe('paths are matched case-sensitively', () => {
    it('answers a case variant of an API path with 404, not with the endpoint', async () => {
      for (const path of [
        '/V1/capacity',
        '/v1/Capacity',
        '/v1/WORKLOADS',
        '/v1/workloads/Stats',
        '/v1/Health',
      ]) {
        const response = await request(testApp.server).get(path).set(headers);
        expect({ path, status: response.status, code: response.body.error?.code }).toEqual({
          path,
          status: 404,
          code: 'NOT_FOUND',
        });
      }
      const exact = await request(testApp.server).get('/v1/workloads/wl-x').set(headers);
      expect(exact.body.data.workload_id).toBe('wl-x');
    });
  });

  describe('requests Node refuses before routing', () => {
    const errorOf = (response: RawResponse) => JSON.parse(response.body) as Record<string, unknown>;

    it('answers a 100 KB header with 431 and the error envelope', async () => {
      const response = await rawRequest(
        port,
        `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\nConnection: close\r\n\r\n`,
      );
      expect(response.status).toBe(431);
      expect(errorOf(response)).toEqual({
        error: {
          code: 'VALIDATION_ERROR',
          message: 'The request line and headers are too large',
          details: [
            {
              field: 'request',
              location: 'header',
              issue: 'request line and headers together must not exceed 16384 bytes',
            },
          ],
        },
        request_id: response.headers['x-request-id'],
      });
    });

    it('answers a 100 KB URL with 431 and the error envelope', async () => {
      const response = await rawRequest(
        port,
        `GET /v1/workloads?submitted_by=${'b'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expect(response.status).toBe(431);
      expectErrorShape(errorOf(response), 'VALIDATION_ERROR');
    });

    it('answers a garbage request line with 400 and the error envelope', async () => {
      const response = await rawRequest(port, 'HELLO THERE\r\n\r\n');
      expect(response.status).toBe(400);
      expect(response.headers['content-length']).toBe(String(Buffer.byteLength(response.body)));
      expectErrorShape(errorOf(response), 'VALIDATION_ERROR');
      expect(errorOf(response).request_id).toMatch(UUID);
    });

    it('answers CONNECT on an API path with 405 and Allow', async () => {
      const response = await rawRequest(
        port,
        'CONNECT /v1/workloads HTTP/1.1\r\nHost: x\r\nX-Request-Id: connect-1\r\n\r\n',
      );
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('GET, HEAD');
      expect(errorOf(response)).toEqual({
        error: {
          code: 'METHOD_NOT_ALLOWED',
          message: 'Method CONNECT is not allowed on /v1/workloads; use GET',
          details: [],
        },
        request_id: 'connect-1',
      });
    });

    it.each([
      {
        refusal: 'an HTTP/1.1 request without Host: 400',
        head: 'GET /v1/workloads HTTP/1.1',
        status: 400,
        message: 'The request has no Host header',
        detail: { field: 'Host', location: 'header', issue: 'is required in an HTTP/1.1 request' },
      },
      {
        refusal: 'an Expect it does not know: 417',
        head: 'GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: foo',
        status: 417,
        message: 'The request expects what the service does not do',
        detail: { field: 'Expect', location: 'header', issue: 'only 100-continue is understood' },
      },
    ])('answers $refusal, with the error envelope', async ({ head, status, message, detail }) => {
      const response = await rawRequest(
        port,
        `${head}\r\nX-Request-Id: refused-1\r\nConnection: close\r\n\r\n`,
      );
      expect(response.status).toBe(status);
      expect(response.headers['x-request-id']).toBe('refused-1');
      expect(errorOf(response)).toEqual({
        error: { code: 'VALIDATION_ERROR', message, details: [detail] },
        request_id: 'refused-1',
      });
    });

    it('answers CONNECT to anything else with 404', async () => {
      const response = await rawRequest(
        port,
        'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
      );
      expect(response.status).toBe(404);
      expectErrorShape(errorOf(response), 'NOT_FOUND');
    });
  });

  describe('fuzzing (bounded, loopback, seeded)', () => {
    const ROUTES = [
      '/v1/workloads',
      '/v1/workloads/stats',
      '/v1/workloads/metrics',
      '/v1/workloads/{id}',
      '/v1/workloads/{id}/metrics',
      '/v1/capacity',
      '/v1/health',
      '/v1/{id}',
    ];
    const NAMES = [
      'organization_id',
      'initiative_id',
      'status',
      'submitted_by',
      'is_managed',
      'start_date',
      'end_date',
      'limit',
      'next_token',
      'time_range',
      'group_by',
      'metrics',
      'sort_by',
      'order',
      'pool_id',
      ...OBJECT_MEMBER_NAMES,
    ];
    const HEADERS = ['X-Organization-Id', 'X-Request-Id', 'Authorization', 'Accept', 'X-Forwarded-For'];

    /** mulberry32: the same requests on every run, so a failure can be replayed. */
    function random(seed: number): () => number {
      let state = seed;
      return () => {
        state = (state + 0x6d2b79f5) | 0;
        let t = Math.imul(state ^ (state >>> 15), 1 | state);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
    }

    function fuzzRequest(next: () => number): Buffer {
      const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
      const bytes = (max: number) =>
        Buffer.from(Array.from({ length: Math.floor(next() * max) }, () => Math.floor(next() * 256)));
      const encoded = (max: number) =>
        [...bytes(max)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
      const path = pick(ROUTES).replace('{id}', next() < 0.5 ? encoded(12) : 'wl-x');
      const query = Array.from({ length: Math.floor(next() * 4) }, () => {
        const name = next() < 0.8 ? pick(NAMES) : encoded(6);
        return `${name}=${encoded(16)}`;
      }).join('&');
      const lines = [`GET ${path}${query ? `?${query}` : ''} HTTP/1.1`, 'Host: fuzz'];
      for (const [name, value] of Object.entries(headers)) {
        // Each header keeps its valid value, or gets random raw bytes (often invalid HTTP).
        lines.push(next() < 0.8 ? `${name}: ${value}` : `${name}: ${bytes(24).toString('latin1')}`);
      }
      if (next() < 0.3) lines.push(`${pick(HEADERS)}: ${bytes(24).toString('latin1')}`);
      lines.push('Connection: close', '', '');
      return Buffer.from(lines.join('\r\n'), 'latin1');
    }

    it('never answers 5xx and always answers errors in the contract envelope', async () => {
      const seed = 20261120;
      const next = random(seed);
      const requests = Array.from({ length: 2_000 }, () => fuzzRequest(next));
      const failures: string[] = [];
      const concurrency = 8;
      for (let start = 0; start < requests.length; start += concurrency) {
        const batch = requests.slice(start, start + concurrency);
        const responses = await Promise.all(batch.map((bytes) => rawRequest(port, bytes)));
        responses.forEach((response, offset) => {
          const problem = contractProblem(response);
          if (problem)
            failures.push(`#${start + offset} ${problem}: ${batch[offset].toString('latin1').slice(0, 300)}`);
        });
      }
      expect(failures.slice(0, 10)).toEqual([]);
    });

    function contractProblem(response: RawResponse): string | null {
      if (response.status === null) return 'no answer';
      if (response.status >= 500) return `status ${response.status}`;
      let body: { error?: { code?: unknown; message?: unknown; details?: unknown }; request_id?: unknown };
      try {
        body = JSON.parse(response.body);
      } catch {
        return `status ${response.status} without a JSON body`;
      }
      if (typeof body.request_id !== 'string') return 'no request_id';
      if (response.status < 400) return null;
      const error = body.error;
      if (
        typeof error?.code !== 'string' ||
        typeof error.message !== 'string' ||
        !Array.isArray(error.details)
      ) {
        return `status ${response.status} outside the error envelope`;
      }
      return null;
    }
  });
});
