/**
 * npx ts-node --transpile-only bench/single-reads.ts [--sizes 100k] [--runs 7] [--before COMMIT]
 *
 * Reads one at a time, the response cache off, the median of `--runs` (after a round of every request,
 * unmeasured), in two tables. Money: statistics over the last 30 days (whole, by team, by submitter),
 * capacity, and the ranked page by cost beside the same by GPU-hours, first with the dataset's prices,
 * then with them deleted (restored after). Clusters: the same reads unfiltered, filtered by the
 * dataset's largest cluster, and grouped by cluster. Energy (this build only): the ranked page by
 * energy beside those by GPU-hours and cost. Recommendations: the rule over the last 7 and 30 days,
 * for everyone and one team. With --before, the money, cluster and recommendation reads on that
 * commit's service and its own dataset (same size and seed).
 */
import { Client } from 'pg';
import { ensureDataset } from './dataset';
import { ORGANIZATION_ID } from './fixtures';
import { parseOptions, takeOption } from './options';
import {
  buildService,
  createToken,
  CURRENT,
  serviceAtCommit,
  type Server,
  type ServiceBuild,
  startService,
  withServer,
} from './processes';
import { roleHeaders } from './scenarios';

const MONEY_REQUESTS = [
  ['statistics, last 30 days', '/v1/workloads/stats?time_range=last_30_days'],
  ['the same by team', '/v1/workloads/stats?time_range=last_30_days&group_by=initiative_id'],
  ['the same by submitter', '/v1/workloads/stats?time_range=last_30_days&group_by=submitted_by'],
  ['capacity', '/v1/capacity'],
  ['ranked by cost', '/v1/workloads/metrics?sort_by=cost&limit=20'],
  ['ranked by GPU-hours', '/v1/workloads/metrics?sort_by=gpu_hours&limit=20'],
] as const;

/** The cluster reads, `{cluster}` standing for the dataset's largest cluster. */
const CLUSTER_REQUESTS = [
  ['statistics, last 30 days', '/v1/workloads/stats?time_range=last_30_days'],
  ['the same, one cluster', '/v1/workloads/stats?time_range=last_30_days&cluster_id={cluster}'],
  ['the same by cluster', '/v1/workloads/stats?time_range=last_30_days&group_by=cluster_id'],
  ['capacity', '/v1/capacity'],
  ['capacity, one cluster', '/v1/capacity?cluster_id={cluster}'],
  ['workloads list count, one cluster', '/v1/workloads?limit=20&cluster_id={cluster}'],
  ['ranked by GPU-hours', '/v1/workloads/metrics?sort_by=gpu_hours&limit=20'],
  ['the same, one cluster', '/v1/workloads/metrics?sort_by=gpu_hours&limit=20&cluster_id={cluster}'],
  ['ranked by cost, one cluster', '/v1/workloads/metrics?sort_by=cost&limit=20&cluster_id={cluster}'],
] as const;

/** The right-sizing rule over every workload of a range: `{initiative}` is the dataset's largest team. */
const RECOMMENDATION_REQUESTS = [
  ['recommendations, last 7 days', '/v1/recommendations?time_range=last_7_days'],
  ['the same, one team', '/v1/recommendations?time_range=last_7_days&initiative_id={initiative}'],
  ['recommendations, last 30 days', '/v1/recommendations?time_range=last_30_days'],
] as const;

/** Energy's rankings, which only this build answers, beside the GPU-hours and cost pages they mirror. */
const ENERGY_REQUESTS = [
  ['ranked by GPU-hours', '/v1/workloads/metrics?sort_by=gpu_hours&limit=20'],
  ['ranked by cost', '/v1/workloads/metrics?sort_by=cost&limit=20'],
  ['ranked by energy', '/v1/workloads/metrics?sort_by=energy_kwh&limit=20'],
  ['the same, one cluster', '/v1/workloads/metrics?sort_by=energy_kwh&limit=20&cluster_id={cluster}'],
  ['the same, running only', '/v1/workloads/metrics?sort_by=energy_kwh&limit=20&status=running'],
] as const;

const started = Date.now();
function log(line: string): void {
  process.stderr.write(`[single-reads ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
}

async function median(server: Server, headers: Record<string, string>, path: string, runs: number) {
  const times: number[] = [];
  for (let run = 0; run <= runs; run++) {
    const begun = process.hrtime.bigint();
    const response = await fetch(`${server.baseUrl}${path}`, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
    if (run > 0) times.push(Number(process.hrtime.bigint() - begun) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** Deletes the organization's prices under its writer lock and returns a function that puts them back. */
async function withoutPrices(url: string): Promise<() => Promise<void>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const write = async (sql: string, parameters: unknown[]) => {
    await client.query('BEGIN');
    await client.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [ORGANIZATION_ID]);
    await client.query(sql, parameters);
    await client.query('COMMIT');
  };
  const { rows } = await client.query<{ prices: unknown }>(
    'SELECT coalesce(json_agg(p), $2::json) AS prices FROM gpu_prices p WHERE organization_id = $1',
    [ORGANIZATION_ID, '[]'],
  );
  await write('DELETE FROM gpu_prices WHERE organization_id = $1', [ORGANIZATION_ID]);
  return async () => {
    await write(
      `INSERT INTO gpu_prices SELECT * FROM json_populate_recordset(NULL::gpu_prices, $1::json) WHERE $2::text IS NOT NULL`,
      [JSON.stringify(rows[0].prices), ORGANIZATION_ID],
    );
    await client.end();
  };
}

async function measure(build: ServiceBuild, argv: string[], runs: number): Promise<number[][]> {
  const options = parseOptions([...argv, '--keep-dataset']);
  const size = options.sizes.at(-1)!;
  await buildService(log, build);
  const dataset = await ensureDataset(
    options.adminUrl,
    size,
    options.seed,
    options,
    log,
    build === CURRENT ? undefined : { root: build.sourceDir, label: build.label.replace(/^service@/, 'at_') },
  );
  const headers = roleHeaders(
    await createToken(dataset.url, ORGANIZATION_ID, 'ORG_ADMIN', [], log, build.sourceDir),
  );
  const cluster = await largest(dataset.url, 'cluster_id');
  const initiative = await largest(dataset.url, 'initiative_id');
  process.env.RESPONSE_CACHE_TTL_SECONDS = '0';
  const timeAll = async (requests: readonly (readonly [string, string])[]) =>
    withServer(await startService(dataset.url, false, log, build), async (server) => {
      const paths = requests.map(([, path]) =>
        path
          .replace('{cluster}', encodeURIComponent(cluster))
          .replace('{initiative}', encodeURIComponent(initiative)),
      );
      // The first requests of a fresh process pay for its warm-up: a round of every request first.
      for (const path of paths) await median(server, headers, path, 2);
      const medians: number[] = [];
      for (const [index, path] of paths.entries()) {
        medians.push(await median(server, headers, path, runs));
        log(`${build.label} ${requests[index][0]}: ${medians.at(-1)!.toFixed(1)} ms`);
      }
      return medians;
    });
  const clusters = await timeAll(CLUSTER_REQUESTS);
  const recommendations = await timeAll(RECOMMENDATION_REQUESTS);
  const priced = await timeAll(MONEY_REQUESTS);
  const energy = build === CURRENT ? await timeAll(ENERGY_REQUESTS) : [];
  const restore = await withoutPrices(dataset.url);
  try {
    return [priced, await timeAll(MONEY_REQUESTS), clusters, energy, recommendations];
  } finally {
    await restore();
  }
}

/** The dataset's value of `column` with the most workloads. */
async function largest(url: string, column: 'cluster_id' | 'initiative_id'): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ value: string }>(
      `SELECT ${column} AS value FROM workloads WHERE organization_id = $1 GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`,
      [ORGANIZATION_ID],
    );
    return rows[0].value;
  } finally {
    await client.end();
  }
}

function table(
  title: string,
  columns: string[],
  labels: readonly string[],
  results: number[][],
  runs: number,
) {
  return [
    `| ${title} (median of ${runs}, ms) | ${columns.join(' | ')} |`,
    `| - | ${columns.map(() => '-').join(' | ')} |`,
    ...labels.map(
      (label, row) => `| ${label} | ${results.map((column) => column[row].toFixed(1)).join(' | ')} |`,
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  const before = takeOption(process.argv.slice(2), '--before');
  const runsOption = takeOption(before.rest, '--runs');
  const runs = Number(runsOption.value ?? 7);
  const builds = [...(before.value ? [serviceAtCommit(before.value)] : []), CURRENT];
  const moneyColumns: string[] = [];
  const money: number[][] = [];
  const clusters: number[][] = [];
  const recommendations: number[][] = [];
  let energy: number[] = [];
  for (const build of builds) {
    const [priced, unpriced, clusterReads, energyReads, recommendationReads] = await measure(
      build,
      runsOption.rest,
      runs,
    );
    moneyColumns.push(`${build.label}, with prices`, `${build.label}, prices deleted`);
    money.push(priced, unpriced);
    clusters.push(clusterReads);
    recommendations.push(recommendationReads);
    if (build === CURRENT) energy = energyReads;
  }
  const labels = (requests: readonly (readonly [string, string])[]) => requests.map(([label]) => label);
  process.stdout.write(
    `\n${table('money', moneyColumns, labels(MONEY_REQUESTS), money, runs)}\n\n${table(
      'clusters',
      builds.map((build) => build.label),
      labels(CLUSTER_REQUESTS),
      clusters,
      runs,
    )}\n\n${table(
      'recommendations',
      builds.map((build) => build.label),
      labels(RECOMMENDATION_REQUESTS),
      recommendations,
      runs,
    )}\n\n${table('energy', [CURRENT.label], labels(ENERGY_REQUESTS), [energy], runs)}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
