/**
 * npx ts-node --transpile-only bench/warm-cold.ts [--sizes 1m] [--duration 10] [--warmup 3] [--connections 50]
 *                                                 [--before COMMIT] [--only 'ENDPOINT|…'] [--write]
 *
 * Warm and cold reads, side by side in one run, as ORG_ADMIN on one dataset:
 * - warm: per endpoint a pool of 50 dashboard queries, repeated at random by every connection, with
 *   the response cache on (the default);
 * - cold: the same service with RESPONSE_CACHE_TTL_SECONDS=0 and a pool of thousands of distinct
 *   queries per endpoint where the API has that many, so nearly every request is computed (identical
 *   concurrent requests are still coalesced, as in production);
 * - ceiling: a bare node:http server sending, for the same warm paths, the bytes the service sent;
 * - the cold bar: the raw node+pg baseline (bench/baseline-server.ts) answering the cold detail pool,
 *   whose p99 × 3 every cold row is held to;
 * - with --before COMMIT, the cold and warm pools again against that commit's service (same dataset,
 *   same run), the "today's code" of a before/after comparison.
 * --only keeps the endpoints whose path contains one of the texts (the raw bar is always measured).
 * Prints a markdown table; with --write it replaces the block between the warm-cold markers of
 * docs/benchmarks.md.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, ensureDataset } from './dataset';
import { Fixtures, loadFixtures, ORGANIZATION_ID } from './fixtures';
import { drive, LoadResult } from './load';
import { type BenchOptions, parseOptions, takeOption } from './options';
import {
  buildService,
  createToken,
  Server,
  serviceAtCommit,
  startBaseline,
  startCeiling,
  startService,
  withServer,
} from './processes';
import { replaceMarkedBlock } from './report';
import { roleHeaders } from './scenarios';
import { RANK_METRICS, TIME_RANGES as TIME_RANGES_OF_METRICS } from '../src/metrics/metric-names';

interface EndpointPools {
  endpoint: string;
  warm: string[];
  cold: string[];
}

interface Row {
  endpoint: string;
  warm: LoadResult;
  ceiling: LoadResult;
  cold: LoadResult;
  before: LoadResult | null;
  warmBefore: LoadResult | null;
}

/** The issue's bar: no endpoint's cold p99 above this many times the raw baseline's detail p99. */
const COLD_P99_BAR = 3;

const WARM_POOL = 50;

const started = Date.now();
function log(line: string): void {
  process.stderr.write(`[warm-cold ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
}

async function main(): Promise<void> {
  const written = takeOption(process.argv.slice(2), '--write', false);
  const ownDataset = takeOption(written.rest, '--before-dataset', false);
  const beforeOption = takeOption(ownDataset.rest, '--before');
  const write = written.value !== null;
  const beforeCommit = beforeOption.value;
  const options = parseOptions([...beforeOption.rest, '--keep-dataset']);
  const size = options.sizes.at(-1)!;
  const dataset = await ensureDataset(options.adminUrl, size, options.seed, options, log);
  await buildService(log);
  const fixtures = await loadFixtures(dataset.url);
  const token = await createToken(dataset.url, ORGANIZATION_ID, 'ORG_ADMIN', [], log);
  const headers = roleHeaders(token);
  const allPools = endpointPools(fixtures);
  const pools = allPools.filter(
    (pool) => !options.only || options.only.some((text) => pool.endpoint.includes(text)),
  );
  if (write && pools.length < allPools.length) throw new Error('--write needs every endpoint: drop --only');
  const settings = options;

  const warm = await withServer(await startService(dataset.url, false, log), async (service) => {
    const answersFile = await captureAnswers(service, headers, pools);
    const results = await driveAll(service, headers, pools, 'warm', settings);
    const ceiling = await withServer(await startCeiling(answersFile, log), (server) =>
      driveAll(server, {}, pools, 'warm', settings),
    );
    return { results, ceiling };
  });
  process.env.RESPONSE_CACHE_TTL_SECONDS = '0';
  const cold = await withServer(await startService(dataset.url, false, log), (service) =>
    driveAll(service, headers, pools, 'cold', settings),
  );
  const before = beforeCommit
    ? await coldBefore(
        beforeCommit,
        ownDataset.value !== null ? options : null,
        dataset.url,
        headers,
        pools,
        settings,
      )
    : null;
  const detailPool = allPools.find((pool) => pool.endpoint === 'GET /v1/workloads/{id}')!;
  const rawDetail = await withServer(await startBaseline(dataset.url, log), (baseline) =>
    driveAll(baseline, headers, [detailPool], 'cold', settings),
  );
  const rows: Row[] = pools.map((pool, index) => ({
    endpoint: pool.endpoint,
    warm: warm.results[index],
    ceiling: warm.ceiling[index],
    cold: cold[index],
    before: before?.results[index] ?? null,
    warmBefore: before?.warm[index] ?? null,
  }));
  const table = render(rows, size.label, options, rawDetail[0], before?.label ?? null);
  process.stdout.write(`\n${table}\n`);
  if (write) {
    replaceMarkedBlock('warm-cold', table);
    log('table written to docs/benchmarks.md');
  }
}

/**
 * The cold pools against another commit's service: the same requests, the code before a change. With
 * `ownDataset` (--before-dataset) that commit reads a dataset its own CLI built (same size and seed),
 * for a change of schema, where the earlier code on the new schema would miss its indexes; its token
 * is minted there, and the load is reported beside the current dataset's.
 */
async function coldBefore(
  commit: string,
  ownDataset: BenchOptions | null,
  databaseUrl: string,
  headers: Record<string, string>,
  pools: EndpointPools[],
  settings: { connections: number; durationSeconds: number; warmupSeconds: number },
): Promise<{ label: string; results: LoadResult[]; warm: LoadResult[] }> {
  const build = serviceAtCommit(commit);
  await buildService(log, build);
  let url = databaseUrl;
  let beforeHeaders = headers;
  if (ownDataset) {
    const size = ownDataset.sizes.at(-1)!;
    const label = build.label.replace(/^service@/, 'at_');
    const dataset = await ensureDataset(ownDataset.adminUrl, size, ownDataset.seed, ownDataset, log, {
      root: build.sourceDir,
      label,
    });
    log(`before dataset: ${describe(dataset.marker)}`);
    url = dataset.url;
    beforeHeaders = roleHeaders(
      await createToken(url, ORGANIZATION_ID, 'ORG_ADMIN', [], log, build.sourceDir),
    );
  }
  const results = await withServer(await startService(url, false, log, build), (service) =>
    driveAll(service, beforeHeaders, pools, 'cold', settings),
  );
  // The same commit with its response cache on, for the warm pools.
  const ttl = process.env.RESPONSE_CACHE_TTL_SECONDS;
  delete process.env.RESPONSE_CACHE_TTL_SECONDS;
  try {
    const warm = await withServer(await startService(url, false, log, build), (service) =>
      driveAll(service, beforeHeaders, pools, 'warm', settings),
    );
    return { label: build.label, results, warm };
  } finally {
    if (ttl !== undefined) process.env.RESPONSE_CACHE_TTL_SECONDS = ttl;
  }
}

async function driveAll(
  server: Server,
  headers: Record<string, string>,
  pools: EndpointPools[],
  kind: 'warm' | 'cold',
  settings: { connections: number; durationSeconds: number; warmupSeconds: number },
): Promise<LoadResult[]> {
  const results: LoadResult[] = [];
  for (const pool of pools) {
    const result = await drive(server.baseUrl, headers, pool[kind], settings);
    log(
      `${server.name} ${kind} ${pool.endpoint}: ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`,
    );
    results.push(result);
  }
  return results;
}

/** The service's answer to every warm path, for the ceiling to send back as they are. */
async function captureAnswers(
  service: Server,
  headers: Record<string, string>,
  pools: EndpointPools[],
): Promise<string> {
  const answers: Record<string, { contentType: string; body: string }> = {};
  for (const path of pools.flatMap((pool) => pool.warm)) {
    const response = await fetch(`${service.baseUrl}${path}`, { headers });
    if (!response.ok) throw new Error(`${path} answered ${response.status}`);
    answers[path] = { contentType: response.headers.get('content-type') ?? '', body: await response.text() };
  }
  const file = join(tmpdir(), `gpucap-ceiling-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(answers));
  return file;
}

const TIME_RANGES = ['today', 'this_week', 'this_month', 'last_7_days', 'last_30_days'];
const GROUPS = ['', '&group_by=initiative_id', '&group_by=submitted_by', '&group_by=instance_type'];
/**
 * The sort keys both columns answer: `cost` is newer than the commits compared against (a 400
 * there), and reads every workload in scope (docs/api.md), so it is measured on its own.
 */
const SORTS = RANK_METRICS.filter((sort) => sort !== 'cost');

/** An ISO instant `seconds` before a fixed day: distinct custom ranges for cold requests. */
function secondsBefore(seconds: number): string {
  return new Date(Date.now() - 40 * 86_400_000 - seconds * 1000).toISOString();
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, index) => index);
}

function endpointPools(fixtures: Fixtures): EndpointPools[] {
  const filters = [
    '',
    'status=running',
    'status=completed',
    'status=failed',
    'is_managed=true',
    ...fixtures.submitters.slice(0, 5).map((user) => `submitted_by=${encodeURIComponent(user)}`),
    ...fixtures.initiatives.map((initiative) => `initiative_id=${initiative.id}`),
  ];
  const sampled = fixtures.sampledIds.admin;
  const capacity = [
    '',
    ...fixtures.pools.map((pool) => `pool_id=${pool}`),
    ...fixtures.initiatives.map((initiative) => `initiative_id=${initiative.id}`),
  ].flatMap((query) => [query, query ? `${query}&interval=day` : 'interval=day']);
  return [
    {
      endpoint: 'GET /v1/workloads',
      warm: filters.flatMap((query) =>
        [20, 50, 100].map((limit) => `/v1/workloads?limit=${limit}${query && `&${query}`}`),
      ),
      cold: range(5000).map(
        (i) => `/v1/workloads?start_date=${secondsBefore(i)}&${filters[i % filters.length] || 'limit=20'}`,
      ),
    },
    {
      endpoint: 'GET /v1/workloads/{id}',
      warm: fixtures.workloadIds.admin.map((id) => `/v1/workloads/${encodeURIComponent(id)}`),
      cold: fixtures.workloadIds.admin.map((id) => `/v1/workloads/${encodeURIComponent(id)}`),
    },
    {
      endpoint: 'GET /v1/workloads/stats',
      warm: TIME_RANGES.flatMap((range) =>
        GROUPS.map((group) => `/v1/workloads/stats?time_range=${range}${group}`),
      ).concat(
        TIME_RANGES.flatMap((range) =>
          GROUPS.slice(0, 2).map((group) => `/v1/workloads/stats?time_range=${range}${group}&interval=day`),
        ),
      ),
      cold: range(5000).map(
        (i) =>
          `/v1/workloads/stats?start_date=${secondsBefore(i)}&end_date=${new Date().toISOString().slice(0, 10)}${GROUPS[i % 4]}`,
      ),
    },
    {
      endpoint: 'GET /v1/workloads/{id}/metrics',
      warm: sampled
        .slice(0, 25)
        .flatMap((id) =>
          ['last_24h', 'job_lifetime'].map(
            (r) => `/v1/workloads/${encodeURIComponent(id)}/metrics?time_range=${r}`,
          ),
        ),
      cold: sampled.flatMap((id) =>
        TIME_RANGES_OF_METRICS.map((r) => `/v1/workloads/${encodeURIComponent(id)}/metrics?time_range=${r}`),
      ),
    },
    {
      endpoint: 'GET /v1/workloads/metrics',
      warm: SORTS.flatMap((sort) =>
        ['desc', 'asc'].flatMap((order) =>
          [10, 20, 50, 100].map(
            (limit) => `/v1/workloads/metrics?sort_by=${sort}&order=${order}&limit=${limit}`,
          ),
        ),
      ).slice(0, WARM_POOL),
      cold: SORTS.flatMap((sort) =>
        ['desc', 'asc'].flatMap((order) =>
          range(100).map(
            (limit) => `/v1/workloads/metrics?sort_by=${sort}&order=${order}&limit=${limit + 1}`,
          ),
        ),
      ),
    },
    {
      endpoint: 'GET /v1/capacity',
      warm: capacity.map((query) => `/v1/capacity${query && `?${query}`}`),
      cold: capacity.map((query) => `/v1/capacity${query && `?${query}`}`),
    },
    {
      endpoint: 'GET /v1/recommendations',
      warm: TIME_RANGES.flatMap((range) =>
        ['', ...fixtures.initiatives.map((initiative) => `&initiative_id=${initiative.id}`)].map(
          (query) => `/v1/recommendations?time_range=${range}${query}`,
        ),
      ),
      // A threshold applied after the rule leaves the statement whole: each is a distinct full read.
      cold: range(5000).map(
        (i) => `/v1/recommendations?time_range=last_7_days&min_gpu_hours_saved=${(i / 100).toFixed(2)}`,
      ),
    },
  ].map((pool) => ({ ...pool, warm: pool.warm.slice(0, WARM_POOL) }));
}

function render(
  rows: Row[],
  size: string,
  settings: { connections: number; durationSeconds: number; only?: string[] },
  rawDetail: LoadResult,
  beforeLabel: string | null,
): string {
  const bar = COLD_P99_BAR * rawDetail.p99;
  const beforeFlag = beforeLabel ? ` --before ${beforeLabel.split('@')[1]}` : '';
  const scope = settings.only ? ` --only '${settings.only.join('|')}'` : ' --write';
  const command = `npx ts-node --transpile-only bench/warm-cold.ts --sizes ${size}${beforeFlag}${scope}`;
  const beforeHeader = beforeLabel
    ? ` cold req/s, ${beforeLabel} | cold p50 / p99 ms, ${beforeLabel} | cold ÷ before | warm req/s, ${beforeLabel} | warm ÷ before |`
    : '';
  const lines = [
    `Dataset ${size}, ORG_ADMIN, ${settings.connections} connections, ${settings.durationSeconds} s per row, measured ${new Date().toISOString().slice(0, 16)}Z`,
    `(\`${command}\`). Raw node+pg baseline, cold detail pool: p99 ${rawDetail.p99} ms, so the cold bar is p99 ≤ ${bar} ms.`,
    '',
    `| endpoint | warm req/s | warm p50 / p99 ms | ceiling req/s | warm ÷ ceiling | cold req/s | cold p50 / p99 ms | cold p99 ≤ ${bar} ms |${beforeHeader} non-2xx |`,
    `| - | - | - | - | - | - | - | - |${beforeLabel ? ' - | - | - | - | - |' : ''} - |`,
  ];
  for (const row of rows) {
    const before =
      row.before && row.warmBefore
        ? ` ${Math.round(row.before.requestsPerSecond)} | ${row.before.p50} / ${row.before.p99} | ${(row.cold.requestsPerSecond / row.before.requestsPerSecond).toFixed(1)}× |` +
          ` ${Math.round(row.warmBefore.requestsPerSecond)} | ${(row.warm.requestsPerSecond / row.warmBefore.requestsPerSecond).toFixed(2)}× |`
        : '';
    const non2xx =
      row.warm.non2xx + row.cold.non2xx + (row.before?.non2xx ?? 0) + (row.warmBefore?.non2xx ?? 0);
    lines.push(
      `| \`${row.endpoint}\` | ${Math.round(row.warm.requestsPerSecond)} | ${row.warm.p50} / ${row.warm.p99} | ` +
        `${Math.round(row.ceiling.requestsPerSecond)} | ${(row.warm.requestsPerSecond / row.ceiling.requestsPerSecond).toFixed(2)} | ` +
        `${Math.round(row.cold.requestsPerSecond)} | ${row.cold.p50} / ${row.cold.p99} | ${row.cold.p99 <= bar ? 'yes' : 'no'} |${before} ${non2xx} |`,
    );
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  log(`FAILED: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
