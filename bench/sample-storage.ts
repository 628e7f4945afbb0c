/**
 * Bytes per metric sample on disk and the import's sample writes, this checkout's store (ended hours
 * packed into one row per workload and UTC day, the current hour in rows) next to another commit's,
 * from one run:
 *
 *   npx ts-node --transpile-only bench/sample-storage.ts [--workloads N] [--samples N] [--seed N] [--before COMMIT]
 *                                                        [--now ISO-TIMESTAMP]
 *
 * Each build loads `gpucap demo-data` twice into databases of its own, without samples and with
 * them (same seed and "now", by default the current hour), each after VACUUM: the database's growth
 * (indexes and rollups included) divided by the samples added is the bytes per sample. The
 * import's sample writes are the statements that apply the staged samples (GPUCAP_IMPORT_TRACE),
 * from the first chunk's retention check to the last merge into day blocks. Every reading is checked
 * to come back once from this checkout's stores. The server comes from DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres); the databases are dropped at the end.
 */
import { parseArgs } from 'node:util';
import { databaseUrl, recreateDatabase, withClient } from './dataset';
import { ROOT, runCli, serviceAtCommit } from './processes';

const DATABASE_PREFIX = 'gpucap_storage_';
const METRICS = 4;

interface Options {
  workloads: number;
  samples: number;
  seed: number;
  before: string | null;
  now: string;
  adminUrl: string;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      workloads: { type: 'string', default: '100000' },
      samples: { type: 'string', default: '1000000' },
      seed: { type: 'string', default: '7' },
      before: { type: 'string' },
      now: { type: 'string' },
    },
  });
  const count = (text: string, name: string) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    workloads: count(values.workloads, '--workloads'),
    samples: count(values.samples, '--samples'),
    seed: count(values.seed, '--seed'),
    before: values.before ?? null,
    now: new Date(values.now ?? Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString(),
    adminUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

const log = (line: string) => process.stderr.write(`${line}\n`);

interface Build {
  label: string;
  root: string;
}

interface Load {
  bytes: number;
  /** Samples stored (both stores where there are two). */
  samples: number;
  /** Rows holding them: one per sample, or one per workload and day for sealed days. */
  rows: number;
  /** Seconds of the statements that applied the staged samples. */
  writeSeconds: number;
}

/** Loads the demo organization into a fresh database with `build`'s CLI and measures it after VACUUM. */
async function load(opts: Options, build: Build, name: string, samples: number, now: string): Promise<Load> {
  await recreateDatabase(opts.adminUrl, name);
  const url = databaseUrl(opts.adminUrl, name);
  await runCli(['migrate'], { DATABASE_URL: url }, log, undefined, build.root);
  let applying = false;
  let writeMs = 0;
  await runCli(
    [
      'demo-data',
      '--workloads',
      String(opts.workloads),
      '--seed',
      String(opts.seed),
      '--now',
      now,
      '--samples',
      String(samples),
    ],
    { DATABASE_URL: url, GPUCAP_IMPORT_TRACE: '1' },
    log,
    (line) => {
      const match = /^\[import\] (\d+) ms\s+\d*\s+(.*)$/.exec(line);
      if (!match) return false;
      // The samples are applied after the parents: every statement from the first chunk's on.
      if (/stage_metric_samples_\d+ s USING sample_retention/.test(match[2])) applying = true;
      if (applying && !match[2].startsWith('COPY')) writeMs += Number(match[1]);
      return true;
    },
    build.root,
  );
  return withClient(url, async (client) => {
    await client.query('VACUUM ANALYZE');
    const [{ packed }] = (
      await client.query<{ packed: boolean }>(
        `SELECT to_regclass('metric_sample_days') IS NOT NULL AS packed`,
      )
    ).rows;
    const days = packed ? '(SELECT coalesce(sum(cardinality(step_us)), 0) FROM metric_sample_days)' : '0';
    const dayRows = packed ? '(SELECT count(*) FROM metric_sample_days)' : '0';
    const { rows } = await client.query<{ bytes: string; samples: string; rows: string }>(
      `SELECT pg_database_size(current_database()) AS bytes,
              (SELECT count(*) FROM metric_samples) + ${days} AS samples,
              (SELECT count(*) FROM metric_samples) + ${dayRows} AS rows`,
    );
    return {
      bytes: Number(rows[0].bytes),
      samples: Number(rows[0].samples),
      rows: Number(rows[0].rows),
      writeSeconds: writeMs / 1000,
    };
  });
}

/** Every reading once across both stores, and metric_aggregates equal to a recomputation from them. */
async function checkStores(url: string): Promise<void> {
  await withClient(url, async (client) => {
    const { rows } = await client.query<{ duplicated: number; differing: number }>(
      `WITH readings AS (
         SELECT d.organization_id, d.workload_id, u.* FROM metric_sample_days d
         CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization,
           d.memory_utilization, d.temperature, d.power_usage) u
         UNION ALL
         SELECT organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage
         FROM metric_samples
       ),
       recomputed AS (
         SELECT organization_id, workload_id, count(*) AS sample_count, min(sampled_at) AS first_sampled_at,
                max(sampled_at) AS latest_sampled_at, sum(gpu_utilization::numeric) AS gpu_utilization_sum,
                max(power_usage) AS power_usage_max, sum(temperature::numeric) AS temperature_sum
         FROM readings GROUP BY 1, 2
       )
       SELECT (SELECT count(*) FROM (SELECT 1 FROM readings GROUP BY organization_id, workload_id, sampled_at
                                     HAVING count(*) > 1) d)::int AS duplicated,
              (SELECT count(*) FROM (
                 SELECT organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
                        gpu_utilization_sum, power_usage_max, temperature_sum
                 FROM metric_aggregates WHERE sample_count > 0
                 EXCEPT SELECT * FROM recomputed) d)::int AS differing`,
    );
    const { duplicated, differing } = rows[0];
    if (duplicated > 0 || differing > 0) {
      throw new Error(
        `${duplicated} readings stored twice, ${differing} aggregates differ from the readings`,
      );
    }
  });
}

async function main(): Promise<void> {
  const opts = options();
  const { now } = opts;
  const builds: Build[] = [];
  if (opts.before) {
    const before = serviceAtCommit(opts.before);
    builds.push({ label: before.label.replace(/^service@/, ''), root: before.sourceDir });
  }
  builds.push({ label: 'this checkout', root: ROOT });
  const number = (value: number) => Math.round(value).toLocaleString('en-US');
  const lines = [
    `${number(opts.workloads)} workloads, seed ${opts.seed}, now ${now}: growth from demo-data without samples to demo-data with ${number(opts.samples)} (after VACUUM).`,
    '',
    '| build | samples added | rows added | growth MB | bytes / sample | bytes / value | sample writes, samples/s |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  const names: string[] = [];
  for (const [index, build] of builds.entries()) {
    const base = `${DATABASE_PREFIX}${index}_base`;
    const full = `${DATABASE_PREFIX}${index}_samples`;
    names.push(base, full);
    log(`${build.label}: loading without samples, then with ${number(opts.samples)}`);
    const without = await load(opts, build, base, 0, now);
    const withSamples = await load(opts, build, full, opts.samples, now);
    if (build.root === ROOT) await checkStores(databaseUrl(opts.adminUrl, full));
    const added = withSamples.samples - without.samples;
    const growth = withSamples.bytes - without.bytes;
    lines.push(
      `| ${build.label} | ${number(added)} | ${number(withSamples.rows - without.rows)} | ${(growth / 1e6).toFixed(1)} | ${(growth / added).toFixed(1)} | ${(growth / added / METRICS).toFixed(1)} | ${number(withSamples.samples / withSamples.writeSeconds)} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  await withClient(opts.adminUrl, async (client) => {
    for (const name of names) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
