import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get as httpGet } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import request from 'supertest';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { PROJECT_ROOT } from '../../support/import-fixture';
import { listenOnLoopback } from '../../support/raw-http';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * Operations: Prometheus metrics at /metrics (route templates, statuses, latency
 * histograms, cache outcomes, database pool, event-loop lag), never rate limited, optionally behind
 * its own token; gzip and brotli for answers over 1 KB.
 */

const PROMTOOL = '/usr/bin/promtool';

/** The value of one sample line `name{labels} value`, by exact labels; undefined when absent. */
function sample(body: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort();
  for (const line of body.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = match[2].split(',').sort();
    if (wanted.every((label) => present.includes(label))) return Number(match[3]);
  }
  return undefined;
}

describe('operations: /metrics and compression', () => {
  let t: TestApp;
  let org: string;
  let admin: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_IP_PER_MINUTE: '20', RATE_LIMIT_PER_MINUTE: '20' });
    org = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
    await insertWorkloads(
      t.dataSource,
      org,
      Array.from({ length: 30 }, (_, index) => ({ workloadId: `w-${index}`, name: `job number ${index}` })),
    );
  });

  afterAll(() => t.close());

  it('counts requests by route template and status, with latency histograms', async () => {
    await request(t.server).get('/v1/workloads').set(admin).expect(200);
    await request(t.server).get('/v1/workloads').set(admin).expect(200);
    await request(t.server).get('/v1/workloads/w-1').set(admin).expect(200);
    await request(t.server).get('/v1/workloads/nope').set(admin).expect(404);
    await request(t.server).get('/v1/workloads/w-2').expect(401);
    const { text, headers } = await request(t.server).get('/metrics').expect(200);
    expect(headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const count = (route: string, status: string) =>
      sample(text, 'gpucap_http_requests_total', { method: 'GET', route, status });
    expect(count('/v1/workloads', '200')).toBe(2);
    expect(count('/v1/workloads/:workload_id', '200')).toBe(1);
    expect(count('/v1/workloads/:workload_id', '404')).toBe(1);
    expect(count('/v1/workloads/:workload_id', '401')).toBe(1);
    expect(text).not.toContain('route="/v1/workloads/w-1"');
    expect(
      sample(text, 'gpucap_http_request_duration_seconds_count', { route: '/v1/workloads', status: '200' }),
    ).toBe(2);
    expect(
      sample(text, 'gpucap_http_request_duration_seconds_bucket', {
        route: '/v1/workloads',
        status: '200',
        le: '+Inf',
      }),
    ).toBe(2);
    expect(sample(text, 'gpucap_response_cache_requests_total', { outcome: 'hit' })).toBe(1);
    expect(sample(text, 'gpucap_response_cache_requests_total', { outcome: 'miss' })).toBe(2);
    expect(text).toMatch(/^gpucap_db_pool_connections_in_use \d+$/m);
    expect(text).toMatch(/^gpucap_db_pool_waiting_requests \d+$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds [\d.e-]+$/m);
  });

  it('is never rate limited and needs no organization', async () => {
    const scraped = async () =>
      sample((await request(t.server).get('/metrics').expect(200)).text, 'gpucap_http_requests_total', {
        route: '/metrics',
        status: '200',
      }) ?? 0;
    const before = await scraped();
    for (let i = 0; i < 25; i += 1) await request(t.server).get('/metrics').expect(200);
    // The 25, and the scrape that read `before` (counted once its answer finished).
    expect((await scraped()) - before).toBe(26);
  });

  it('passes promtool check metrics (but for prom-client defaults named before the rule)', async () => {
    if (!existsSync(PROMTOOL)) {
      if (process.env.CI === 'true') throw new Error(`${PROMTOOL} is missing (Debian package prometheus)`);
      process.stdout.write(`SKIPPED: promtool check metrics (${PROMTOOL} not installed)\n`);
      return;
    }
    const { text } = await request(t.server).get('/metrics').expect(200);
    const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    const problems = `${check.stdout}${check.stderr}`
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter(
        (line) => !/^nodejs_active_\w+_total non-counter metrics should not have "_total" suffix$/.test(line),
      );
    expect(problems).toEqual([]);
  });

  it('ships a Grafana dashboard whose queries parse and name only metrics the service exposes', async () => {
    const dashboard = JSON.parse(readFileSync(join(PROJECT_ROOT, 'docs', 'grafana-dashboard.json'), 'utf8'));
    const expressions: string[] = dashboard.panels.flatMap((panel: { targets: { expr: string }[] }) =>
      panel.targets.map((target) => target.expr),
    );
    expect(expressions.length).toBeGreaterThanOrEqual(8);
    const { text } = await request(t.server).get('/metrics').expect(200);
    // Every family the registry declares (a labelled counter shows no sample before its first use).
    const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
    const referenced = expressions.flatMap(
      (expr) => expr.match(/\b(?:gpucap|nodejs|process)_[a-z0-9_]+/g) ?? [],
    );
    expect(referenced.filter((name) => !families.has(name.replace(/_(bucket|sum|count)$/, '')))).toEqual([]);
    if (!existsSync(PROMTOOL)) {
      if (process.env.CI === 'true') throw new Error(`${PROMTOOL} is missing (Debian package prometheus)`);
      process.stdout.write(
        `SKIPPED: promtool check rules on the dashboard's queries (${PROMTOOL} not installed)\n`,
      );
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'gpucap-dashboard-'));
    try {
      const rules = expressions.map(
        (expr, index) =>
          `      - record: dashboard:query_${index}\n        expr: '${expr
            .replace(/\$__rate_interval/g, '1m')
            .replace(/\$job/g, '.*')
            .replace(/'/g, "''")}'`,
      );
      writeFileSync(
        join(dir, 'rules.yml'),
        `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`,
      );
      const check = spawnSync(PROMTOOL, ['check', 'rules', join(dir, 'rules.yml')], { encoding: 'utf8' });
      expect([check.status, check.stderr]).toEqual([0, '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('asks for its own token when METRICS_TOKEN is set', async () => {
    const guarded = await createTestApp({ METRICS_TOKEN: 'scrape-secret-123' });
    try {
      const refused = await request(guarded.server).get('/metrics').expect(401);
      expect(refused.text).toBe('');
      await request(guarded.server).get('/metrics').set('Authorization', 'Bearer wrong').expect(401);
      const scraped = await request(guarded.server)
        .get('/metrics')
        .set('Authorization', 'Bearer scrape-secret-123')
        .expect(200);
      expect(scraped.text).toContain('gpucap_http_requests_total');
    } finally {
      await guarded.close();
    }
  });

  it('compresses answers over 1 KB with gzip or brotli, and leaves small ones alone', async () => {
    const plain = await request(t.server)
      .get('/v1/workloads?limit=30')
      .set(admin)
      .set('Accept-Encoding', 'identity')
      .expect(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const port = await listenOnLoopback(t.app);
    const raw = (encoding: string) =>
      new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        const headers = { ...admin, 'Accept-Encoding': encoding };
        httpGet({ host: '127.0.0.1', port, path: '/v1/workloads?limit=30', headers }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    // No Accept-Encoding at all: the compression middleware is skipped, the answer still varies by it.
    const none = await raw('');
    expect(none.headers['content-encoding']).toBeUndefined();
    expect(none.headers.vary).toMatch(/Accept-Encoding/);
    expect(JSON.parse(none.body.toString('utf8')).data).toEqual(plain.body.data);
    const gzip = await raw('gzip');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gzip.headers.vary).toMatch(/Accept-Encoding/);
    const gzipBody = JSON.parse(gunzipSync(gzip.body).toString('utf8'));
    expect(gzipBody.data).toEqual(plain.body.data);
    const br = await raw('br, gzip');
    expect(br.headers['content-encoding']).toBe('br');
    expect(JSON.parse(brotliDecompressSync(br.body).toString('utf8')).data).toEqual(plain.body.data);
    expect(br.body.length).toBeLessThan(JSON.stringify(plain.body).length / 2);

    const small = await request(t.server).get('/v1/workloads/w-1').set(admin).set('Accept-Encoding', 'gzip');
    expect(JSON.stringify(small.body).length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
  });

  it('streams a compressed CSV export intact', async () => {
    const csv = await request(t.server)
      .get('/v1/workloads')
      .set(admin)
      .set('Accept', 'text/csv')
      .set('Accept-Encoding', 'gzip')
      .expect(200);
    expect(csv.headers['content-encoding']).toBe('gzip');
    const lines = csv.text.trim().split('\r\n');
    expect(lines).toHaveLength(31);
    expect(lines[0]).toMatch(/^workload_id,/);
  });
});
