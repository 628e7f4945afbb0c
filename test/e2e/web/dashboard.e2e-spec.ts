/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { projectRoot } from '../../../src/database/project-root';
import { DEMO_ORGANIZATION_ID, writeDemoData } from '../../../src/demo/demo-data';
import { DEMO_CLUSTERS } from '../../../src/demo/demo-organization';
import { createApiToken } from '../../support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { createTestApp, type TestApp } from '../../support/test-app';

/**
 * The dashboard page in a real browser: Debian's Chromium (`chromium` package), driven by
 * playwright-core. Where it is missing the tests say so and do not run, except under CI=true, where
 * that is a failure. Screenshots of each panel land in test-artifacts/screenshots/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const SCREENSHOTS = join(projectRoot(), 'test-artifacts', 'screenshots');

if (!hasChromium) {
  const message = `Chromium not found at ${CHROMIUM}: the dashboard browser tests did not run (apt-get install chromium)`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`SKIPPED ${message}`);
}

const describeInBrowser = hasChromium ? describe : describe.skip;

interface Holding {
  workload_id: string;
  gpu_count: number;
  cluster_id: string;
  gpu_share: number;
  gpu_sharing: { mode: string; profile?: string; replicas?: number } | null;
}

/** Whole GPUs as a count, up to 2 decimals otherwise: 0.2857 reads 0.29, 0.5 reads 0.5. */
function gpus(share: number): string {
  return `${Number(share.toFixed(2))} ${share <= 1 ? 'GPU' : 'GPUs'}`;
}

describeInBrowser('the dashboard page at GET /', () => {
  let database: OwnDatabase;
  let t: TestApp;
  let browser: Browser;
  let origin: string;
  let adminToken: string;
  let memberToken: string;

  beforeAll(async () => {
    database = await createOwnDatabase('web');
    await writeDemoData(database.dataSource, { workloads: 3000, seed: 7 });
    adminToken = await createApiToken(database.dataSource, DEMO_ORGANIZATION_ID, { role: 'ORG_ADMIN' });
    memberToken = await createApiToken(database.dataSource, DEMO_ORGANIZATION_ID, {
      role: 'MEMBER',
      initiativeIds: ['nlp'],
    });
    t = await createTestApp({}, database.url);
    // Running workloads' figures grow with the clock: the page and the test must read the same instant.
    const now = new Date();
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(now));
    await t.app.listen(0, '127.0.0.1');
    origin = `http://127.0.0.1:${(t.server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await database?.drop();
  });

  /** A page whose console errors and off-origin requests are collected. */
  async function openPage(viewport = { width: 1280, height: 800 }) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    const foreignRequests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 400) consoleErrors.push(`${response.status()} ${response.url()}`);
    });
    page.on('request', (sent) => {
      if (!sent.url().startsWith(origin)) foreignRequests.push(sent.url());
    });
    await page.goto(`${origin}/`);
    return { page, consoleErrors, foreignRequests, close: () => context.close() };
  }

  async function signIn(page: Page, token: string) {
    await page.fill('#token', token);
    await page.fill('#organization', DEMO_ORGANIZATION_ID);
    await page.click('#connect button[type=submit]');
    await page.waitForSelector('body[data-state=loaded], body[data-state=error]');
  }

  /** The query a page request about sets of workloads carries for a cluster, or none for all clusters. */
  function clusterQuery(cluster?: string): string {
    return cluster ? `&cluster_id=${cluster}` : '';
  }

  async function api(token: string, path: string) {
    const { body } = await request(t.server)
      .get(path)
      .set('Authorization', `Bearer ${token}`)
      .set('X-Organization-Id', DEMO_ORGANIZATION_ID)
      .expect(200);
    return body.data;
  }

  async function cellValues(page: Page, selector: string): Promise<string[]> {
    return page.$$eval(selector, (cells) => cells.map((cell) => (cell as HTMLElement).dataset.value ?? ''));
  }

  async function checkPanels(page: Page, token: string, label: string, cluster?: string) {
    const scope = clusterQuery(cluster);
    const capacity = await api(token, `/v1/capacity?interval=day${scope}`);
    const stats = await api(
      token,
      `/v1/workloads/stats?time_range=last_30_days&group_by=initiative_id&interval=day${scope}`,
    );
    const idle = await api(
      token,
      `/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10${scope}`,
    );
    const running: Holding[] = (await api(token, `/v1/workloads?limit=20&status=running${scope}`)).workloads;

    expect(await page.getAttribute('#summary-used', 'data-value')).toBe(
      String(capacity.summary.total_used_gpu_hours),
    );
    expect(await page.getAttribute('#summary-allocated', 'data-value')).toBe(
      String(capacity.summary.total_allocated_gpu_hours),
    );
    const capacityIds = await page.$$eval('#capacity-table tbody tr', (rows) =>
      rows.map((row) => `${(row as HTMLElement).dataset.kind}:${(row as HTMLElement).dataset.id}`),
    );
    expect(capacityIds).toEqual([
      ...capacity.pools.map((pool: { pool_id: string }) => `pool:${pool.pool_id}`),
      ...capacity.initiatives.map(
        (initiative: { initiative_id: string }) => `team:${initiative.initiative_id}`,
      ),
    ]);
    const used = await cellValues(page, '#capacity-table tbody td:nth-child(4)');
    expect(used).toEqual(
      [...capacity.pools, ...capacity.initiatives].map((entry: { used_gpu_hours: number }) =>
        String(entry.used_gpu_hours),
      ),
    );
    const statuses = await page.$$eval('#capacity-table tbody tr', (rows) =>
      rows.map((row) => (row as HTMLElement).dataset.status),
    );
    expect(statuses).toEqual(
      [...capacity.pools, ...capacity.initiatives].map(
        (entry: { budget_status: string }) => entry.budget_status,
      ),
    );

    expect(await page.getAttribute('#stats-workloads', 'data-value')).toBe(
      String(stats.summary.total_workloads),
    );
    expect(await cellValues(page, '#stats-table tbody td:nth-child(1)')).toEqual(
      stats.grouped.map((group: { initiative_id: string }) => group.initiative_id),
    );
    expect(await cellValues(page, '#stats-table tbody td:nth-child(3)')).toEqual(
      stats.grouped.map((group: { gpu_hours: number }) => String(group.gpu_hours)),
    );

    expect(await cellValues(page, '#idle-table tbody td:nth-child(1)')).toEqual(
      idle.workloads.map((entry: { workload_id: string }) => entry.workload_id),
    );
    expect(await cellValues(page, '#idle-table tbody td:nth-child(3)')).toEqual(
      idle.workloads.map((entry: { gpu_share: number }) => String(entry.gpu_share)),
    );
    expect(await cellValues(page, '#idle-table tbody td:nth-child(4)')).toEqual(
      idle.workloads.map((entry: { idle_gpu_hours: { avg: number } }) => String(entry.idle_gpu_hours.avg)),
    );
    expect(await cellValues(page, '#workloads-table tbody tr[data-workload] td:nth-child(1)')).toEqual(
      running.map((workload) => workload.workload_id),
    );
    expect(await cellValues(page, '#workloads-table tbody tr[data-workload] td:nth-child(4)')).toEqual(
      running.map((workload) => workload.cluster_id),
    );
    if (cluster) expect(new Set(running.map((workload) => workload.cluster_id))).toEqual(new Set([cluster]));
    expect(await cellValues(page, '#workloads-table tbody tr[data-workload] td:nth-child(6)')).toEqual(
      running.map((workload) => String(workload.gpu_share)),
    );
    expect(await page.$$('#capacity-chart canvas')).toHaveLength(1);
    expect(await page.$$('#stats-chart canvas')).toHaveLength(1);

    for (const panel of ['capacity', 'idle', 'stats', 'workloads']) {
      await page.locator(`#${panel}`).screenshot({ path: join(SCREENSHOTS, `${label}-${panel}.png`) });
    }
    await page.screenshot({ path: join(SCREENSHOTS, `${label}-page.png`), fullPage: true });
    return idle.workloads as { workload_id: string }[];
  }

  it('shows an ORG_ADMIN the figures the API gives, and a workload utilization on click', async () => {
    const { page, consoleErrors, foreignRequests, close } = await openPage();
    await signIn(page, adminToken);
    expect(await page.getAttribute('body', 'data-state')).toBe('loaded');
    const idle = await checkPanels(page, adminToken, 'org-admin');
    expect(idle.length).toBeGreaterThan(0);
    await page.click('#idle-table tbody tr:first-child button');
    await page.waitForSelector('#series-chart canvas');
    expect(await page.getAttribute('#series-title', 'data-workload')).toBe(idle[0].workload_id);
    await page.locator('#idle').screenshot({ path: join(SCREENSHOTS, 'org-admin-idle-series.png') });
    // The token stays in this tab's sessionStorage, never in the address.
    expect(page.url()).toBe(`${origin}/`);
    expect(await page.evaluate(() => sessionStorage.getItem('gpucap.token'))).toBe(adminToken);
    expect(consoleErrors).toEqual([]);
    expect(foreignRequests).toEqual([]);
    await close();
  });

  it("keeps a MEMBER's panels to its team", async () => {
    const { page, consoleErrors, close } = await openPage();
    await signIn(page, memberToken);
    await checkPanels(page, memberToken, 'member');
    const teams = await page.$$eval('#capacity-table tbody tr[data-kind=team]', (rows) =>
      rows.map((row) => (row as HTMLElement).dataset.id),
    );
    expect(teams).toEqual(['nlp']);
    expect(consoleErrors).toEqual([]);
    await close();
  });

  it('shows the devices and GPU share of workloads on MIG instances and shared replicas', async () => {
    const { page, consoleErrors, close } = await openPage();
    await signIn(page, adminToken);
    await page.selectOption('#workloads-status', '');
    await page.waitForSelector('#workloads-table[data-status=all]');
    // The newest workload of each sharing mode, with the page of 20 it is on.
    const found = new Map<string, { workload: Holding; page: number }>();
    let nextToken: string | null = null;
    for (let pageNumber = 0; pageNumber < 10 && found.size < 3; pageNumber += 1) {
      const response: { body: { data: { workloads: Holding[] }; metadata: { next_token: string | null } } } =
        await request(t.server)
          .get(`/v1/workloads?limit=20${nextToken ? `&next_token=${encodeURIComponent(nextToken)}` : ''}`)
          .set('Authorization', `Bearer ${adminToken}`)
          .set('X-Organization-Id', DEMO_ORGANIZATION_ID)
          .expect(200);
      for (const workload of response.body.data.workloads) {
        const mode = workload.gpu_sharing?.mode;
        if (mode && !found.has(mode)) found.set(mode, { workload, page: pageNumber });
      }
      nextToken = response.body.metadata.next_token;
    }
    expect([...found.keys()].sort()).toEqual(['mig', 'mps', 'time-slicing']);
    const lastPage = Math.max(...[...found.values()].map((entry) => entry.page));
    for (let shown = 0; shown < lastPage; shown += 1) {
      const rows = await page.$$eval('#workloads-table tbody tr', (all) => all.length);
      await page.click('#workloads-more');
      await page.waitForFunction(
        (before) => document.querySelectorAll('#workloads-table tbody tr').length > before,
        rows,
      );
    }
    const shareText = (id: string) =>
      page.textContent(`#workloads-table tr[data-workload="${id}"] td:nth-child(6)`);

    const mig = found.get('mig')!.workload;
    expect(mig.gpu_share).toBeLessThan(mig.gpu_count);
    const migText = await shareText(mig.workload_id);
    expect(migText).toBe(`${mig.gpu_count} × ${mig.gpu_sharing!.profile} = ${gpus(mig.gpu_share)}`);
    expect(migText).toMatch(/^\d+ × [1-7]g\.\d+gb = 0\.\d+ GPU$/);
    const sliced = found.get('time-slicing')!.workload;
    expect(await shareText(sliced.workload_id)).toBe(
      `${sliced.gpu_count} × 1/4 time-sliced = ${gpus(sliced.gpu_share)}`,
    );
    const mps = found.get('mps')!.workload;
    expect(await shareText(mps.workload_id)).toBe(
      `${mps.gpu_count} × 1/${mps.gpu_sharing!.replicas} MPS = ${gpus(mps.gpu_share)}`,
    );
    const whole = await page.$$eval('#workloads-table td[data-sharing=whole]', (cells) =>
      cells.map((cell) => cell.textContent),
    );
    expect(whole.length).toBeGreaterThan(0);
    for (const text of whole) expect(text).toMatch(/^\d+ GPUs?$/);
    await page.locator('#workloads').screenshot({ path: join(SCREENSHOTS, 'workloads-shares.png') });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(SCREENSHOTS, 'dark.png'), fullPage: true });
    expect(consoleErrors).toEqual([]);
    await close();
  });

  it('narrows every panel to the cluster chosen, by keyboard, and back to all clusters', async () => {
    const { page, consoleErrors, close } = await openPage();
    const sent: string[] = [];
    page.on('request', (made) => {
      if (new URL(made.url()).pathname.startsWith('/v1/')) sent.push(made.url());
    });
    await signIn(page, adminToken);
    const grouped = await api(adminToken, '/v1/workloads/stats?time_range=last_30_days&group_by=cluster_id');
    const clusters = grouped.grouped.map((group: { cluster_id: string }) => group.cluster_id).sort();
    expect(clusters).toEqual([...DEMO_CLUSTERS].sort());
    expect(await page.isVisible('#cluster')).toBe(true);
    const options = await page.$$eval('#cluster option', (all) =>
      all.map((option) => `${(option as HTMLOptionElement).value}=${option.textContent}`),
    );
    expect(options).toEqual(['=All clusters', ...clusters.map((id: string) => `${id}=${id}`)]);
    // Before a cluster is chosen, nothing is filtered.
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.filter((url) => url.includes('cluster_id='))).toEqual([]);
    const everywhere = Number(await page.getAttribute('#stats-workloads', 'data-value'));

    const [first] = clusters;
    sent.length = 0;
    await page.focus('#cluster');
    await page.keyboard.press('ArrowDown');
    await page.waitForSelector(`body[data-state=loaded][data-cluster="${first}"]`);
    expect(await page.inputValue('#cluster')).toBe(first);
    expect(sent.length).toBeGreaterThanOrEqual(4);
    for (const url of sent) expect(new URL(url).searchParams.get('cluster_id')).toBe(first);
    await checkPanels(page, adminToken, `cluster-${first}`, first);
    const inCluster = Number(await page.getAttribute('#stats-workloads', 'data-value'));
    expect(inCluster).toBeGreaterThan(0);
    expect(inCluster).toBeLessThan(everywhere);
    await page.locator('#scope').screenshot({ path: join(SCREENSHOTS, 'cluster-selector.png') });

    // The choice outlives a reload of the tab, like the token.
    await page.reload();
    await page.waitForSelector(`body[data-state=loaded][data-cluster="${first}"]`);
    expect(await page.inputValue('#cluster')).toBe(first);

    sent.length = 0;
    await page.selectOption('#cluster', '');
    await page.waitForSelector('body[data-state=loaded][data-cluster=""]');
    expect(sent.filter((url) => url.includes('cluster_id='))).toEqual([]);
    expect(Number(await page.getAttribute('#stats-workloads', 'data-value'))).toBe(everywhere);
    expect(consoleErrors).toEqual([]);
    await close();
  });

  it("shows the API's error message for a bad token", async () => {
    const { page, close } = await openPage();
    await signIn(page, 'gpucap_not-a-real-token');
    expect(await page.getAttribute('body', 'data-state')).toBe('error');
    const { body } = await request(t.server)
      .get('/v1/capacity?interval=day')
      .set('Authorization', 'Bearer gpucap_not-a-real-token')
      .set('X-Organization-Id', DEMO_ORGANIZATION_ID)
      .expect(401);
    expect(await page.textContent('#message')).toBe(body.error.message);
    expect(await page.isHidden('#panels')).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'bad-token.png') });
    await close();
  });

  it('fits a phone-width screen', async () => {
    const { page, consoleErrors, close } = await openPage({ width: 390, height: 844 });
    await signIn(page, adminToken);
    expect(await page.isVisible('#cluster')).toBe(true);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(SCREENSHOTS, 'phone.png'), fullPage: true });
    expect(consoleErrors).toEqual([]);
    await close();
  });

  it('serves its own assets under 300 KB gzipped, with a strict content security policy', async () => {
    const home = await request(t.server).get('/').expect(200);
    expect(home.headers['content-security-policy']).toContain("script-src 'self'");
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    const assets = [...home.text.matchAll(/\/assets\/[^"]+/g)].map((match) => match[0]);
    expect(assets).toHaveLength(2);
    let gzipped = gzipSync(home.text).length;
    for (const asset of assets) {
      const response = await request(t.server)
        .get(asset)
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      gzipped += gzipSync(response.body as Buffer).length;
    }
    expect(gzipped).toBeLessThan(300 * 1024);
    const unknown = await request(t.server).get('/assets/nope.js').expect(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });
});
