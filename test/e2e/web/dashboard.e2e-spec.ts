/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import { Clock } from '../../../src/common/clock';
import { projectRoot } from '../../../src/core/project-root';
import { DEMO_ORGANIZATION_ID, writeDemoData } from '../../../src/demo/demo-data';
import { DEMO_CLUSTERS, DEMO_TIMEZONE } from '../../../src/demo/demo-organization';
import {
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  writeAs,
} from '../../support/factories';
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

interface BudgetEntry {
  name: string;
  allocated_gpu_hours: number;
  initiative_id?: string;
  pool_id?: string;
  used_gpu_hours: number;
  budget_status: string;
  projected_exhaustion_date: string | null;
  daily: { date: string; used_gpu_hours: number; remaining_gpu_hours: number }[];
}

/** As the page writes GPU-hours: thousands separated, up to one decimal, none on a whole figure. */
function hours(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 1 });
}

/** US dollars as a person reads them: "$1,447,905.40", from the API's exact decimal string. */
function dollars(amount: string | null): string {
  if (amount === null) return '—';
  const [whole, cents] = amount.split('.');
  return `$${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${cents}`;
}

/** The widths the page is checked at: a phone, a laptop and a desktop screen. */
const VIEWPORTS = {
  phone: { width: 390, height: 844 },
  laptop: { width: 1280, height: 800 },
  desktop: { width: 1920, height: 1080 },
};

/**
 * What, inside one panel at the current width, is cut off or out of sight: text wider than its box,
 * a scroll box that scrolls sideways, an element reaching past the panel's edges, a table cell not
 * shown (but for a column the layout leaves out, header and all, for the detail view), or a cell shown
 * without its column's name.
 */
function layoutProblems(panelId: string): string[] {
  const panel = document.getElementById(panelId)!;
  const bounds = panel.getBoundingClientRect();
  const problems: string[] = [];
  const name = (element: Element) =>
    `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''}${element.className && typeof element.className === 'string' ? `.${element.className.split(' ').join('.')}` : ''} "${(element.textContent ?? '').trim().slice(0, 40)}"`;
  // A table's header row counts wherever it shows: at phone width it is visually hidden (1 px).
  const hidden = (element: Element) =>
    element.closest('.visually-hidden, [hidden]') !== null ||
    element.getClientRects().length === 0 ||
    (element.closest('thead')?.getBoundingClientRect().width ?? 2) <= 1;
  for (const element of Array.from(panel.querySelectorAll('*'))) {
    if (hidden(element)) continue;
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.left < bounds.left - 1 || box.right > bounds.right + 1)
      problems.push(
        `${name(element)} reaches past the panel (${Math.round(box.left)}–${Math.round(box.right)})`,
      );
    const style = getComputedStyle(element);
    if (
      style.display !== 'inline' &&
      element.scrollWidth > element.clientWidth + 1 &&
      element.clientWidth > 0
    )
      problems.push(
        `${name(element)} is cut: ${element.scrollWidth} px of content in ${element.clientWidth}`,
      );
  }
  for (const table of Array.from(panel.querySelectorAll('table:not(.u-legend)'))) {
    const headers = Array.from(table.querySelectorAll(':scope > thead th')).map((header) =>
      header.querySelector('.visually-hidden') ? '' : (header.textContent ?? '').trim(),
    );
    // As cards (phone width) each cell shows its column's name itself; as a table, the header does.
    const cards = (table.querySelector('thead')?.getBoundingClientRect().width ?? 0) <= 1;
    const dropped = Array.from(table.querySelectorAll(':scope > thead th')).map(
      (header) => getComputedStyle(header).display === 'none',
    );
    // The table's own rows and cells, not those of a chart legend inside an opened detail row.
    for (const row of Array.from(table.querySelectorAll(':scope > tbody > tr'))) {
      const cells = Array.from(row.querySelectorAll(':scope > td'));
      cells.forEach((cell, index) => {
        if (cells.length > 1 && dropped[index]) return;
        if (cell.getClientRects().length === 0) problems.push(`${name(cell)} is not shown`);
        if (cells.length === 1) return;
        const label = (cell as HTMLElement).dataset.label ?? '';
        if (label !== headers[index])
          problems.push(`${name(cell)} is labelled "${label}", not "${headers[index]}"`);
        const shown = getComputedStyle(cell, '::before').content;
        if (label && cards && shown !== JSON.stringify(label))
          problems.push(`${name(cell)} shows ${shown} instead of its column "${label}"`);
      });
    }
  }
  return problems;
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
  async function openPage(viewport = { width: 1400, height: 900 }) {
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

  async function signIn(page: Page, token: string, organization = DEMO_ORGANIZATION_ID) {
    await page.fill('#token', token);
    await page.fill('#organization', organization);
    await page.click('#connect button[type=submit]');
    await page.waitForSelector('body[data-state=loaded], body[data-state=error]');
  }

  /** The query a page request about sets of workloads carries for a cluster, or none for all clusters. */
  function clusterQuery(cluster?: string): string {
    return cluster ? `&cluster_id=${cluster}` : '';
  }

  /** The whole answer, metadata included. */
  async function answer(token: string, path: string) {
    const { body } = await request(t.server)
      .get(path)
      .set('Authorization', `Bearer ${token}`)
      .set('X-Organization-Id', DEMO_ORGANIZATION_ID)
      .expect(200);
    return body;
  }

  async function api(token: string, path: string) {
    return (await answer(token, path)).data;
  }

  async function cellValues(page: Page, selector: string): Promise<string[]> {
    return page.$$eval(selector, (cells) => cells.map((cell) => (cell as HTMLElement).dataset.value ?? ''));
  }

  async function checkPanels(page: Page, token: string, label: string, cluster?: string) {
    const scope = clusterQuery(cluster);
    const capacity = await api(token, `/v1/capacity?interval=day${scope}`);
    // The total may last while pools or teams have run out: the sentence says so, never contradicts the table.
    const ranOut = [...capacity.pools, ...capacity.initiatives].filter(
      (entry: { budget_status: string }) => entry.budget_status === 'exhausted',
    ).length;
    expect([label, (await page.textContent('#capacity-summary'))!.includes('already ran out')]).toEqual([
      label,
      ranOut > 0,
    ]);
    const stats = await api(
      token,
      `/v1/workloads/stats?time_range=last_30_days&group_by=initiative_id&interval=day${scope}`,
    );
    const idle = await api(
      token,
      `/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10${scope}`,
    );
    const listed = await answer(token, `/v1/workloads?limit=20&status=running${scope}`);
    const running: (Holding & { submitted_by: string; started_at: string; cost: string | null })[] =
      listed.data.workloads;
    expect(listed.metadata.currency).toBe('USD');

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
    // Money beside the GPU-hours, the exact strings the API answered (the demo has prices), written
    // as dollars: separators and cents.
    const groupCosts = stats.grouped.map((group: { total_cost: string | null }) => group.total_cost);
    expect(await cellValues(page, '#stats-table tbody td:nth-child(5)')).toEqual(
      groupCosts.map((cost: string | null) => cost ?? ''),
    );
    expect(await texts(page, '#stats-table tbody td:nth-child(5)')).toEqual(groupCosts.map(dollars));
    expect(await page.getAttribute('#stats-cost', 'data-value')).toBe(stats.summary.total_cost);
    expect(await page.textContent('#stats-cost')).toBe(dollars(stats.summary.total_cost));
    // Efficiency comes with the share of the GPU-hours it covers: those of workloads with samples.
    const covered = stats.summary.sampled_gpu_hours / stats.summary.total_gpu_hours;
    expect(covered).toBeGreaterThan(0);
    expect(covered).toBeLessThan(1);
    expect(Number(await page.getAttribute('#stats-sampled-share', 'data-value'))).toBe(covered);
    expect(await page.textContent('#stats-sampled-share')).toBe(`${hours(covered * 100)} %`);
    expect(await page.getAttribute('#stats-efficiency', 'data-value')).toBe(
      String(stats.summary.gpu_efficiency),
    );
    expect(await page.textContent('#stats-summary')).toContain(
      `of these GPU-hours (${hours(stats.summary.sampled_gpu_hours)}) whose workloads have utilization samples.`,
    );
    // Energy from the same workloads' power samples, per GPU-hour over the GPU-hours with samples.
    const energy = stats.summary;
    expect(await page.getAttribute('#stats-energy-kwh', 'data-value')).toBe(String(energy.total_energy_kwh));
    expect(await page.getAttribute('#stats-carbon-kg', 'data-value')).toBe(String(energy.total_carbon_kg));
    // Shown only where some energy has no carbon intensity (the demo has intensities for every cluster).
    const uncovered = page.locator('#stats-uncovered-energy-kwh');
    expect(await uncovered.count()).toBe(energy.uncovered_energy_kwh > 0 ? 1 : 0);
    if (energy.uncovered_energy_kwh > 0)
      expect(await uncovered.getAttribute('data-value')).toBe(String(energy.uncovered_energy_kwh));
    expect(await page.getAttribute('#stats-kwh-per-gpu-hour', 'data-value')).toBe(
      String(energy.total_energy_kwh / energy.sampled_gpu_hours),
    );
    const energyColumns = (group: {
      initiative_id: string;
      sampled_gpu_hours: number;
      total_energy_kwh: number;
      total_carbon_kg: number;
    }) => [
      group.initiative_id,
      String(group.sampled_gpu_hours),
      String(group.total_energy_kwh),
      String(group.total_carbon_kg),
      group.sampled_gpu_hours > 0 ? String(group.total_energy_kwh / group.sampled_gpu_hours) : '',
    ];
    expect(await energyTable(page)).toEqual(stats.grouped.map(energyColumns));
    const entries = [...capacity.pools, ...capacity.initiatives] as {
      used_cost: string | null;
      allocated_cost: string | null;
    }[];
    expect(await cellValues(page, '#capacity-table tbody td:nth-child(8)')).toEqual(
      entries.map((entry) => entry.used_cost ?? ''),
    );
    expect(await texts(page, '#capacity-table tbody td:nth-child(8)')).toEqual(
      entries.map((entry) => dollars(entry.used_cost)),
    );
    expect(await cellValues(page, '#capacity-table tbody td:nth-child(9)')).toEqual(
      entries.map((entry) => entry.allocated_cost ?? ''),
    );
    expect(await texts(page, '#capacity-table tbody td:nth-child(9)')).toEqual(
      entries.map((entry) => dollars(entry.allocated_cost)),
    );
    // Capacity is not costed for one cluster (its use is read from raw runs): no cost sentence then.
    if (capacity.summary.total_used_cost === null)
      expect(await page.locator('#summary-cost').count()).toBe(0);
    else {
      expect(await page.getAttribute('#summary-cost', 'data-value')).toBe(capacity.summary.total_used_cost);
      expect(await page.textContent('#summary-cost')).toBe(dollars(capacity.summary.total_used_cost));
    }

    // The queue wait panel reads the same statistics: p50 and p95 per team, pending now.
    expect(await page.getAttribute('#queue-p95', 'data-value')).toBe(
      String(stats.summary.queue_wait.p95_seconds ?? ''),
    );
    expect(await page.getAttribute('#queue-pending', 'data-value')).toBe(String(stats.summary.pending.count));
    const waits = (key: 'p50_seconds' | 'p95_seconds') =>
      stats.grouped.map((group: { queue_wait: Record<string, number | null> }) =>
        String(group.queue_wait[key] ?? ''),
      );
    expect(await cellValues(page, '#queue-table tbody td:nth-child(1)')).toEqual(
      stats.grouped.map((group: { initiative_id: string }) => group.initiative_id),
    );
    expect(await cellValues(page, '#queue-table tbody td:nth-child(3)')).toEqual(waits('p50_seconds'));
    expect(await cellValues(page, '#queue-table tbody td:nth-child(4)')).toEqual(waits('p95_seconds'));
    expect(await cellValues(page, '#queue-table tbody td:nth-child(5)')).toEqual(
      stats.grouped.map((group: { pending: { count: number } }) => String(group.pending.count)),
    );
    expect(
      await page.$$eval('#queue-table tbody td:nth-child(5)', (cells) =>
        cells.map((cell) => (cell as HTMLElement).dataset.gpuShare),
      ),
    ).toEqual(
      stats.grouped.map((group: { pending: { gpu_share: number } }) => String(group.pending.gpu_share)),
    );
    expect(await page.getAttribute('#queue-chart', 'data-days')).toBe(String(stats.timeline.length));

    expect(await cellValues(page, '#idle-table tbody td:nth-child(1)')).toEqual(
      idle.workloads.map((entry: { workload_id: string }) => entry.workload_id),
    );
    expect(await cellValues(page, '#idle-table tbody td:nth-child(3)')).toEqual(
      idle.workloads.map((entry: { gpu_share: number }) => String(entry.gpu_share)),
    );
    expect(await cellValues(page, '#idle-table tbody td:nth-child(4)')).toEqual(
      idle.workloads.map((entry: { idle_gpu_hours: { avg: number } }) => String(entry.idle_gpu_hours.avg)),
    );
    expect(await cellValues(page, '#idle-table tbody td:nth-child(5)')).toEqual(
      idle.workloads.map((entry: { idle_cost: string | null }) => entry.idle_cost ?? ''),
    );
    expect(await texts(page, '#idle-table tbody td:nth-child(5)')).toEqual(
      idle.workloads.map((entry: { idle_cost: string | null }) => dollars(entry.idle_cost)),
    );
    expect(await cellValues(page, '#workloads-table tbody tr[data-workload] td:nth-child(1)')).toEqual(
      running.map((workload) => workload.workload_id),
    );
    const workloadCells = (column: number) =>
      cellValues(page, `#workloads-table tbody tr[data-workload] td:nth-child(${column})`);
    expect(await workloadCells(3)).toEqual(running.map((workload) => workload.submitted_by));
    expect(await workloadCells(5)).toEqual(running.map((workload) => String(workload.gpu_share)));
    // A running workload's duration runs from its start to the answer's as_of (the test's fixed now).
    expect(await workloadCells(7)).toEqual(
      running.map((workload) =>
        String(Math.floor((Date.parse(listed.metadata.as_of) - Date.parse(workload.started_at)) / 1000)),
      ),
    );
    expect(await workloadCells(8)).toEqual(running.map((workload) => workload.cost ?? ''));
    expect(await texts(page, '#workloads-table tbody tr[data-workload] td:nth-child(8)')).toEqual(
      running.map((workload) => dollars(workload.cost)),
    );
    expect(await workloadCells(9)).toEqual(running.map((workload) => workload.cluster_id));
    if (cluster) expect(new Set(running.map((workload) => workload.cluster_id))).toEqual(new Set([cluster]));
    expect(await page.$$('#capacity-chart canvas')).toHaveLength(1);
    expect(await page.$$('#stats-chart canvas')).toHaveLength(1);
    await checkReadability(page, capacity, stats, idle, running);
    await checkRecommendations(page, token, capacity.initiatives, scope);

    for (const panel of ['capacity', 'idle', 'recommendations', 'stats', 'queue', 'workloads']) {
      await page.locator(`#${panel}`).screenshot({ path: join(SCREENSHOTS, `${label}-${panel}.png`) });
    }
    await page.screenshot({ path: join(SCREENSHOTS, `${label}-page.png`), fullPage: true });
    return idle.workloads as { workload_id: string }[];
  }

  type Devices = Pick<Holding, 'gpu_count' | 'gpu_share' | 'gpu_sharing'>;

  interface Advice {
    workload_id: string;
    initiative_id: string;
    gpu_model: string;
    current: Devices;
    recommended: Devices;
    evidence: { coverage: number; p95_gpu_utilization: number; p99_memory_used_gib: number };
    risk: number;
    gpu_hours_saved: number;
    cost_saved: string | null;
  }

  /**
   * "Could run smaller": the 10 workloads of the last 7 days the API ranks first, with its figures
   * exactly, what they hold and what would do in the GPU's terms, team names, dollars, and the totals
   * per team of every recommendation.
   */
  async function checkRecommendations(page: Page, token: string, initiatives: BudgetEntry[], scope: string) {
    const { data, metadata } = await answer(
      token,
      `/v1/recommendations?time_range=last_7_days&limit=10${scope}`,
    );
    const items: Advice[] = data.recommendations;
    const totals: {
      initiative_id: string;
      gpu_hours_saved: number;
      cost_saved: string | null;
      unpriced_gpu_hours_saved: number;
    }[] = metadata.totals_by_initiative;
    const names = new Map(initiatives.map((team) => [team.initiative_id!, team.name]));
    const lastDay = localDate(new Date(Date.parse(data.range.end) - 1).toISOString());
    expect(await page.textContent('#recommendations-title')).toMatch(
      /^\s*Could run smaller: savings per week/,
    );
    expect(await page.textContent('#recommendations-period')).toBe(
      `last 7 days, ${localDate(data.range.start)} – ${lastDay}`,
    );
    if (items.length === 0) {
      expect(await texts(page, '#recommendations-table tbody td')).toEqual([
        'Nothing could have run smaller in the last 7 days.',
      ]);
      expect(await page.textContent('#recommendations-summary')).toBe('');
      return;
    }
    const column = (index: number) =>
      cellValues(page, `#recommendations-table tbody tr[data-workload] td:nth-child(${index})`);
    const shown = await page.$$eval('#recommendations-table tbody tr', (rows) =>
      rows.map((row) => (row as HTMLElement).dataset.workload),
    );
    expect(shown).toEqual(items.map((item) => item.workload_id));
    expect(await column(2)).toEqual(items.map((item) => item.initiative_id));
    expect(await texts(page, '#recommendations-table tbody td:nth-child(2)')).toEqual(
      items.map((item) => names.get(item.initiative_id)),
    );
    const devices = (holding: Devices, model: string) =>
      `${holding.gpu_count} × ${holding.gpu_sharing?.mode === 'mig' ? holding.gpu_sharing.profile : model}`;
    expect(await texts(page, '#recommendations-table tbody td:nth-child(3)')).toEqual(
      items.map(
        (item) => `${devices(item.current, item.gpu_model)} → ${devices(item.recommended, item.gpu_model)}`,
      ),
    );
    expect(await column(3)).toEqual(items.map((item) => String(item.recommended.gpu_share)));
    expect(
      await page.$$eval('#recommendations-table tbody td:nth-child(3)', (cells) =>
        cells.map((cell) => (cell as HTMLElement).dataset.current),
      ),
    ).toEqual(items.map((item) => String(item.current.gpu_share)));
    expect(await column(4)).toEqual(items.map((item) => String(item.evidence.p95_gpu_utilization)));
    expect(await column(5)).toEqual(items.map((item) => String(item.evidence.p99_memory_used_gib)));
    expect(await column(6)).toEqual(items.map((item) => String(item.evidence.coverage)));
    expect(await texts(page, '#recommendations-table tbody td:nth-child(6)')).toEqual(
      items.map((item) => hours(item.evidence.coverage * 100)),
    );
    expect(await column(7)).toEqual(items.map((item) => String(item.risk)));
    expect(await column(8)).toEqual(items.map((item) => String(item.gpu_hours_saved)));
    expect(await texts(page, '#recommendations-table tbody td:nth-child(8)')).toEqual(
      items.map((item) => hours(item.gpu_hours_saved)),
    );
    expect(await column(9)).toEqual(items.map((item) => item.cost_saved ?? ''));
    expect(await texts(page, '#recommendations-table tbody td:nth-child(9)')).toEqual(
      items.map((item) => dollars(item.cost_saved)),
    );
    expect(await page.getAttribute('#recommendations-count', 'data-value')).toBe(
      String(metadata.total_count),
    );
    const allHours = totals.reduce((sum, team) => sum + team.gpu_hours_saved, 0);
    expect(await page.getAttribute('#recommendations-gpu-hours', 'data-value')).toBe(String(allHours));
    expect(
      await page.$$eval('#recommendations-summary span[data-team]', (entries) =>
        entries.map((entry) => ({
          team: (entry as HTMLElement).dataset.team,
          hours: (entry as HTMLElement).dataset.value,
          cost: (entry as HTMLElement).dataset.cost,
          text: entry.textContent,
        })),
      ),
    ).toEqual(
      [...totals]
        .sort((a, b) => b.gpu_hours_saved - a.gpu_hours_saved)
        .map((team) => ({
          team: team.initiative_id,
          hours: String(team.gpu_hours_saved),
          cost: team.cost_saved ?? '',
          text: `${names.get(team.initiative_id)} ${hours(team.gpu_hours_saved)} GPU-h (${dollars(team.cost_saved)}${
            team.unpriced_gpu_hours_saved
              ? `, ${hours(team.unpriced_gpu_hours_saved)} GPU-h without a price`
              : ''
          })`,
        })),
    );
  }

  /** The organization's local date of an instant, as the page writes it. */
  function localDate(iso: string): string {
    return new Intl.DateTimeFormat('en-CA', {
      timeZone: DEMO_TIMEZONE,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).format(new Date(iso));
  }

  /** The organization's local time of day of an instant, to the minute. */
  function localClock(iso: string): string {
    return new Intl.DateTimeFormat('en-GB', {
      timeZone: DEMO_TIMEZONE,
      hour: '2-digit',
      minute: '2-digit',
    }).format(new Date(iso));
  }

  /** The per-team energy table's rows, team first: each cell's exact figure (`data-value`) or its text. */
  async function energyTable(page: Page, read: 'value' | 'text' = 'value'): Promise<string[][]> {
    return page.$$eval(
      '#stats-energy-table tbody tr',
      (rows, shown) =>
        rows.map((row) =>
          Array.from((row as HTMLTableRowElement).cells).map((cell) =>
            shown ? (cell.textContent ?? '') : (cell.dataset.value ?? ''),
          ),
        ),
      read === 'text',
    );
  }

  async function texts(page: Page, selector: string): Promise<string[]> {
    return page.$$eval(selector, (all) => all.map((element) => (element.textContent ?? '').trim()));
  }

  /** Legend rows of a chart as `label=value`, the x series (the day) first. */
  async function legend(page: Page, chart: string): Promise<string[]> {
    return page.$$eval(`#${chart} .u-legend .u-series`, (rows) =>
      rows.map(
        (row) =>
          `${(row.querySelector('.u-label')?.textContent ?? '').trim()}=${(row.querySelector('.u-value')?.textContent ?? '').trim()}`,
      ),
    );
  }

  /**
   * Units in headers, team names in every table, "after period end" for exhaustion past the period,
   * day labels without hours, legends that carry figures before any hover, and a per-day chart of the
   * GPU-hours each team used on each day (the burn-down's daily use).
   */
  async function checkReadability(
    page: Page,
    capacity: {
      timezone: string;
      period: { start: string; end: string };
      pools: BudgetEntry[];
      initiatives: BudgetEntry[];
      summary: { daily: BudgetEntry['daily']; projected_exhaustion_date: string | null };
    },
    stats: { grouped: { initiative_id: string }[] },
    idle: { workloads: { initiative_id: string }[] },
    running: { workload_id: string }[],
  ) {
    expect(capacity.timezone).toBe(DEMO_TIMEZONE);
    expect(await page.getAttribute('#capacity-summary', 'data-timezone')).toBe(DEMO_TIMEZONE);
    expect(await texts(page, '#capacity-table thead th')).toEqual([
      'Kind',
      'Name',
      'Allocated (GPU-h)',
      'Used (GPU-h)',
      'Remaining (GPU-h)',
      'Status',
      'Runs out',
      'Used cost',
      'Allocated cost',
    ]);
    expect(await texts(page, '#idle-table thead th')).toContain('Idle (GPU-h)');
    expect(await texts(page, '#workloads-table thead th')).toEqual([
      'Workload',
      'Team',
      'Submitted by',
      'Status',
      'GPUs held',
      'Submitted',
      'Duration',
      'Cost',
      'Cluster',
      'Instance type',
    ]);
    // The budget period as the organization's own dates: it starts and ends at its midnights.
    const lastDay = localDate(new Date(Date.parse(capacity.period.end) - 1).toISOString());
    expect(await page.textContent('#capacity-period')).toBe(
      `${localDate(capacity.period.start)} – ${lastDay}, ${DEMO_TIMEZONE}`,
    );
    for (const edge of [capacity.period.start, capacity.period.end]) expect(localClock(edge)).toBe('00:00');
    expect(await texts(page, '#stats-table thead th')).toEqual([
      'Team',
      'Workloads',
      'GPU-hours',
      'Success rate (%)',
      'Cost',
    ]);

    const entries = [...capacity.pools, ...capacity.initiatives];
    const periodEnd = Date.parse(capacity.period.end);
    expect(capacity.pools.length).toBeGreaterThan(0);
    // Allocations are whole GPU-hours: "13,710", never "13,710.0".
    const allocated = await texts(page, '#capacity-table tbody td:nth-child(3)');
    expect(allocated).toEqual(entries.map((entry) => hours(entry.allocated_gpu_hours)));
    for (const text of allocated) expect(text).toMatch(/^[\d,]+$/);
    expect(await texts(page, '#capacity-table tbody td:nth-child(7)')).toEqual(
      entries.map(({ projected_exhaustion_date: date }) =>
        date === null ? '—' : Date.parse(date) >= periodEnd ? 'after period end' : localDate(date),
      ),
    );

    const names = new Map(capacity.initiatives.map((team) => [team.initiative_id!, team.name]));
    expect(await texts(page, '#idle-table tbody td:nth-child(2)')).toEqual(
      idle.workloads.map((entry) => names.get(entry.initiative_id)),
    );
    expect(await texts(page, '#stats-table tbody td:nth-child(1)')).toEqual(
      stats.grouped.map((group) => names.get(group.initiative_id)),
    );
    const listed = await page.$$eval('#workloads-table tbody tr[data-workload]', (rows) =>
      rows.map((row) => [
        (row as HTMLElement).dataset.workload,
        row.querySelector('td:nth-child(2)')?.textContent,
      ]),
    );
    expect(listed.map(([, team]) => team).every((team) => [...names.values()].includes(team!))).toBe(true);
    expect(listed.map(([id]) => id)).toEqual(running.map((workload) => workload.workload_id));

    // The burn-down runs to the period's last day: the total, its projection (whose legend says when
    // it runs out rather than repeating the figure) and a line per pool.
    const days = capacity.summary.daily;
    const periodDays =
      Math.round(
        (Date.parse(`${lastDay}T00:00:00Z`) - Date.parse(`${days[0].date}T00:00:00Z`)) / 86_400_000,
      ) + 1;
    expect(await page.getAttribute('#capacity-chart', 'data-days')).toBe(String(periodDays));
    expect(await page.getAttribute('#capacity-chart', 'data-last')).toBe(lastDay);
    const exhaustion = capacity.summary.projected_exhaustion_date;
    const burnDown = await legend(page, 'capacity-chart');
    expect(burnDown).toEqual([
      `Day=${days[days.length - 1].date} (latest)`,
      `Remaining=${hours(days[days.length - 1].remaining_gpu_hours)} GPU-h (latest)`,
      `At the last 7 days' rate=${
        exhaustion === null
          ? 'not running out'
          : Date.parse(exhaustion) >= periodEnd
            ? 'lasts past period end'
            : `runs out ${localDate(exhaustion)}`
      }`,
      ...capacity.pools.map(
        (pool) =>
          `${pool.name}=${hours(pool.daily[pool.daily.length - 1].remaining_gpu_hours)} GPU-h (latest)`,
      ),
    ]);

    const teams = capacity.initiatives.filter((team) => team.daily.length > 0);
    const shown = teams[0].daily.slice(-30);
    expect(await page.getAttribute('#stats-chart', 'data-from')).toBe(shown[0].date);
    expect(await page.getAttribute('#stats-chart', 'data-days')).toBe(String(shown.length));
    expect(await page.textContent('#stats-title')).toBe('GPU-hours used per team per day');
    expect(await legend(page, 'stats-chart')).toEqual([
      `Day=${shown[shown.length - 1].date} (latest)`,
      ...teams.map(
        (team) => `${team.name}=${hours(team.daily[team.daily.length - 1].used_gpu_hours)} GPU-h (latest)`,
      ),
    ]);
  }

  it('shows an ORG_ADMIN the figures the API gives, and a workload utilization on click', async () => {
    const { page, consoleErrors, foreignRequests, close } = await openPage();
    await signIn(page, adminToken);
    expect(await page.getAttribute('body', 'data-state')).toBe('loaded');
    // The oldest data_as_of of the panels' answers: just now, on one database, so not marked.
    expect(await page.textContent('#freshness')).toMatch(
      /^Data as of \d{4}-\d{2}-\d{2},? \d{2}:\d{2}:\d{2}$/,
    );
    expect(await page.getAttribute('#freshness', 'data-stale')).toBe('false');
    const shownAsOf = Date.parse((await page.getAttribute('#freshness', 'data-value'))!);
    expect(Date.now() - shownAsOf).toBeLessThan(60_000);
    const idle = await checkPanels(page, adminToken, 'org-admin');
    expect(idle.length).toBeGreaterThan(0);
    // The demo has workloads that could run smaller: the panel's rows are compared, not only its
    // empty state.
    expect((await page.$$('#recommendations-table tbody tr[data-workload]')).length).toBeGreaterThan(0);
    // A day on the daily charts reads as a date, hovered or not.
    await page.locator('#capacity-chart').scrollIntoViewIfNeeded();
    const chart = (await page.locator('#capacity-chart .u-over').boundingBox())!;
    await page.mouse.move(chart.x + 5, chart.y + chart.height / 2);
    await page.mouse.move(chart.x + chart.width / 2, chart.y + chart.height / 2, { steps: 5 });
    await page.waitForFunction(
      () => !document.querySelector('#capacity-chart .u-legend .u-value')?.textContent?.includes('latest'),
    );
    const [day, remaining] = await legend(page, 'capacity-chart');
    expect(day).toMatch(/^Day=\d{4}-\d{2}-\d{2}$/);
    expect(remaining).toMatch(/^Remaining=-?[\d,]+(\.\d)? GPU-h$/);
    expect(await page.textContent('#idle-title')).toBe('Running workloads by idle GPU-hours');
    // The most idle workload's utilization opens with the page; a click anywhere on another row opens
    // that one's, as its name's button does.
    expect(idle.length).toBeGreaterThan(1);
    await page.waitForSelector(`#series-title[data-workload="${idle[0].workload_id}"]`);
    await page.click('#idle-table tbody tr:nth-child(2) td:nth-child(4)');
    await page.waitForSelector(`#series-title[data-workload="${idle[1].workload_id}"]`);
    expect(await page.getAttribute('#idle-table tbody tr:nth-child(2)', 'class')).toContain('selected');
    await page.click('#idle-table tbody tr:first-child button');
    await page.waitForSelector(`#series-title[data-workload="${idle[0].workload_id}"]`);
    await page.waitForSelector('#series-chart canvas');
    const [time, utilization] = await legend(page, 'series-chart');
    expect(time).toMatch(/^Time=\d{4}-\d{2}-\d{2} \d{2}:\d{2} \(latest\)$/);
    expect(utilization).toMatch(/^GPU utilization=[\d,]+(\.\d)? % \(latest\)$/);
    expect(await page.getAttribute('#series-title', 'data-workload')).toBe(idle[0].workload_id);
    await page.locator('#idle').screenshot({ path: join(SCREENSHOTS, 'org-admin-idle-series.png') });
    // Queue wait: one line per team, the 95th percentile until the median is asked for.
    const stats = await api(
      adminToken,
      '/v1/workloads/stats?time_range=last_30_days&group_by=initiative_id&interval=day',
    );
    const teamNames = new Map(
      (
        (await api(adminToken, '/v1/capacity')) as { initiatives: { initiative_id: string; name: string }[] }
      ).initiatives.map((team) => [team.initiative_id, team.name]),
    );
    type Bucket = {
      bucket_start: string;
      grouped: { initiative_id: string; queue_wait: Record<string, number | null> }[];
    };
    const teams = (stats.grouped as { initiative_id: string }[]).map((group) => group.initiative_id);
    // Without a cursor the legend reads the latest day on which the first line has a point.
    const queueLegend = (key: 'p50_seconds' | 'p95_seconds') => {
      const wait = (bucket: Bucket, team: string) =>
        bucket.grouped.find((entry) => entry.initiative_id === team)?.queue_wait[key] ?? null;
      const timeline = stats.timeline as Bucket[];
      const last = [...timeline].reverse().find((bucket) => wait(bucket, teams[0]) !== null)!;
      return [
        `Day=${localDate(last.bucket_start)} (latest)`,
        ...teams.map((team) => {
          const seconds = wait(last, team);
          return `${teamNames.get(team)}=${seconds === null ? '—' : `${hours(seconds / 60)} min (latest)`}`;
        }),
      ];
    };
    expect(await page.getAttribute('#queue-chart', 'data-percentile')).toBe('p95_seconds');
    expect(await legend(page, 'queue-chart')).toEqual(queueLegend('p95_seconds'));
    await page.selectOption('#queue-percentile', 'p50_seconds');
    await page.waitForSelector('#queue-chart[data-percentile=p50_seconds]');
    expect(await legend(page, 'queue-chart')).toEqual(queueLegend('p50_seconds'));
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

  describe('with a dozen firing alerts', () => {
    /** As `gpucap alerts` words them: teams and pools by id, in quotes. */
    const ALERTS = [
      ...['nlp', 'vision', 'speech', 'recsys', 'robotics', 'platform'].map((team, index) => ({
        fingerprint: `web-budget-${team}`,
        initiativeId: team,
        labels: {
          alertname: 'GpuBudgetThresholdCrossed',
          kind: 'initiative',
          initiative_id: team,
          threshold: index < 2 ? '1.0' : '0.9',
          severity: index < 2 ? 'critical' : 'warning',
        },
        summary: `Team '${team}' has used ${index < 2 ? 104 + index : 91 + index}.2 % of its GPU-hour budget`,
      })),
      ...['h100-reserved', 'a100-reserved'].map((pool) => ({
        fingerprint: `web-budget-${pool}`,
        initiativeId: null,
        labels: {
          alertname: 'GpuBudgetThresholdCrossed',
          kind: 'pool',
          pool_id: pool,
          threshold: '1.0',
          severity: 'critical',
        },
        summary: `Pool '${pool}' has used 101.7 % of its GPU-hour budget`,
      })),
      ...['speech', 'recsys'].map((team) => ({
        fingerprint: `web-forecast-${team}`,
        initiativeId: team,
        labels: {
          alertname: 'GpuBudgetExhaustionForecast',
          kind: 'initiative',
          initiative_id: team,
          severity: 'warning',
        },
        summary: `Team '${team}' will exhaust its GPU-hour budget on 2026-12-20, before the period ends`,
      })),
      {
        fingerprint: 'web-idle-nlp',
        initiativeId: 'nlp',
        labels: {
          alertname: 'GpuWorkloadIdle',
          initiative_id: 'nlp',
          workload_id: 'wl-0002999',
          submitted_by: 'alice@demo-robotics.example',
          severity: 'warning',
        },
        summary: "Workload 'wl-0002999' of team 'nlp' averaged 3.5 % GPU utilization for 60 minutes",
      },
      {
        fingerprint: 'web-sync-stale',
        initiativeId: null,
        labels: { alertname: 'GpucapSyncStale', source: 'prometheus', severity: 'warning' },
        summary: "Sync source 'prometheus' has not succeeded for more than 30 minutes",
      },
    ];
    const TEAM_NAMES: Record<string, string> = {
      nlp: 'Language Models',
      vision: 'Computer Vision',
      speech: 'Speech',
      recsys: 'Recommendations',
      robotics: 'Robotics',
      platform: 'ML Platform',
    };
    const POOL_NAMES: Record<string, string> = {
      'h100-reserved': 'H100 reserved (p5)',
      'a100-reserved': 'A100 reserved (p4d/p4de)',
    };

    /** What the strip writes for an alert: names for the quoted ids, the day it started. */
    function line(alert: (typeof ALERTS)[number], startsAt: string): string {
      const named = alert.summary
        .replace(/(Team|team) '([^']+)'/g, (_all, word: string, id: string) => `${word} ${TEAM_NAMES[id]}`)
        .replace(/Pool '([^']+)'/, (_all, id: string) => `Pool ${POOL_NAMES[id]}`)
        .replace(/'([^']+)'/g, '$1');
      return `${named} · since ${localDate(startsAt)}`;
    }

    /** Shown lines of the strip, in order, with their severity and the capacity rows they link to. */
    async function shownLines(page: Page) {
      return page.$$eval('#alerts-list li', (items) =>
        items
          .filter((item) => item.getClientRects().length > 0)
          .map((item) => ({
            alertname: (item as HTMLElement).dataset.alertname,
            severity: (item as HTMLElement).dataset.severity,
            text: (item.textContent ?? '').trim(),
            links: Array.from(item.querySelectorAll('a')).map((link) => link.getAttribute('href')),
          })),
      );
    }

    beforeAll(async () => {
      // Started an hour apart, newest first in each severity.
      for (const [index, alert] of ALERTS.entries()) {
        await database.dataSource.query(
          `INSERT INTO alert_states (organization_id, fingerprint, alertname, initiative_id, labels, annotations, starts_at)
           VALUES ($1, $2, $3, $4, $5, $6, now() - interval '1 hour' * $7)`,
          [
            DEMO_ORGANIZATION_ID,
            alert.fingerprint,
            alert.labels.alertname,
            alert.initiativeId,
            { ...alert.labels, organization_id: DEMO_ORGANIZATION_ID },
            { summary: alert.summary, description: `${alert.summary}.` },
            index + 1,
          ],
        );
      }
    });

    afterAll(async () => {
      await database.dataSource.query(
        `DELETE FROM alert_states WHERE organization_id = $1 AND fingerprint LIKE 'web-%'`,
        [DEMO_ORGANIZATION_ID],
      );
    });

    it.each(Object.entries(VIEWPORTS))(
      'shows them at %s width as one full-width strip under a third of the screen, five lines until asked',
      async (label, viewport) => {
        const { page, consoleErrors, close } = await openPage(viewport);
        await signIn(page, adminToken);
        const listed = (
          (await api(adminToken, '/v1/alerts')) as {
            alerts: { annotations: { summary: string }; starts_at: string }[];
          }
        ).alerts;
        expect(listed).toHaveLength(12);
        const startsAt = new Map(listed.map((alert) => [alert.annotations.summary, alert.starts_at]));
        const expected = ALERTS.map((alert) => ({ alert, startsAt: startsAt.get(alert.summary)! }))
          // Critical first, then warnings; the newest first in each.
          .sort(
            (a, b) =>
              Number(b.alert.labels.severity === 'critical') -
                Number(a.alert.labels.severity === 'critical') ||
              Date.parse(b.startsAt) - Date.parse(a.startsAt),
          )
          .map(({ alert, startsAt: since }) => ({
            alertname: alert.labels.alertname,
            severity: alert.labels.severity,
            text: line(alert, since),
            links: [
              ...('initiative_id' in alert.labels ? [`#capacity-team-${alert.labels.initiative_id}`] : []),
              ...('pool_id' in alert.labels ? [`#capacity-pool-${alert.labels.pool_id}`] : []),
            ],
          }));

        const strip = (await page.locator('#alerts').boundingBox())!;
        const capacity = (await page.locator('#capacity').boundingBox())!;
        const bounded = async () => {
          const box = (await page.locator('#alerts').boundingBox())!;
          expect(box.height).toBeLessThan(viewport.height / 3);
          expect(await page.evaluate(layoutProblems, 'alerts')).toEqual([]);
        };
        // Full width, above the panels, and bounded.
        expect(strip.x).toBe(capacity.x);
        expect(strip.width).toBe(capacity.width);
        expect(strip.y + strip.height).toBeLessThanOrEqual(capacity.y);
        await bounded();
        expect(
          await page.$$eval('.alert-group', (groups) =>
            groups.map((group) => (group as HTMLElement).dataset.severity),
          ),
        ).toEqual(['critical', 'warning']);
        expect(await page.textContent('#alerts-count')).toBe('12 firing');
        expect(await shownLines(page)).toEqual(expected.slice(0, 5));
        expect(await page.textContent('#alerts-more')).toBe('Show 7 more');
        await page.locator('#alerts').screenshot({ path: join(SCREENSHOTS, `${label}-alerts.png`) });

        await page.click('#alerts-more');
        expect(await page.textContent('#alerts-more')).toBe('Show fewer');
        await bounded();
        // Expanded, the lines scroll inside the strip: each one is there to scroll to.
        expect(
          await page.$$eval(
            '#alerts-list li',
            (items) => items.filter((item) => !(item as HTMLElement).hidden).length,
          ),
        ).toBe(12);
        await page.locator('#alerts').screenshot({ path: join(SCREENSHOTS, `${label}-alerts-expanded.png`) });

        // A team's name takes the reader to its row of the capacity table.
        await page.click('#alerts-list a[href="#capacity-team-nlp"] >> nth=0');
        const row = (await page.locator('#capacity-team-nlp').boundingBox())!;
        expect(row.y).toBeGreaterThanOrEqual(0);
        expect(row.y + row.height).toBeLessThanOrEqual(viewport.height);
        expect(page.url()).toBe(`${origin}/`);
        expect(consoleErrors).toEqual([]);
        await close();
      },
    );

    it("shows a MEMBER only its team's", async () => {
      const { page, consoleErrors, close } = await openPage(VIEWPORTS.laptop);
      await signIn(page, memberToken);
      const lines = await shownLines(page);
      expect(lines.map((shown) => shown.alertname)).toEqual(['GpuBudgetThresholdCrossed', 'GpuWorkloadIdle']);
      expect(lines[0].text).toMatch(
        /^Team Language Models has used 104\.2 % of its GPU-hour budget · since \d{4}-\d{2}-\d{2}$/,
      );
      expect(await page.isHidden('#alerts-more')).toBe(true);
      expect(consoleErrors).toEqual([]);
      await close();
    });
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
      page.textContent(`#workloads-table tr[data-workload="${id}"] td:nth-child(5)`);

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
    // Requests about sets of workloads; one workload's own reads (the idle panel opens the most idle
    // one's) name it and need no cluster.
    const sent: string[] = [];
    page.on('request', (made) => {
      const path = new URL(made.url()).pathname;
      const ofOneWorkload = /^\/v1\/workloads\/(?!stats$|metrics$)[^/]+(\/metrics)?$/.test(path);
      if (path.startsWith('/v1/') && !ofOneWorkload) sent.push(made.url());
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
    // What a chosen cluster's capacity compares: its own use against the whole pools' budgets.
    expect(await page.textContent('#capacity-summary')).toMatch(
      new RegExp(
        `^Cluster ${first}'s use against the whole pools' budgets \\(allocations belong to pools, not to clusters\\): its workloads used `,
      ),
    );
    expect(await page.textContent('#capacity-note')).toContain("Used cost is this cluster's use");
    const clusterCapacity = await api(adminToken, `/v1/capacity?cluster_id=${first}`);
    expect(clusterCapacity.summary.total_used_cost).toMatch(/^\d+\.\d{2}$/);
    expect(await page.getAttribute('#summary-cost', 'data-value')).toBe(
      clusterCapacity.summary.total_used_cost,
    );
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

  describe('with power samples of known watts and a carbon intensity', () => {
    const HOUR = 3_600_000;
    // Runs two days ago, so inside the last 30 days at any time of day.
    const start = Math.floor(Date.now() / HOUR) * HOUR - 48 * HOUR;
    const at = (offset: number) => new Date(start + offset);
    let organization: string;
    let admin: string;

    /** A sample of `watts` every minute of `minutes` from the run's start. */
    const everyMinute = (workloadId: string, minutes: number, watts: number) =>
      Array.from({ length: minutes }, (_, minute) => ({
        workloadId,
        at: at(minute * 60_000),
        powerUsage: watts,
      }));

    beforeAll(async () => {
      const day = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR;
      organization = await seedOrganization(database.dataSource, {
        initiatives: ['cool', 'hot', 'unsampled'],
        budgetPeriodStart: new Date(day - 20 * 24 * HOUR),
        budgetPeriodEnd: new Date(day + 20 * 24 * HOUR),
      });
      const run = (workloadId: string, initiativeId: string, gpuCount: number, minutes: number) => ({
        workloadId,
        initiativeId,
        gpuCount,
        status: 'completed' as const,
        clusterId: 'c-grid',
        submittedAt: at(0),
        startedAt: at(0),
        completedAt: at(minutes * 60_000),
      });
      await insertWorkloads(database.dataSource, organization, [
        run('cool-sampled', 'cool', 1, 60),
        run('cool-unsampled', 'cool', 2, 60),
        run('hot-grid', 'hot', 2, 60),
        { ...run('hot-dark', 'hot', 1, 30), clusterId: 'c-dark' },
        run('unsampled-run', 'unsampled', 1, 60),
      ]);
      // 500 g/kWh at PUE 1.2 on c-grid from the day before; none on c-dark.
      await writeAs(
        database.dataSource,
        `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, effective_to, grams_co2e_per_kwh, pue)
         VALUES ($1, 'c-grid', $2, NULL, 500, 1.2)`,
        [organization, at(-24 * HOUR)],
      );
      await insertSamples(database.dataSource, organization, [
        ...everyMinute('cool-sampled', 60, 300),
        ...everyMinute('hot-grid', 60, 1400),
        ...everyMinute('hot-dark', 30, 600),
      ]);
      admin = await createApiToken(database.dataSource, organization, { role: 'ORG_ADMIN' });
    });

    it("shows each team's kWh, kg CO2e and kWh per GPU-hour, and the line over all of them", async () => {
      const { page, consoleErrors, close } = await openPage(VIEWPORTS.laptop);
      await signIn(page, admin, organization);
      // cool: 300 W for an hour on one GPU, 0.3 kWh × 0.6 kg; its unsampled 2 GPU-hours divide nothing.
      // hot: 1,400 W for an hour on two GPUs (1.4 kWh × 0.6 kg) and 600 W for half an hour on one
      // where no intensity is known (0.3 kWh, no carbon): 1.7 kWh over 2.5 GPU-hours.
      expect(await energyTable(page)).toEqual([
        ['cool', '1', '0.3', '0.18', '0.3'],
        ['hot', '2.5', '1.7', '0.84', String(1.7 / 2.5)],
        ['unsampled', '0', '0', '0', ''],
      ]);
      expect(await texts(page, '#stats-energy-table thead th')).toEqual([
        'Team',
        'With samples (GPU-h)',
        'Energy (kWh)',
        'CO2e (kg)',
        'kWh per GPU-hour',
      ]);
      expect(await energyTable(page, 'text')).toEqual([
        ['Initiative cool', '1', '0.3', '0.2', '0.3'],
        ['Initiative hot', '2.5', '1.7', '0.8', '0.68'],
        ['Initiative unsampled', '0', '—', '—', '—'],
      ]);
      expect(
        await page.getAttribute('#stats-energy-table tr[data-team=hot] td[data-figure=carbon_kg]', 'title'),
      ).toBe('Leaves out 0.3 kWh without a carbon intensity');
      // 2 kWh over the 3.5 GPU-hours with samples; 1.02 kg CO2e of the 1.7 kWh covered.
      expect(await page.textContent('#stats-energy')).toBe(
        'Energy 2 kWh, 1 kg CO2e (0.3 kWh without a carbon intensity), 0.57 kWh per GPU-hour with samples (high for hot work, low for cool).',
      );
      expect(await page.getAttribute('#stats-energy-kwh', 'data-value')).toBe('2');
      expect(await page.getAttribute('#stats-carbon-kg', 'data-value')).toBe('1.02');
      expect(await page.getAttribute('#stats-uncovered-energy-kwh', 'data-value')).toBe('0.3');
      expect(await page.getAttribute('#stats-kwh-per-gpu-hour', 'data-value')).toBe(String(2 / 3.5));
      expect(await page.getAttribute('#stats-kwh-per-gpu-hour', 'title')).toContain('high for hot work');
      expect(await page.evaluate(layoutProblems, 'stats')).toEqual([]);
      await page.locator('#stats').screenshot({ path: join(SCREENSHOTS, 'stats-energy.png') });
      expect(consoleErrors).toEqual([]);
      await close();
    });

    it('names no uncovered energy where there is none, and no energy where nothing was sampled', async () => {
      const { page, consoleErrors, close } = await openPage();
      const member = (team: string) =>
        createApiToken(database.dataSource, organization, { role: 'MEMBER', initiativeIds: [team] });
      await signIn(page, await member('cool'), organization);
      expect(await page.textContent('#stats-energy')).toBe(
        'Energy 0.3 kWh, 0.2 kg CO2e, 0.3 kWh per GPU-hour with samples (high for hot work, low for cool).',
      );
      expect(await page.locator('#stats-uncovered-energy-kwh').count()).toBe(0);
      await page.click('#forget');
      await signIn(page, await member('unsampled'), organization);
      expect(await page.isHidden('#stats-energy')).toBe(true);
      expect(await page.textContent('#stats-energy')).toBe('');
      expect(await energyTable(page)).toEqual([['unsampled', '0', '0', '0', '']]);
      expect(consoleErrors).toEqual([]);
      await close();
    });
  });

  it('says "after period end" for a budget projected to run out after the period', async () => {
    const { page, consoleErrors, close } = await openPage();
    let team = '';
    let late = '';
    await page.route('**/v1/capacity?*', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as {
        data: { period: { end: string }; summary: BudgetEntry; initiatives: BudgetEntry[] };
      };
      late = new Date(Date.parse(body.data.period.end) + 9 * 86_400_000).toISOString();
      const [first] = body.data.initiatives;
      team = first.initiative_id!;
      Object.assign(first, { projected_exhaustion_date: late, budget_status: 'on_track' });
      Object.assign(body.data.summary, { projected_exhaustion_date: late, budget_status: 'on_track' });
      await route.fulfill({ response, json: body });
    });
    await signIn(page, adminToken);
    const runsOut = page.locator(`#capacity-table tr[data-kind=team][data-id="${team}"] td:nth-child(7)`);
    expect(await runsOut.textContent()).toBe('after period end');
    expect(await runsOut.getAttribute('title')).toContain(localDate(late));
    expect(await page.textContent('#capacity-summary')).toContain("lasts past the period's end");
    expect(consoleErrors).toEqual([]);
    await close();
  });

  describe.each(Object.entries(VIEWPORTS))('at %s width', (label, viewport) => {
    let opened: Awaited<ReturnType<typeof openPage>>;
    let detailed: {
      workload_id: string;
      cluster_id: string;
      instance_type: string;
      duration_seconds: number;
    };

    beforeAll(async () => {
      opened = await openPage(viewport);
      await signIn(opened.page, adminToken);
      // Every workload, so rows on MIG and shared GPUs (the longest texts) are on the page.
      await opened.page.selectOption('#workloads-status', '');
      await opened.page.waitForSelector('#workloads-table[data-status=all]');
      // Finished workloads' durations come from their own answers: wait for the last of them.
      await opened.page.waitForFunction(
        () =>
          !Array.from(document.querySelectorAll('#workloads-table td')).some(
            (cell) => cell.textContent === '…',
          ),
      );
    });

    afterAll(async () => {
      expect(opened.consoleErrors).toEqual([]);
      await opened.close();
    });

    it('fits the screen without sideways scrolling, wide tables across the whole width', async () => {
      const { page } = opened;
      expect(await page.isVisible('#cluster')).toBe(true);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      const box = async (id: string) => (await page.locator(`#${id}`).boundingBox())!;
      const capacity = await box('capacity');
      for (const panel of ['idle', 'recommendations', 'workloads']) {
        expect((await box(panel)).x).toBe(capacity.x);
        expect((await box(panel)).width).toBe(capacity.width);
      }
      // From a laptop's width the two small panels share a row; a phone stacks them.
      const [stats, queue] = [await box('stats'), await box('queue')];
      if (viewport.width >= 1280) {
        expect(queue.y).toBe(stats.y);
        expect(stats.width + queue.width).toBeLessThan(capacity.width);
      } else expect(queue.y).toBeGreaterThan(stats.y + stats.height);
      await page.screenshot({ path: join(SCREENSHOTS, `${label}.png`), fullPage: true });
    });

    it("opens a workload's details and utilization on a click of its row", async () => {
      const { page } = opened;
      // A finished workload: its duration comes from its own answer, the list has no end.
      const id = await page.$$eval('#workloads-table tbody tr[data-workload]', (rows) =>
        rows
          .find((row) => row.querySelector('td:nth-child(4)')?.textContent === 'completed')
          ?.getAttribute('data-workload'),
      );
      detailed = (await api(adminToken, `/v1/workloads/${id}`)) as typeof detailed;
      // A cell that is no button: the row itself opens it.
      await page.click(`#workloads-table tr[data-workload="${id}"] td:nth-child(4)`);
      await page.waitForSelector('#workload-detail-chart canvas');
      expect(await page.getAttribute('#workload-detail-title', 'data-workload')).toBe(id);
      const facts = Object.fromEntries(
        await page.$$eval('#workload-detail-facts > div', (pairs) =>
          pairs.map((pair) => [(pair as HTMLElement).dataset.fact, pair.querySelector('dd')?.textContent]),
        ),
      );
      // What the table leaves out at this width is in the details.
      expect(facts).toMatchObject({ Cluster: detailed.cluster_id, 'Instance type': detailed.instance_type });
      expect(
        await page.getAttribute(`#workloads-table tr[data-workload="${id}"] td:nth-child(7)`, 'data-value'),
      ).toBe(String(detailed.duration_seconds));
      // The same row again closes them.
      await page.click(`#workloads-table tr[data-workload="${id}"] td:nth-child(2)`);
      expect(await page.locator('#workload-detail-chart').count()).toBe(0);
      await page.click(`#workloads-table tr[data-workload="${id}"] button`);
      await page.waitForSelector('#workload-detail-chart canvas');
    });

    it.each(['capacity', 'idle', 'recommendations', 'stats', 'queue', 'workloads'])(
      'shows every column of the %s panel with its name, and cuts no text',
      async (panel) => {
        const { page } = opened;
        const rows = await page.$$eval(
          `#${panel} table:not(.u-legend) tbody tr`,
          (all) => all.filter((row) => row.querySelectorAll('td').length > 1).length,
        );
        expect(rows).toBeGreaterThan(0);
        expect(await page.evaluate(layoutProblems, panel)).toEqual([]);
        await page.locator(`#${panel}`).screenshot({ path: join(SCREENSHOTS, `${label}-${panel}.png`) });
      },
    );
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
