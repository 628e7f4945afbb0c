/**
 * Bytes per metric sample on disk: today's row layout (one row per sample, weekly partitions, primary
 * key) next to a packed candidate (one row per workload and UTC day: the readings as float8 arrays,
 * the timestamps as microsecond steps, TOAST-compressed with lz4), from one run.
 *
 *   npx ts-node --transpile-only bench/sample-storage.ts [--workloads N] [--samples N] [--seed N]
 *
 * Today's layout is measured as the issue defines it: the growth of the whole database (indexes and
 * rollups included) between `gpucap demo-data` without samples and with them, each after VACUUM. The
 * candidate (sample-store/prototype.sql, in a schema of its own) is written from the stored rows in the
 * same database in one statement, its aggregates trigger included, and measured as its table, TOAST
 * and primary key. The packing is checked lossless (every stored row comes back, and no other) and its
 * aggregates equal to the service's metric_aggregates. The server comes from DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres); both databases are dropped at the end.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { databaseUrl } from './dataset';
import { runCli } from './processes';

const BASE = 'gpucap_bench_storage_base';
const WITH_SAMPLES = 'gpucap_bench_storage_samples';
const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];

/** The prototype's table, functions and triggers (run in the schema `packed`). */
const PROTOTYPE_SQL = readFileSync(join(__dirname, 'sample-store', 'prototype.sql'), 'utf8');

/** Every stored sample into day blocks in one statement, as an import chunk with no stored day would be written. */
const PACK_SQL = `
  INSERT INTO metric_sample_days
  SELECT organization_id, workload_id, day_start, array_agg(step_us ORDER BY sampled_at),
         ${METRICS.map((m) => `array_agg(${m} ORDER BY sampled_at)`).join(', ')}
  FROM (
    SELECT s.*, date_trunc('day', sampled_at, 'UTC') AS day_start,
           (extract(epoch FROM sampled_at - coalesce(lag(sampled_at) OVER w, date_trunc('day', sampled_at, 'UTC'))) * 1000000)::bigint AS step_us
    FROM public.metric_samples s
    WINDOW w AS (PARTITION BY organization_id, workload_id, date_trunc('day', sampled_at, 'UTC') ORDER BY sampled_at)
  ) stepped
  GROUP BY organization_id, workload_id, day_start`;

const AGGREGATE_COLUMNS = [
  'organization_id',
  'workload_id',
  'sample_count',
  'first_sampled_at',
  'latest_sampled_at',
  ...METRICS.flatMap((m) => [`${m}_sum`, `${m}_min`, `${m}_max`, `${m}_latest`]),
].join(', ');

const ROW_COLUMNS = `organization_id, workload_id, sampled_at, ${METRICS.join(', ')}`;

interface Options {
  workloads: number;
  samples: number;
  seed: number;
  adminUrl: string;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      workloads: { type: 'string', default: '100000' },
      samples: { type: 'string', default: '1000000' },
      seed: { type: 'string', default: '7' },
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
    adminUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Loads the demo organization into a fresh database; returns the sample INSERTs' rows and seconds (GPUCAP_IMPORT_TRACE). */
async function load(
  opts: Options,
  name: string,
  samples: number,
): Promise<{ rows: number; seconds: number }> {
  await withClient(opts.adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
  const url = databaseUrl(opts.adminUrl, name);
  await runCli(['migrate'], { DATABASE_URL: url }, log);
  const inserts = { rows: 0, seconds: 0 };
  const args = ['demo-data', '--workloads', String(opts.workloads), '--seed', String(opts.seed)];
  await runCli(
    [...args, '--samples', String(samples)],
    { DATABASE_URL: url, GPUCAP_IMPORT_TRACE: '1' },
    log,
    (line) => {
      const match = /^\[import\] (\d+) ms\s+(\d+)\s+INSERT INTO metric_samples /.exec(line);
      if (match) {
        inserts.seconds += Number(match[1]) / 1000;
        inserts.rows += Number(match[2]);
      }
      return line.startsWith('[import] ');
    },
  );
  await withClient(url, (client) => client.query('VACUUM ANALYZE'));
  return inserts;
}

async function databaseBytes(opts: Options, name: string): Promise<number> {
  return withClient(opts.adminUrl, async (client) => {
    const { rows } = await client.query<{ bytes: string }>('SELECT pg_database_size($1) AS bytes', [name]);
    return Number(rows[0].bytes);
  });
}

interface Layout {
  name: string;
  rows: number;
  bytes: number;
}

/** Today's tables of samples (every partition: heap, TOAST, indexes) and the packed candidate, with its checks. */
async function measureLayouts(
  url: string,
): Promise<{ rowLayout: Layout; packed: Layout; packSeconds: number; samples: number }> {
  return withClient(url, async (client) => {
    const sizes = async (parent: string) => {
      const { rows } = await client.query<{ rows: string; bytes: string }>(
        `SELECT coalesce(sum(c.reltuples) FILTER (WHERE c.relkind = 'r'), 0)::bigint AS rows, coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
         FROM pg_class c
         WHERE c.oid = $1::regclass OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = $1::regclass)`,
        [parent],
      );
      return { rows: Number(rows[0].rows), bytes: Number(rows[0].bytes) };
    };
    await client.query('CREATE SCHEMA packed');
    await client.query('SET search_path = packed, public');
    await client.query(PROTOTYPE_SQL);
    const started = process.hrtime.bigint();
    await client.query(PACK_SQL);
    const packSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    await client.query('VACUUM ANALYZE metric_sample_days');
    const { rows } = await client.query<{
      samples: number;
      missing: number;
      extra: number;
      aggregates: number;
    }>(
      `SELECT (SELECT count(*) FROM public.metric_samples)::int AS samples,
              (SELECT count(*) FROM (SELECT ${ROW_COLUMNS} FROM public.metric_samples
                                     EXCEPT ALL SELECT ${ROW_COLUMNS} FROM packed_samples_v) d)::int AS missing,
              (SELECT count(*) FROM (SELECT ${ROW_COLUMNS} FROM packed_samples_v
                                     EXCEPT ALL SELECT ${ROW_COLUMNS} FROM public.metric_samples) d)::int AS extra,
              (SELECT count(*) FROM (
                 (SELECT ${AGGREGATE_COLUMNS} FROM public.metric_aggregates WHERE sample_count > 0
                  EXCEPT SELECT ${AGGREGATE_COLUMNS} FROM packed_aggregates)
                 UNION ALL
                 (SELECT ${AGGREGATE_COLUMNS} FROM packed_aggregates
                  EXCEPT SELECT ${AGGREGATE_COLUMNS} FROM public.metric_aggregates WHERE sample_count > 0)) d)::int AS aggregates`,
    );
    const { samples, missing, extra, aggregates } = rows[0];
    if (missing > 0 || extra > 0)
      throw new Error(`packing is not lossless: ${missing} rows missing, ${extra} extra`);
    if (aggregates > 0)
      throw new Error(`${aggregates} aggregate rows differ from the service's metric_aggregates`);
    return {
      rowLayout: { name: 'today: one row per sample', ...(await sizes('public.metric_samples')) },
      packed: { name: 'packed: one row per workload and day', ...(await sizes('packed.metric_sample_days')) },
      packSeconds,
      samples,
    };
  });
}

async function main(): Promise<void> {
  const opts = options();
  await load(opts, BASE, 0);
  // Without a target demo-data still gives running workloads a few samples: growth is per sample added.
  const baseSamples = await withClient(databaseUrl(opts.adminUrl, BASE), async (client) => {
    const { rows } = await client.query<{ samples: number }>(
      'SELECT count(*)::int AS samples FROM metric_samples',
    );
    return rows[0].samples;
  });
  const inserts = await load(opts, WITH_SAMPLES, opts.samples);
  const growth = (await databaseBytes(opts, WITH_SAMPLES)) - (await databaseBytes(opts, BASE));
  const { rowLayout, packed, packSeconds, samples } = await measureLayouts(
    databaseUrl(opts.adminUrl, WITH_SAMPLES),
  );
  const perSample = (bytes: number, count = samples) => (bytes / count).toFixed(1);
  const perValue = (bytes: number, count = samples) => (bytes / count / METRICS.length).toFixed(1);
  const number = (value: number) => Math.round(value).toLocaleString('en-US');
  const lines = [
    `${number(opts.workloads)} workloads, ${number(samples)} samples (seed ${opts.seed}); packing lossless (checked row by row), its aggregates equal to the service's.`,
    '',
    '| layout | rows | MB | bytes / sample | bytes / value |',
    '| --- | --- | --- | --- | --- |',
    `| today, database growth for ${number(samples - baseSamples)} samples (rollups included) | ${number(samples - baseSamples)} | ${(growth / 1e6).toFixed(1)} | ${perSample(growth, samples - baseSamples)} | ${perValue(growth, samples - baseSamples)} |`,
    ...[rowLayout, packed].map(
      (layout) =>
        `| ${layout.name} (table, TOAST, key) | ${number(layout.rows)} | ${(layout.bytes / 1e6).toFixed(1)} | ${perSample(layout.bytes)} | ${perValue(layout.bytes)} |`,
    ),
    '',
    `Sample INSERTs of the import today: ${number(inserts.rows / inserts.seconds)} samples/s (${number(inserts.rows)} in ${inserts.seconds.toFixed(1)} s, rollup triggers included).`,
    `The same rows into day blocks (one INSERT … SELECT, aggregates trigger included): ${number(samples / packSeconds)} samples/s.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  await withClient(opts.adminUrl, async (client) => {
    for (const name of [BASE, WITH_SAMPLES])
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
