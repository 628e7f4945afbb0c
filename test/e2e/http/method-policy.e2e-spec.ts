import request from 'supertest';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/**
 * Walks every path of the served OpenAPI document with every method it does not declare, so a route
 * added later is held to the method rule (contract §2) without anyone writing a test for it: 405 in
 * the error envelope with `Allow` naming exactly the methods served there; OPTIONS is 204, never an
 * error. The path's own methods are still served.
 */
const PROBED = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const OPERATION_KEYS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options', 'trace'];

interface PathItem {
  [method: string]: { parameters?: { name: string; in: string; required?: boolean }[] } | undefined;
}

describe('the method rule on every path of the OpenAPI document', () => {
  let testApp: TestApp;
  let headers: Record<string, string>;
  let workloadId: string;
  let paths: [string, PathItem][];

  beforeAll(async () => {
    testApp = await createTestApp();
    const organizationId = await seedOrganization(testApp.dataSource);
    [{ workloadId }] = await insertWorkloads(testApp.dataSource, organizationId, [{ status: 'completed' }]);
    headers = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
    const document = await request(testApp.server).get('/v1/openapi.json').expect(200);
    paths = Object.entries(document.body.paths as Record<string, PathItem>);
  });

  afterAll(async () => {
    await testApp.close();
  });

  /** A real value for each parameter; one without a value fails the walk. */
  function valueOf(name: string, path: string): string {
    const values: Record<string, string> = {
      workload_id: workloadId,
      start_date: '2025-01-01',
      end_date: '2025-01-02',
    };
    if (values[name] === undefined) throw new Error(`no real value for ${name} of ${path}: add one`);
    return values[name];
  }

  function concrete(path: string): string {
    return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(valueOf(name, path)));
  }

  /** The path and the required query of its GET, so that it is answered 200. */
  function answerable(path: string, item: PathItem): string {
    const query = new URLSearchParams();
    for (const parameter of item.get?.parameters ?? []) {
      if (parameter.in === 'query' && parameter.required)
        query.set(parameter.name, valueOf(parameter.name, path));
    }
    return query.size ? `${concrete(path)}?${query}` : concrete(path);
  }

  /** What the document declares, and HEAD wherever GET is (Express answers it with GET's handler). */
  function servedOn(item: PathItem): string[] {
    const declared = OPERATION_KEYS.filter((key) => item[key]).map((key) => key.toUpperCase());
    return declared.includes('GET') && !declared.includes('HEAD') ? [...declared, 'HEAD'] : declared;
  }

  it('walks the paths of every module, the newest included', () => {
    expect(paths.map(([path]) => path).sort()).toEqual([
      '/v1/alerts',
      '/v1/capacity',
      '/v1/costs/focus',
      '/v1/health',
      '/v1/health/live',
      '/v1/recommendations',
      '/v1/workloads',
      '/v1/workloads/metrics',
      '/v1/workloads/stats',
      '/v1/workloads/{workload_id}',
      '/v1/workloads/{workload_id}/metrics',
    ]);
    expect(paths.map(([path]) => concrete(path))).toContain(`/v1/workloads/${workloadId}/metrics`);
  });

  it('answers every method a path does not declare with 405, the envelope and exactly its Allow', async () => {
    let refused = 0;
    for (const [path, item] of paths) {
      const served = servedOn(item);
      const advised = served.filter((method) => method !== 'HEAD' || !served.includes('GET')).sort();
      const url = concrete(path);
      for (const method of PROBED.filter((probed) => !served.includes(probed))) {
        const response = await request(testApp.server)
          [method.toLowerCase() as Lowercase<typeof method>](url)
          .set(headers);
        expect({ method, url, status: response.status, allow: response.headers.allow }).toEqual({
          method,
          url,
          status: 405,
          allow: [...served].sort().join(', '),
        });
        expect(response.body).toEqual({
          error: {
            code: 'METHOD_NOT_ALLOWED',
            message: `Method ${method} is not allowed on ${url}; use ${advised.join(' or ')}`,
            details: [],
          },
          request_id: response.headers['x-request-id'],
        });
        refused += 1;
      }
    }
    // Every path serves GET and HEAD alone today: four methods refused on each.
    expect(refused).toBe(paths.length * 4);
  });

  it('answers OPTIONS on every path with 204 and Allow: its methods and OPTIONS', async () => {
    for (const [path, item] of paths) {
      const url = concrete(path);
      const response = await request(testApp.server).options(url).set(headers);
      expect({ url, status: response.status, allow: response.headers.allow, body: response.text }).toEqual({
        url,
        status: 204,
        allow: [...servedOn(item), 'OPTIONS'].sort().join(', '),
        body: '',
      });
    }
  });

  it('still serves what each path declares', async () => {
    for (const [path, item] of paths) {
      const url = answerable(path, item);
      const get = await request(testApp.server).get(url).set(headers);
      const head = await request(testApp.server).head(url).set(headers);
      expect({ url, get: get.status, head: head.status, allow: get.headers.allow }).toEqual({
        url,
        get: 200,
        head: 200,
        allow: undefined,
      });
    }
  });

  it('holds the routes registered outside controllers to it too', async () => {
    for (const url of ['/v1/openapi.json', '/docs', '/metrics']) {
      const response = await request(testApp.server).delete(url).set(headers);
      expect({
        url,
        status: response.status,
        allow: response.headers.allow,
        code: response.body.error?.code,
      }).toEqual({
        url,
        status: 405,
        allow: 'GET, HEAD',
        code: 'METHOD_NOT_ALLOWED',
      });
    }
  });

  it("matches paths as the router does: a trailing slash, the case, a parameter's bad encoding", async () => {
    const answers = [];
    for (const url of ['/v1/alerts/', '/V1/Alerts', '/v1/costs/FOCUS', '/v1/workloads/%E0%A4%A/metrics']) {
      const response = await request(testApp.server).post(url).set(headers);
      answers.push([url, response.status, response.headers.allow, response.body.error.code]);
    }
    expect(answers).toEqual([
      ['/v1/alerts/', 405, 'GET, HEAD', 'METHOD_NOT_ALLOWED'],
      ['/V1/Alerts', 404, undefined, 'NOT_FOUND'],
      ['/v1/costs/FOCUS', 404, undefined, 'NOT_FOUND'],
      ['/v1/workloads/%E0%A4%A/metrics', 405, 'GET, HEAD', 'METHOD_NOT_ALLOWED'],
    ]);
  });

  it('leaves a path no route serves to 404, whatever the method, and answers its OPTIONS', async () => {
    for (const url of [
      '/v1/costs',
      '/v1/costs/focus/daily',
      '/v1/alerts/1',
      `/v1/workloads/${workloadId}/logs`,
    ]) {
      const response = await request(testApp.server).put(url).set(headers);
      expect({ url, status: response.status, allow: response.headers.allow }).toEqual({
        url,
        status: 404,
        allow: undefined,
      });
      expect(response.body.error).toEqual({
        code: 'NOT_FOUND',
        message: `No such resource: PUT ${url}`,
        details: [],
      });
      const options = await request(testApp.server).options(url);
      expect([options.status, options.headers.allow]).toEqual([204, 'GET, HEAD, OPTIONS']);
    }
  });
});
