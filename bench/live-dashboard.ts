/**
 * npx ts-node --transpile-only bench/live-dashboard.ts [--sizes 1m] [--duration 120] [--dashboards 20]
 *                                                      [--before COMMIT [--before-dataset]] [--connections 50] [--write]
 *
 * Dashboards open on a database that keeps changing, as in production:
 * - a writer lands a sync-sized batch every 15 s through `gpucap import` (bench/live-writer.ts), so
 *   the organization's data version moves and cached answers stop being valid;
 * - N dashboards (ORG_ADMIN, TEAM_LEAD and MEMBER in turn; leads and members each of one team) load
 *   the page's whole set of requests every 10 s, in the page's order (web/app.ts), revalidating each
 *   answer they hold with If-None-Match as the page's `cache: 'no-cache'` fetches do;
 * - per endpoint: p50, p95 and p99 of the answers, non-2xx (304 is an answer), and the share served
 *   warm: a 304, or an answer whose `metadata.as_of` precedes the request, i.e. computed for an
 *   earlier request (the cache's own hit / miss / coalesced counts of the window are printed beside);
 * - the bar: the raw node+pg baseline on the cold detail pool (as bench/warm-cold.ts measures it),
 *   3 × its p99, which every endpoint's p95 is held to;
 * - with --before COMMIT the same against that commit's service in the same run (--before-dataset:
 *   on a dataset its own CLI built), only over the page's requests neither build refuses (4xx).
 * --duration is the live window in seconds; --connections, and the default 10 s + 3 s, drive the bar.
 */
import { describe, ensureDataset } from './dataset';
import { Fixtures, loadFixtures, ORGANIZATION_ID } from './fixtures';
import { drive, LoadResult } from './load';
import { type BenchOptions, parseOptions, takeOption } from './options';
import {
  buildService,
  createToken,
  CURRENT,
  serviceAtCommit,
  ServiceBuild,
  startBaseline,
  startService,
  withServer,
} from './processes';
import { replaceMarkedBlock } from './report';
import { roleHeaders } from './scenarios';
import { runWriter, WriterStats } from './live-writer';
import type { Role } from '../src/core/roles';

const PAGE_EVERY_MS = 10_000;
const WRITE_EVERY_MS = 15_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** The issue's bar: p95 of every endpoint within this many times the raw primary-key read's p99. */
const BAR_TIMES_RAW_P99 = 3;
const ROLES: Role[] = ['ORG_ADMIN', 'TEAM_LEAD', 'MEMBER'];
const DAY_SECONDS = 86_400;

/** One simulated tab: its credentials, and the answers it holds (the browser's HTTP cache). */
interface Dashboard {
  role: Role;
  headers: Record<string, string>;
  held: Map<string, { etag: string; body: unknown }>;
}

/** A build under test: its service, the importer its dataset is written with, and its dashboards. */
interface Target {
  build: ServiceBuild;
  writer: ServiceBuild;
  url: string;
  tabs: Dashboard[];
}

/** One answer: the page's name for the request, its endpoint, and how it went. */
interface Answer {
  request: string;
  endpoint: string;
  ms: number;
  status: number;
  warm: boolean;
}

interface BuildRun {
  label: string;
  answers: Answer[];
  pages: number[];
  writer: WriterStats;
  cache: Record<string, number>;
}

const started = Date.now();
function log(line: string): void {
  process.stderr.write(
    `[live-dashboard ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`,
  );
}

async function main(): Promise<void> {
  const written = takeOption(process.argv.slice(2), '--write', false);
  const ownDataset = takeOption(written.rest, '--before-dataset', false);
  const before = takeOption(ownDataset.rest, '--before');
  const duration = takeOption(before.rest, '--duration');
  const dashboards = takeOption(duration.rest, '--dashboards');
  const options = parseOptions([...dashboards.rest, '--keep-dataset']);
  const settings = {
    durationMs: count(duration.value ?? '120', '--duration') * 1000,
    dashboards: count(dashboards.value ?? '20', '--dashboards'),
  };
  const size = options.sizes.at(-1)!;
  const dataset = await ensureDataset(options.adminUrl, size, options.seed, options, log);
  await buildService(log);
  const fixtures = await loadFixtures(dataset.url);
  const today: Target = {
    build: CURRENT,
    writer: CURRENT,
    url: dataset.url,
    tabs: await openTabs(dataset.url, fixtures, settings.dashboards),
  };
  const builds = [today];
  if (before.value) {
    const build = serviceAtCommit(before.value);
    await buildService(log, build);
    // The writer is the dataset's own importer: today's for the shared dataset, the commit's for its own.
    builds.push(
      ownDataset.value === null
        ? { ...today, build }
        : await ownTarget(build, await beforeDataset(options, build), settings.dashboards),
    );
  }
  // Only the page's requests every build answers: a request the earlier code lacks leaves both columns.
  let kept: Set<string> | null = null;
  if (builds.length > 1) {
    const answered: Set<string>[] = [];
    for (const target of builds) answered.push(await preflight(target));
    kept = new Set(PAGE_REQUESTS.filter((name) => answered.every((names) => names.has(name))));
    log(`requests both builds answer: ${[...kept].join(', ')}`);
  }
  const runs: BuildRun[] = [];
  for (const target of builds) runs.push(await liveRun(target, kept, settings.durationMs));
  const detailPaths = fixtures.workloadIds.admin.map((id) => `/v1/workloads/${encodeURIComponent(id)}`);
  const raw = await withServer(await startBaseline(dataset.url, log), (baseline) =>
    drive(baseline.baseUrl, today.tabs[0].headers, detailPaths, options),
  );
  log(`raw detail: p99 ${raw.p99} ms`);
  const table = render(runs, raw, {
    ...settings,
    size: size.label,
    options,
    kept,
    before: before.value,
    own: ownDataset.value !== null,
  });
  process.stdout.write(`\n${table}\n`);
  if (written.value !== null) {
    replaceMarkedBlock('live-dashboard', table);
    log('table written to docs/benchmarks.md');
  }
}

function count(text: string, name: string): number {
  if (!/^[1-9]\d*$/.test(text)) throw new Error(`${name} must be a positive integer, got '${text}'`);
  return Number(text);
}

/** That commit's own dataset (same size and seed), built by its CLI: for a change of schema. */
async function ownTarget(build: ServiceBuild, url: string, dashboards: number): Promise<Target> {
  const tabs = await openTabs(url, await loadFixtures(url), dashboards, build.sourceDir);
  return { build, writer: build, url, tabs };
}

async function beforeDataset(options: BenchOptions, build: ServiceBuild): Promise<string> {
  const label = build.label.replace(/^service@/, 'at_');
  const dataset = await ensureDataset(options.adminUrl, options.sizes.at(-1)!, options.seed, options, log, {
    root: build.sourceDir,
    label,
  });
  log(`before dataset: ${describe(dataset.marker)}`);
  return dataset.url;
}

/**
 * The dashboards, their roles in turn; a lead and a member each belong to one team (the teams in
 * turn, busiest first), so they see what their scope holds and share cached answers only with the
 * same scope. One token per scope, minted by that build's CLI.
 */
async function openTabs(url: string, fixtures: Fixtures, count: number, root?: string): Promise<Dashboard[]> {
  const tokens = new Map<string, Promise<string>>();
  const tabs = Array.from({ length: count }, (_, index) => {
    const role = ROLES[index % ROLES.length];
    const team = fixtures.initiatives[Math.floor(index / ROLES.length) % fixtures.initiatives.length].id;
    const initiatives = role === 'ORG_ADMIN' ? [] : [team];
    const scope = `${role} ${initiatives.join(',')}`;
    if (!tokens.has(scope))
      tokens.set(scope, createToken(url, ORGANIZATION_ID, role, initiatives, log, root));
    return { role, token: tokens.get(scope)! };
  });
  return Promise.all(
    tabs.map(async ({ role, token }) => ({ role, headers: roleHeaders(await token), held: new Map() })),
  );
}

/**
 * The page's requests `build` answers: those no dashboard's one load was refused (4xx: an endpoint or
 * a parameter the build lacks). A 5xx is no verdict on the request, and stays in.
 */
async function preflight({ build, url, tabs }: Target): Promise<Set<string>> {
  return withServer(await startService(url, false, log, build), async (service) => {
    const answers: Answer[] = [];
    await openPage(service.baseUrl, tabs, null, answers);
    const refused = (a: Answer) => a.status >= 400 && a.status < 500;
    const failed = new Set(answers.filter(refused).map((a) => a.request));
    for (const name of failed) log(`${build.label}: ${name} answered 4xx; left out of both columns`);
    return new Set(PAGE_REQUESTS.filter((name) => !failed.has(name)));
  });
}

/**
 * One build's live window: its service started afresh, one load of every dashboard to open the page,
 * then the writer and the dashboards together for `durationMs`.
 */
async function liveRun(
  { build, writer: writerBuild, url, tabs }: Target,
  kept: Set<string> | null,
  durationMs: number,
): Promise<BuildRun> {
  return withServer(await startService(url, false, log, build), async (service) => {
    await openPage(service.baseUrl, tabs, kept, []);
    const cacheBefore = await cacheOutcomes(service.baseUrl);
    const answers: Answer[] = [];
    const pages: number[] = [];
    let finish = () => {};
    const stop = new Promise<void>((done) => (finish = done));
    const writer = runWriter(url, writerBuild, WRITE_EVERY_MS, stop, log);
    // Its failure is reported once the window's loads end (below), not as an unhandled rejection.
    writer.catch(() => undefined);
    const windowStart = Date.now();
    const loads = tabs.map(async (tab) => {
      const pending: Promise<void>[] = [];
      // Each tab at its own phase, a load every 10 s whether or not the last one has ended.
      for (
        let at = windowStart + Math.random() * PAGE_EVERY_MS;
        at < windowStart + durationMs;
        at += PAGE_EVERY_MS
      ) {
        await sleepUntil(at);
        const pageStart = performance.now();
        pending.push(
          loadPage(service.baseUrl, tab, kept, answers).then(
            () => void pages.push(performance.now() - pageStart),
          ),
        );
      }
      await Promise.all(pending);
    });
    await sleepUntil(windowStart + durationMs);
    finish();
    const [writes] = await Promise.all([writer, ...loads]);
    const cacheAfter = await cacheOutcomes(service.baseUrl);
    const cache = Object.fromEntries(
      Object.entries(cacheAfter).map(([k, v]) => [k, v - (cacheBefore[k] ?? 0)]),
    );
    log(
      `${build.label}: ${answers.length} answers in ${pages.length} page loads, ${writes.batches} batches, cache ${JSON.stringify(cache)}`,
    );
    return { label: build.label, answers, pages, writer: writes, cache };
  });
}

/** Every tab opens the page once on a service it has not seen yet (no answer held). */
async function openPage(
  baseUrl: string,
  tabs: Dashboard[],
  kept: Set<string> | null,
  answers: Answer[],
): Promise<void> {
  for (const tab of tabs) tab.held.clear();
  await Promise.all(tabs.map((tab) => loadPage(baseUrl, tab, kept, answers)));
}

function sleepUntil(at: number): Promise<void> {
  return new Promise((done) => setTimeout(done, Math.max(0, at - Date.now())));
}

/** The response cache's hit / miss / coalesced counts so far, from the service's Prometheus metrics. */
async function cacheOutcomes(baseUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^gpucap_response_cache_requests_total\{outcome="(\w+)"\} (\d+)/gm)) {
    counts[match[1]] = Number(match[2]);
  }
  return counts;
}

/** The page's requests by the names this benchmark gives them, with the endpoint each reports under. */
const ENDPOINTS: Record<string, string> = {
  clusters: 'GET /v1/workloads/stats',
  alerts: 'GET /v1/alerts',
  capacity: 'GET /v1/capacity',
  idle: 'GET /v1/workloads/metrics',
  'idle detail': 'GET /v1/workloads/{id}',
  'idle series': 'GET /v1/workloads/{id}/metrics',
  recommendations: 'GET /v1/recommendations',
  stats: 'GET /v1/workloads/stats',
  queue: 'GET /v1/workloads/stats',
  workloads: 'GET /v1/workloads',
};
const PAGE_REQUESTS = Object.keys(ENDPOINTS);

function answeredOk(status: number): boolean {
  return (status >= 200 && status < 300) || status === 304;
}

/**
 * One load of the page as web/app.ts makes it, on all clusters and its controls' defaults (30 days,
 * running workloads): the cluster list and the alerts, then capacity (it names teams and pools for
 * the rest), then the idle ranking (and the most idle workload's facts and utilization), savings,
 * statistics, running workloads and queue wait together. The running list has no finished row, so
 * it asks for no workload's own answer.
 */
async function loadPage(
  baseUrl: string,
  tab: Dashboard,
  kept: Set<string> | null,
  answers: Answer[],
): Promise<void> {
  const get = (name: string, path: string) =>
    kept && !kept.has(name) ? Promise.resolve(null) : request(baseUrl, tab, name, path, answers);
  await Promise.all([
    get('clusters', '/v1/workloads/stats?time_range=last_30_days&group_by=cluster_id'),
    get('alerts', '/v1/alerts'),
  ]);
  await get('capacity', '/v1/capacity?interval=day');
  const range = 'time_range=last_30_days&group_by=initiative_id&interval=day';
  await Promise.all([
    idlePanel(get),
    get('recommendations', '/v1/recommendations?time_range=last_7_days&limit=10'),
    get('stats', `/v1/workloads/stats?${range}`),
    get('workloads', '/v1/workloads?limit=20&status=running'),
    get('queue', `/v1/workloads/stats?${range}`),
  ]);
}

/** web/panels/idle.ts and detail.ts: the ranking, then the first row's facts, then its utilization. */
async function idlePanel(get: (name: string, path: string) => Promise<unknown>): Promise<void> {
  const ranked = (await get(
    'idle',
    '/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10',
  )) as {
    data: { workloads: { workload_id: string }[] };
  } | null;
  const first = ranked?.data.workloads[0]?.workload_id;
  if (!first) return;
  const id = encodeURIComponent(first);
  const detail = (await get('idle detail', `/v1/workloads/${id}`)) as {
    data: { started_at: string | null; duration_seconds: number };
  } | null;
  if (!detail) return;
  const { started_at: startedAt, duration_seconds: seconds } = detail.data;
  const range =
    startedAt !== null && seconds < DAY_SECONDS
      ? `time_range=job_lifetime&step=${seconds <= 7200 ? '1m' : '5m'}`
      : 'time_range=last_24h&step=5m';
  await get('idle series', `/v1/workloads/${id}/metrics?${range}&metrics=gpu_utilization`);
}

/**
 * One request as the page's fetch makes it: revalidated with the ETag the tab holds; a 304 gives the
 * held body back. Warm: a 304, or an answer describing an instant before the request was sent.
 */
async function request(
  baseUrl: string,
  tab: Dashboard,
  name: string,
  path: string,
  answers: Answer[],
): Promise<unknown> {
  const held = tab.held.get(path);
  const headers: Record<string, string> = { ...tab.headers, accept: 'application/json' };
  if (held) headers['if-none-match'] = held.etag;
  const sent = Date.now();
  const clock = performance.now();
  let status = 0;
  let body: unknown = null;
  let warm = false;
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      headers,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    status = response.status;
    if (status === 304 && held) {
      body = held.body;
      warm = true;
    } else {
      body = await response.json();
      const asOf = Date.parse((body as { metadata?: { as_of?: string } }).metadata?.as_of ?? '');
      warm = asOf < sent;
      const etag = response.headers.get('etag');
      if (response.ok && etag) tab.held.set(path, { etag, body });
    }
  } catch {
    // A timeout or a dropped connection: an answer with no status, counted with the non-2xx.
  }
  answers.push({ request: name, endpoint: ENDPOINTS[name], ms: performance.now() - clock, status, warm });
  return answeredOk(status) ? body : null;
}

function percentile(sorted: number[], share: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)];
}

const ms = (value: number) =>
  Number.isNaN(value) ? 'n/a' : value >= 10 ? value.toFixed(0) : value.toFixed(1);

interface Figures {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  non2xx: number;
  warm: number;
}

function figures(latencies: number[], answers: Answer[]): Figures {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
    non2xx: answers.filter((a) => !answeredOk(a.status)).length,
    warm: answers.length ? answers.filter((a) => a.warm).length / answers.length : NaN,
  };
}

function endpointFigures(run: BuildRun, endpoint: string): Figures {
  const answers = run.answers.filter((a) => a.endpoint === endpoint);
  return figures(
    answers.map((a) => a.ms),
    answers,
  );
}

function render(
  runs: BuildRun[],
  raw: LoadResult,
  settings: {
    size: string;
    durationMs: number;
    dashboards: number;
    options: BenchOptions;
    kept: Set<string> | null;
    before: string | null;
    own: boolean;
  },
): string {
  const bar = BAR_TIMES_RAW_P99 * raw.p99;
  const flags = settings.before
    ? ` --before ${settings.before}${settings.own ? ' --before-dataset' : ''}`
    : '';
  const command = `npx ts-node --transpile-only bench/live-dashboard.ts --sizes ${settings.size} --duration ${settings.durationMs / 1000} --dashboards ${settings.dashboards}${flags}`;
  const endpoints = [...new Set(Object.values(ENDPOINTS))].filter((endpoint) =>
    runs.some((run) => run.answers.some((a) => a.endpoint === endpoint)),
  );
  const cells = (f: Figures) =>
    `${f.count} | ${ms(f.p50)} / ${ms(f.p95)} / ${ms(f.p99)} | ${f.p95 <= bar ? 'yes' : 'no'} | ${f.non2xx} | ${Number.isNaN(f.warm) ? 'n/a' : `${Math.round(f.warm * 100)} %`}`;
  const header = runs.map(
    (run) => `answers, ${run.label} | p50 / p95 / p99 ms | p95 ≤ ${ms(bar)} ms | non-2xx | warm`,
  );
  const lines = [
    `Dataset ${settings.size}, ${settings.dashboards} dashboards (${ROLES.join(', ')} in turn) loading the page every ${PAGE_EVERY_MS / 1000} s, ` +
      `a writer batch every ${WRITE_EVERY_MS / 1000} s, ${settings.durationMs / 1000} s per build, measured ${new Date().toISOString().slice(0, 16)}Z`,
    `(\`${command}\`). Raw node+pg baseline, cold detail pool (${settings.options.connections} connections, ${settings.options.durationSeconds} s): ` +
      `p99 ${ms(raw.p99)} ms, so the bar is p95 ≤ ${ms(bar)} ms.` +
      (settings.kept ? ` Requests both builds answer: ${[...settings.kept].join(', ')}.` : ''),
    '',
    `| endpoint | ${header.join(' | ')} |`,
    `| - |${runs.map(() => ' -: | -: | - | -: | -: |').join('')}`,
  ];
  for (const endpoint of endpoints) {
    lines.push(
      `| \`${endpoint}\` | ${runs.map((run) => cells(endpointFigures(run, endpoint))).join(' | ')} |`,
    );
  }
  const page = (run: BuildRun) => {
    const f = figures(run.pages, []);
    return `${f.count} loads | ${ms(f.p50)} / ${ms(f.p95)} / ${ms(f.p99)} | | |`;
  };
  lines.push(`| whole page | ${runs.map(page).join(' | ')} |`, '');
  for (const run of runs) {
    const { writer } = run;
    const seconds = [...writer.seconds].sort((a, b) => a - b);
    lines.push(
      `- ${run.label}: writer ${writer.batches} batches, ${writer.workloads} workload and ${writer.samples} sample records, ` +
        `import p50 ${percentile(seconds, 0.5).toFixed(1)} s, max ${(seconds.at(-1) ?? NaN).toFixed(1)} s; ` +
        `response cache over the window: ${Object.entries(run.cache)
          .map(([outcome, count]) => `${count} ${outcome}`)
          .join(', ')}.`,
    );
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  log(`FAILED: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
