/**
 * npm run bench [-- --quick]: builds or reuses the benchmark database(s), starts the service and the
 * raw baseline against the largest one, drives every endpoint with autocannon and writes the results
 * (bench/results/*.json, and the generated block of docs/benchmarks.md for a full run).
 */
import { cpus, hostname, loadavg, totalmem } from 'node:os';
import { Client } from 'pg';
import { Dataset, ensureDataset } from './dataset';
import { loadFixtures, ORGANIZATION_ID } from './fixtures';
import { drive, LoadSettings, preflight } from './load';
import { BenchOptions, parseOptions } from './options';
import {
  BENCH_RATE_LIMIT_PER_MINUTE,
  buildService,
  createToken,
  DATABASE_POOL_SIZE,
  Server,
  startBaseline,
  startService,
} from './processes';
import { renderMarkdown, writeDocs, writeResultsJson } from './report';
import { BenchRun, failureCount, Machine, ScenarioResult, SizeRun } from './results';
import { buildScenarios, PathError, roleHeaders, Scenario, Target } from './scenarios';

const started = Date.now();
function log(line: string): void {
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const run: BenchRun = {
    mode: options.quick ? 'quick' : 'full',
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    startedAt: new Date().toISOString(),
    finishedAt: '',
    machine: await describeMachine(options.adminUrl),
    settings: {
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      warmupSeconds: options.warmupSeconds,
      cursorPage: options.cursorPage,
      rateLimitPerMinute: BENCH_RATE_LIMIT_PER_MINUTE,
      databasePoolSize: DATABASE_POOL_SIZE,
      serviceEntry: options.tsNode
        ? 'node bin/gpucap.js serve (sources through ts-node)'
        : 'node node_modules/.cache/gpucap-bench-build/src/cli/main.js serve, NODE_ENV=production (compiled, as the image runs it)',
    },
    runs: [],
  };
  if (!options.tsNode) await buildService(log);
  for (const [index, size] of options.sizes.entries()) {
    const isMain = index === options.sizes.length - 1;
    const dataset = await ensureDataset(options.adminUrl, size, options.seed, options, log);
    run.runs.push(await benchmarkDataset(dataset, options, isMain));
  }
  run.finishedAt = new Date().toISOString();
  const markdown = renderMarkdown(run);
  log(`raw results: ${writeResultsJson(run)}`);
  if (options.writeDocs) log(`table written to ${writeDocs(markdown)}`);
  process.stdout.write(`\n${markdown}\n`);
  const failures = failureCount(run);
  if (failures > 0) log(`FAILED: ${failures} scenario(s) had non-2xx answers or errors`);
  return failures > 0 ? 1 : 0;
}

async function benchmarkDataset(dataset: Dataset, options: BenchOptions, isMain: boolean): Promise<SizeRun> {
  const fixtures = await loadFixtures(dataset.url);
  await removeOldBenchTokens(dataset.url);
  const admin = await createToken(dataset.url, ORGANIZATION_ID, 'ORG_ADMIN', [], log);
  const member = await createToken(dataset.url, ORGANIZATION_ID, 'MEMBER', [fixtures.memberInitiative], log);
  const headers = { ORG_ADMIN: roleHeaders(admin), MEMBER: roleHeaders(member) };
  const scenarios = buildScenarios(fixtures, options.cursorPage).filter(
    (s) => (isMain || s.scaling) && (!options.only || options.only.some((text) => s.name.includes(text))),
  );
  const wantsBaseline = scenarios.some((s) => s.baseline);
  log(`starting the service${wantsBaseline ? ' and the baseline' : ''} on ${dataset.databaseName}`);
  const service = await startService(dataset.url, options.tsNode, log);
  const baseline = wantsBaseline ? await startBaseline(dataset.url, log) : null;
  const sizeRun: SizeRun = {
    size: dataset.size.label,
    databaseName: dataset.databaseName,
    dataset: dataset.marker,
    reused: dataset.reused,
    memberInitiative: fixtures.memberInitiative,
    serviceStartupRssBytes: service.peakRss(),
    serviceRssBytes: null,
    baselineRssBytes: null,
    baselineSqlSource: baseline ? await baselineSqlSource(baseline) : null,
    scenarios: [],
  };
  try {
    const targets = {
      service: { name: 'service' as const, baseUrl: service.baseUrl, headers },
      baseline: baseline ? { name: 'baseline' as const, baseUrl: baseline.baseUrl, headers } : null,
    };
    for (const scenario of scenarios) {
      sizeRun.scenarios.push(await runScenario(scenario, targets.service, targets.baseline, options));
    }
  } finally {
    sizeRun.serviceRssBytes = service.peakRss();
    sizeRun.baselineRssBytes = baseline?.peakRss() ?? null;
    await service.stop();
    await baseline?.stop();
  }
  return sizeRun;
}

async function runScenario(
  scenario: Scenario,
  service: Target,
  baseline: Target | null,
  options: BenchOptions,
): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    name: scenario.name,
    section: scenario.section,
    endpoint: scenario.endpoint,
    role: scenario.role,
    scaling: scenario.scaling,
    failures: [],
  };
  const settings: LoadSettings = options;
  await settle(service);
  const servicePaths = await preparePaths(scenario, service, result, options);
  if (!servicePaths) return result;
  const baselinePaths =
    scenario.baseline && baseline ? await preparePaths(scenario, baseline, result, options) : null;
  if (baselinePaths && baseline) await compareJson(scenario, service, baseline, servicePaths, result);

  log(`${scenario.name} as ${scenario.role}: service`);
  result.service = await drive(service.baseUrl, headersOf(service, scenario), servicePaths, settings);
  recordFailures(result, 'service', result.service);
  if (baselinePaths && baseline) {
    log(`${scenario.name} as ${scenario.role}: baseline`);
    result.baseline = await drive(baseline.baseUrl, headersOf(baseline, scenario), baselinePaths, settings);
    recordFailures(result, 'baseline', result.baseline);
  }
  const s = result.service;
  log(
    `  ${Math.round(s.requestsPerSecond)} req/s, p50 ${s.p50} ms, p99 ${s.p99} ms, non-2xx ${s.non2xx}, errors ${s.errors}` +
      (result.baseline ? ` | baseline ${Math.round(result.baseline.requestsPerSecond)} req/s` : ''),
  );
  return result;
}

/**
 * Waits until the previous scenario's backlog has drained (health, which queries the database, answers
 * quickly again), so a slow endpoint's queue is not charged to the next scenario.
 */
async function settle(target: Target, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    const started = Date.now();
    const response = await fetch(`${target.baseUrl}/v1/health`).catch(() => null);
    if (response?.ok && Date.now() - started < 100) return;
    await new Promise((done) => setTimeout(done, 500));
  }
  log(`${target.name} still slow to answer health after ${deadlineMs / 1000} s; going on`);
}

function headersOf(target: Target, scenario: Scenario): Record<string, string> {
  return { ...target.headers[scenario.role], ...scenario.headers };
}

/** The scenario's paths on one server, checked with a few requests; null when it cannot be driven. */
async function preparePaths(
  scenario: Scenario,
  target: Target,
  result: ScenarioResult,
  options: BenchOptions,
): Promise<string[] | null> {
  const headers = headersOf(target, scenario);
  let paths: string[];
  try {
    paths = await scenario.paths(target);
  } catch (error) {
    return refuse(result, target, error instanceof PathError ? error.status : null, String(error), options);
  }
  if (paths.length === 0)
    return refuse(result, target, null, 'no request paths (dataset lacks the data)', options);
  const { statuses } = await preflight(target.baseUrl, headers, paths);
  const bad = statuses.find((s) => s.status < 200 || s.status >= 300);
  if (!bad) return paths;
  // While an endpoint is being built it answers 404, or 400 for parameters its DTO does not know yet.
  const missing = bad.status === 404 || (bad.status === 400 && bad.body.includes('is not a known parameter'));
  const message = `${bad.path} answered ${bad.status}: ${bad.body.slice(0, 200)}`;
  return refuse(result, target, missing ? 404 : bad.status, message, options);
}

function refuse(
  result: ScenarioResult,
  target: Target,
  status: number | null,
  message: string,
  options: BenchOptions,
): null {
  if (status === 404 && options.allowMissing) {
    result.skipped = `${target.name}: endpoint not available yet (${message.slice(0, 80)})`;
    log(`${result.name} as ${result.role}: skipped, ${result.skipped}`);
  } else {
    result.failures.push(`${target.name}: ${message}`);
    log(`${result.name} as ${result.role}: FAILED before load, ${message}`);
  }
  return null;
}

function recordFailures(
  result: ScenarioResult,
  who: string,
  load: { non2xx: number; errors: number; statusCodes: Record<string, number> },
): void {
  if (load.non2xx > 0 || load.errors > 0) {
    result.failures.push(
      `${who}: ${load.non2xx} non-2xx, ${load.errors} errors (status codes ${JSON.stringify(load.statusCodes)})`,
    );
  }
}

/** The baseline must answer what the service answers; a difference is reported, not hidden. */
async function compareJson(
  scenario: Scenario,
  service: Target,
  baseline: Target,
  paths: string[],
  result: ScenarioResult,
): Promise<void> {
  const fetchBody = async (target: Target) => {
    const response = await fetch(`${target.baseUrl}${paths[0]}`, { headers: target.headers[scenario.role] });
    const body = (await response.json()) as Record<string, unknown>;
    delete body.request_id;
    // The raw baseline does not say when its answer was computed; everything else must match.
    const metadata = body.metadata as Record<string, unknown> | undefined;
    if (metadata) {
      delete metadata.as_of;
      if (Object.keys(metadata).length === 0) delete body.metadata;
    }
    return body;
  };
  const [fromService, fromBaseline] = await Promise.all([fetchBody(service), fetchBody(baseline)]);
  const difference = firstDifference(fromService, fromBaseline, '');
  result.sameJson = difference === null;
  if (difference) {
    result.jsonDifference = difference;
    log(`${scenario.name} as ${scenario.role}: baseline JSON differs at ${difference}`);
  }
}

function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) {
    return `${path || '.'} (${JSON.stringify(a)?.slice(0, 60)} vs ${JSON.stringify(b)?.slice(0, 60)})`;
  }
  if (a && typeof a === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b as object)]);
    for (const key of keys) {
      const found = firstDifference(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (found) return found;
    }
    return null;
  }
  return a === b ? null : `${path} (${JSON.stringify(a)} vs ${JSON.stringify(b)})`;
}

async function baselineSqlSource(baseline: Server): Promise<string | null> {
  const response = await fetch(`${baseline.baseUrl}/health`);
  const body = (await response.json()) as { sql?: string };
  return body.sql ?? null;
}

async function removeOldBenchTokens(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DELETE FROM api_tokens WHERE organization_id = $1 AND name LIKE 'bench-%'`, [
      ORGANIZATION_ID,
    ]);
  } finally {
    await client.end();
  }
}

async function describeMachine(adminUrl: string): Promise<Machine> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryBytes: totalmem(),
      node: process.version,
      postgres: rows[0].server_version,
      loadAverageAtStart: loadavg(),
      hostname: hostname(),
    };
  } finally {
    await client.end();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    log(`FAILED: ${error.stack ?? error.message}`);
    process.exit(1);
  },
);
