/**
 * npx ts-node --transpile-only bench/queue-wait-histogram.ts [--sizes 1m] [--runs 80] [--buckets 64,256]
 *
 * Could the statistics read exact queue-wait percentiles from the period rollups instead of every
 * wait of the range? A prototype on a scratch copy of the benchmark dataset (dropped at the end):
 * - each workload_period_rollups row gains the started count, Σ wait and a histogram of its waits in
 *   B log-spaced buckets, packed into one numeric (12 decimal digits per bucket: the statistics
 *   statement's `sum()` adds histograms exactly, and the triggers could keep it as they keep the
 *   other sums), and workloads an index keyed (organization, wait bucket, submitted_at);
 * - a request runs (1) today's statistics statement with the three sums added to every fact row,
 *   (2) finds in Node the bucket of each group's p50, p95 and max ranks, and (3) reads the exact
 *   waits of those buckets over the range (with the pending workloads, by their own index).
 * Timed one request at a time, interleaved, beside the statistics statement alone (f451d80's only
 * statement; today's builds the same text for ORG_ADMIN) and today's request (that statement plus the
 * raw queue statement), for the cold pool of bench/warm-cold.ts:
 * custom ranges of ~40 days ending at midnight, each group_by in turn, as ORG_ADMIN. Every
 * prototype answer is checked against today's statement (percentile_cont), value for value.
 */
import { Client } from 'pg';
import { performance } from 'node:perf_hooks';
import { WAIT_SECONDS_SQL } from '../src/common/queue-wait';
import { type QueueWaitRow, queueWaitQuery } from '../src/workloads/queue-wait.queries';
import {
  GROUPING,
  type StatsGroupBy,
  type StatsRequest,
  workloadStatsQuery,
} from '../src/workloads/workload-stats.queries';
import { databaseUrl, ensureDataset } from './dataset';
import { ADMIN_SCOPE, ORGANIZATION_ID } from './fixtures';
import { parseOptions, takeOption } from './options';

const DAY_MS = 86_400_000;
const FIELD_DIGITS = 12;
/** Waits up to two days get buckets of their own; longer ones share the top bucket. */
const TOP_WAIT_SECONDS = 2 * 86_400;
const GROUPS: (StatsGroupBy | undefined)[] = [undefined, 'initiative_id', 'submitted_by', 'instance_type'];

function log(line: string): void {
  process.stderr.write(`[queue-wait-histogram] ${line}\n`);
}

/** The prototype's objects for B buckets, named by B so several sizes live side by side. */
function prototypeSql(buckets: number): string[] {
  const perLog = (buckets - 2) / Math.log(TOP_WAIT_SECONDS);
  const bucket = `bench_wait_bucket_${buckets}`;
  const histogram = `bench_wait_histogram_${buckets}`;
  const day = "date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'";
  const hour = "date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'";
  return [
    `CREATE FUNCTION ${bucket}(wait float8) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
       $$ SELECT CASE WHEN wait < 1 THEN 0 ELSE least(${buckets - 1}, 1 + floor(ln(wait) * ${perLog})::int) END $$`,
    `CREATE FUNCTION bench_wait_packed_${buckets}(wait float8) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
       $$ SELECT CASE WHEN wait IS NULL THEN 0 ELSE power(10::numeric, ${FIELD_DIGITS} * ${bucket}(wait)) END $$`,
    `ALTER TABLE workload_period_rollups ADD COLUMN ${histogram} numeric NOT NULL DEFAULT 0`,
    // The rollup triggers' own grouping: one row per period, dimension and group of the rollups.
    `WITH waits AS (
       SELECT organization_id, CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END AS period,
              CASE WHEN grouping(is_managed) = 0
                   THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                   WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                   WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END AS dimension,
              coalesce(day, hour) AS bucket_start, initiative_id,
              CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                   WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END AS dimension_value,
              count(wait) AS started, coalesce(sum(wait), 0) AS wait_sum, sum(bench_wait_packed_${buckets}(wait)) AS packed
       FROM (SELECT *, ${WAIT_SECONDS_SQL} AS wait, ${day} AS day, ${hour} AS hour FROM workloads) AS w
       GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by),
         (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id),
         (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type),
         (organization_id, day, initiative_id, is_managed, submitted_by)))
     UPDATE workload_period_rollups r
     SET bench_started_count = waits.started, bench_wait_seconds_sum = waits.wait_sum, ${histogram} = waits.packed
     FROM waits
     WHERE (r.organization_id, r.period, r.dimension, r.bucket_start, r.initiative_id, r.dimension_value)
         = (waits.organization_id, waits.period, waits.dimension, waits.bucket_start, waits.initiative_id, waits.dimension_value)`,
    `CREATE INDEX bench_wait_bucket_${buckets}_index ON workloads (organization_id, ${bucket}(${WAIT_SECONDS_SQL}), submitted_at)
       INCLUDE (started_at, initiative_id, submitted_by, instance_type)`,
  ];
}

/** Today's statistics statement with the started count, Σ wait and the histogram summed too. */
function withHistogram(text: string, buckets: number): string {
  const histogram = `bench_wait_histogram_${buckets}`;
  const edits: [RegExp, string][] = [
    [
      /\n {6}FROM workload_period_rollups/g,
      `, bench_started_count, bench_wait_seconds_sum, ${histogram}\n      FROM workload_period_rollups`,
    ],
    [
      /\n {6}FROM workloads LEFT JOIN LATERAL/g,
      `, (started_at IS NOT NULL)::int, coalesce(${WAIT_SECONDS_SQL}, 0), bench_wait_packed_${buckets}(${WAIT_SECONDS_SQL})\n      FROM workloads LEFT JOIN LATERAL`,
    ],
    // The running workloads' row adds GPU-seconds so far only: their waits are in the rows above.
    [/\n {6}FROM workloads LEFT JOIN \(/g, ', 0, 0, 0\n      FROM workloads LEFT JOIN ('],
    [
      /(AS facts\([^)]*busy_gpu_seconds_sum)\)/,
      `$1, bench_started_count, bench_wait_seconds_sum, ${histogram})`,
    ],
    [
      /AS busy_gpu_seconds\n/,
      `AS busy_gpu_seconds, sum(bench_started_count)::float8 AS started, sum(bench_wait_seconds_sum)::float8 AS wait_sum, sum(${histogram})::text AS histogram\n`,
    ],
  ];
  return edits.reduce((edited, [pattern, replacement]) => {
    const next = edited.replace(pattern, replacement);
    if (next === edited) throw new Error(`the statistics statement changed: ${pattern} no longer matches`);
    return next;
  }, text);
}

/** Counts per bucket, lowest first, from a packed histogram's decimal text. */
function unpack(packed: string): number[] {
  const digits = packed.replace(/\..*$/, '');
  const counts: number[] = [];
  for (let end = digits.length; end > 0; end -= FIELD_DIGITS) {
    counts.push(Number(digits.slice(Math.max(0, end - FIELD_DIGITS), end)));
  }
  return counts;
}

/** The ranks (0-based) percentile_cont reads for p50 and p95, and the maximum's. */
function neededRanks(started: number): number[] {
  const ranks = [0.5, 0.95].flatMap((q) => [Math.floor(q * (started - 1)), Math.ceil(q * (started - 1))]);
  return [...ranks, started - 1];
}

/** Bucket → first rank it holds, for the buckets holding a needed rank. */
function targetBuckets(counts: number[], started: number): Map<number, number> {
  const targets = new Map<number, number>();
  let before = 0;
  counts.forEach((count, bucket) => {
    if (neededRanks(started).some((rank) => rank >= before && rank < before + count))
      targets.set(bucket, before);
    before += count;
  });
  return targets;
}

interface SetFigures {
  started: number;
  avg: number | null;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

/** percentile_cont's arithmetic (float8, as PostgreSQL does it) over the values at the needed ranks. */
function figuresOf(started: number, waitSum: number, valueAt: (rank: number) => number): SetFigures {
  if (started === 0) return { started, avg: null, p50: null, p95: null, max: null };
  const percentile = (q: number) => {
    const position = q * (started - 1);
    const lower = valueAt(Math.floor(position));
    return lower + (position - Math.floor(position)) * (valueAt(Math.ceil(position)) - lower);
  };
  return {
    started,
    avg: waitSum / started,
    p50: percentile(0.5),
    p95: percentile(0.95),
    max: valueAt(started - 1),
  };
}

interface Timings {
  [key: string]: number[];
}

async function timed<T>(timings: Timings, key: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await run();
  (timings[key] ??= []).push(performance.now() - started);
  return result;
}

/** One request the prototype's way; returns its figures per set (null: the summary) and rows read. */
async function prototypeRequest(
  client: Client,
  request: StatsRequest,
  buckets: number,
  timings: Timings,
): Promise<{ figures: Map<string | null, SetFigures>; exactRows: number }> {
  const statement = workloadStatsQuery(ADMIN_SCOPE, request);
  const { rows } = await timed(timings, `rollups + histogram, ${buckets} buckets`, () =>
    client.query<{
      is_summary: boolean;
      group_key: string | null;
      started: number;
      wait_sum: number;
      histogram: string;
    }>(withHistogram(statement.text, buckets), statement.values),
  );
  const sets = rows.map((row) => {
    const counts = unpack(row.histogram);
    return { key: row.is_summary ? null : row.group_key, row, targets: targetBuckets(counts, row.started) };
  });
  const wanted = [...new Set(sets.flatMap((set) => [...set.targets.keys()]))];
  const groupKey = GROUPING[request.groupBy ?? 'none'].rawKey;
  const exact = await timed(timings, `exact waits + pending, ${buckets} buckets`, () =>
    client.query<{ group_key: string | null; bucket: number | null; wait: number | null }>(
      `SELECT ${groupKey} AS group_key, bench_wait_bucket_${buckets}(${WAIT_SECONDS_SQL}) AS bucket, ${WAIT_SECONDS_SQL} AS wait
       FROM workloads WHERE organization_id = $1 AND bench_wait_bucket_${buckets}(${WAIT_SECONDS_SQL}) = ANY ($2::int[])
         AND submitted_at >= $3 AND submitted_at < $4 AND started_at IS NOT NULL
       UNION ALL
       SELECT ${groupKey}, NULL, NULL FROM workloads
       WHERE organization_id = $1 AND status = 'pending' AND submitted_at >= $3 AND submitted_at < $4`,
      [ORGANIZATION_ID, wanted, request.from, request.to],
    ),
  );
  const figures = new Map<string | null, SetFigures>();
  for (const set of sets) {
    const byBucket = new Map<number, number[]>();
    for (const row of exact.rows) {
      if (row.bucket === null || !set.targets.has(row.bucket)) continue;
      if (set.key !== null && row.group_key !== set.key) continue;
      byBucket.set(row.bucket, [...(byBucket.get(row.bucket) ?? []), row.wait!]);
    }
    for (const values of byBucket.values()) values.sort((a, b) => a - b);
    const valueAt = (rank: number) => {
      for (const [bucket, first] of set.targets) {
        const values = byBucket.get(bucket)!;
        if (rank >= first && rank < first + values.length) return values[rank - first];
      }
      throw new Error(`rank ${rank} is in no bucket read`);
    };
    figures.set(set.key, figuresOf(set.row.started, set.row.wait_sum, valueAt));
  }
  return { figures, exactRows: exact.rows.length };
}

function todayFigures(rows: QueueWaitRow[]): Map<string | null, SetFigures> {
  return new Map(
    rows.map((row) => [
      row.is_summary ? null : row.group_key,
      {
        started: row.started,
        avg: row.avg_seconds,
        p50: row.p50_seconds,
        p95: row.p95_seconds,
        max: row.max_seconds,
      },
    ]),
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const runsOption = takeOption(process.argv.slice(2), '--runs');
  const bucketsOption = takeOption(runsOption.rest, '--buckets');
  const runs = runsOption.value === null ? 80 : Number(runsOption.value);
  const bucketSizes = (bucketsOption.value ?? '64,256').split(',').map(Number);
  const options = parseOptions([...bucketsOption.rest, '--keep-dataset']);
  const size = options.sizes.at(-1)!;
  const dataset = await ensureDataset(options.adminUrl, size, options.seed, options, log);
  const scratchName = `${dataset.databaseName}_queue_wait_scratch`;
  const admin = new Client({ connectionString: options.adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${scratchName}`);
  log(`copying ${dataset.databaseName} into ${scratchName}`);
  await admin.query(`CREATE DATABASE ${scratchName} TEMPLATE ${dataset.databaseName} STRATEGY FILE_COPY`);
  const client = new Client({
    connectionString: databaseUrl(options.adminUrl, scratchName),
    options: '-c jit=off',
  });
  await client.connect();
  try {
    await client.query(`ALTER TABLE workload_period_rollups ADD COLUMN bench_started_count bigint NOT NULL DEFAULT 0,
      ADD COLUMN bench_wait_seconds_sum bigint NOT NULL DEFAULT 0`);
    for (const buckets of bucketSizes) {
      log(`building the ${buckets}-bucket histograms and index`);
      for (const sql of prototypeSql(buckets)) await client.query(sql);
    }
    await client.query('VACUUM ANALYZE workload_period_rollups');
    await client.query('VACUUM ANALYZE workloads');
    const timings: Timings = {};
    const exactRows: Record<string, number[]> = {};
    let mismatches = 0;
    const now = new Date();
    const to = new Date(now.toISOString().slice(0, 10));
    for (let run = 0; run < runs; run += 1) {
      const groupBy = GROUPS[run % GROUPS.length];
      const name = groupBy ?? 'none';
      const from = new Date(now.getTime() - 40 * DAY_MS - run * 997_000);
      const request: StatsRequest = { from, to, now, groupBy };
      const statistics = workloadStatsQuery(ADMIN_SCOPE, request);
      await timed(timings, `${name}|f451d80`, () => client.query(statistics.text, statistics.values));
      const queue = queueWaitQuery(ADMIN_SCOPE, request);
      const today = await timed(timings, `${name}|raw queue`, () =>
        client.query<QueueWaitRow>(queue.text, queue.values),
      );
      const expected = todayFigures(today.rows);
      for (const buckets of bucketSizes) {
        const sub: Timings = {};
        const answer = await prototypeRequest(client, request, buckets, sub);
        for (const [key, values] of Object.entries(sub)) (timings[`${name}|${key}`] ??= []).push(...values);
        (exactRows[`${name}|${buckets}`] ??= []).push(answer.exactRows);
        for (const [key, figures] of answer.figures) {
          // A group with nothing started or pending has no row today: zeros and nulls.
          const want = expected.get(key) ?? { started: 0, avg: null, p50: null, p95: null, max: null };
          if (JSON.stringify(figures) !== JSON.stringify(want)) {
            mismatches += 1;
            log(`mismatch, ${name} ${key}: ${JSON.stringify(figures)} vs ${JSON.stringify(want)}`);
          }
        }
      }
    }
    const lines = [
      `Dataset ${size.label}, ${runs} requests one at a time, medians in ms, measured ${now.toISOString().slice(0, 16)}Z`,
      `(\`npx ts-node --transpile-only bench/queue-wait-histogram.ts --sizes ${size.label} --runs ${runs} --buckets ${bucketSizes.join(',')}\`); ` +
        `prototype answers different from percentile_cont: ${mismatches}.`,
      '',
      `| group_by | f451d80: statistics | today: + raw queue | ${bucketSizes.map((b) => `${b} buckets: statistics + histogram, + exact waits (rows)`).join(' | ')} |`,
      `| - | - | - | ${bucketSizes.map(() => '-').join(' | ')} |`,
    ];
    for (const groupBy of GROUPS) {
      const name = groupBy ?? 'none';
      const cell = (key: string) => median(timings[`${name}|${key}`]).toFixed(1);
      const prototypes = bucketSizes.map(
        (b) =>
          `${cell(`rollups + histogram, ${b} buckets`)}, + ${cell(`exact waits + pending, ${b} buckets`)} (${Math.round(median(exactRows[`${name}|${b}`]))})`,
      );
      lines.push(
        `| ${name} | ${cell('f451d80')} | ${cell('f451d80')}, + ${cell('raw queue')} | ${prototypes.join(' | ')} |`,
      );
    }
    process.stdout.write(`\n${lines.join('\n')}\n`);
  } finally {
    await client.end();
    await admin.query(`DROP DATABASE IF EXISTS ${scratchName}`);
    await admin.end();
  }
}

main().catch((error: unknown) => {
  log(`FAILED: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
