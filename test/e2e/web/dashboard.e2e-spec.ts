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
    await page.waitForSelector('body[data-state]');
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

  async function checkPanels(page: Page, token: string, label: string) {
    const capacity = await api(token, '/v1/capacity?interval=day');
    const stats = await api(
      token,
      '/v1/workloads/stats?time_range=last_30_days&group_by=initiative_id&interval=day',
    );
    const idle = await api(token, '/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10');

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
      idle.workloads.map((entry: { idle_gpu_hours: { avg: number } }) => String(entry.idle_gpu_hours.avg)),
    );
    expect(await page.$$('#capacity-chart canvas')).toHaveLength(1);
    expect(await page.$$('#stats-chart canvas')).toHaveLength(1);

    for (const panel of ['capacity', 'idle', 'stats']) {
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
