import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client } from 'pg';
import type { DatasetSize } from './options';
import { ROOT, runCli } from './processes';

/** What the benchmark database holds, stored as a COMMENT ON DATABASE so a later run can reuse it. */
export interface DatasetMarker {
  workloads: number;
  samples: number;
  seed: number;
  fingerprint: string;
  /** Wall time of the whole `gpucap demo-data` command (process start included). */
  loadSeconds: number;
  /** The time demo-data reports for its own work (generation and load), when it prints one. */
  generatorSeconds?: number;
  /** The loader's INSERT statements alone (GPUCAP_IMPORT_TRACE), without generation and staging. */
  statements?: { workloads: StatementTotal; samples: StatementTotal };
  rows: { workloads: number; samples: number };
  builtAt: string;
}

export interface StatementTotal {
  rows: number;
  seconds: number;
}

export interface Dataset {
  size: DatasetSize;
  databaseName: string;
  url: string;
  marker: DatasetMarker;
  reused: boolean;
}

/** Code whose change makes an existing benchmark database stale: the schema and whatever writes the data. */
const FINGERPRINT_DIRS = ['migrations', 'src/demo', 'src/import'];

export function databaseUrl(adminUrl: string, databaseName: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  return url.toString();
}

/**
 * The benchmark database of `size`, built by this checkout's CLI, or with `source` by another
 * checkout's (another commit's schema and loader) into a database of its own.
 */
/**
 * BENCH_DATASET_SUFFIX (letters, digits, underscores) names a set of datasets of one's own, so that
 * runs of several checkouts on one server neither reuse nor rebuild each other's.
 */
function datasetSuffix(): string {
  const suffix = process.env.BENCH_DATASET_SUFFIX ?? '';
  if (!/^[a-z0-9_]*$/.test(suffix))
    throw new Error('BENCH_DATASET_SUFFIX: lowercase letters, digits and _ only');
  return suffix ? `_${suffix}` : '';
}

export async function ensureDataset(
  adminUrl: string,
  size: DatasetSize,
  seed: number,
  flags: { rebuild: boolean; keepDataset: boolean },
  log: (line: string) => void,
  source: { root: string; label: string } = { root: ROOT, label: '' },
): Promise<Dataset> {
  const databaseName = `gpucap_bench_${size.label}${source.label ? `_${source.label}` : ''}${datasetSuffix()}`;
  const url = databaseUrl(adminUrl, databaseName);
  const fingerprint = sourceFingerprint(source.root);
  const existing = await readMarker(adminUrl, databaseName);
  const why = staleReason(existing, size, seed, fingerprint, flags);
  if (!why && existing) {
    log(`dataset ${databaseName}: reusing (${describe(existing)})`);
    // --keep-dataset reuses data loaded under older migrations: bring its schema to this checkout's.
    await runCli(['migrate'], { DATABASE_URL: url }, log, undefined, source.root);
    // A migration's backfill rewrites rows: vacuum them, as autovacuum would, before anything is timed.
    await analyze(url);
    return { size, databaseName, url, marker: existing, reused: true };
  }
  log(`dataset ${databaseName}: building (${why})`);
  await recreateDatabase(adminUrl, databaseName);
  await runCli(['migrate'], { DATABASE_URL: url }, log, undefined, source.root);
  const started = process.hrtime.bigint();
  const statements = new StatementTotals();
  const printed = await runCli(
    [
      'demo-data',
      '--workloads',
      String(size.workloads),
      '--seed',
      String(seed),
      '--samples',
      String(size.samples),
    ],
    { DATABASE_URL: url, GPUCAP_IMPORT_TRACE: '1' },
    log,
    (line) => statements.take(line),
    source.root,
  );
  const loadSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const rows = await countRows(url);
  const generatorSeconds = reportedSeconds(printed);
  const marker: DatasetMarker = {
    workloads: size.workloads,
    samples: size.samples,
    seed,
    fingerprint,
    loadSeconds,
    generatorSeconds,
    statements: statements.totals(),
    rows,
    builtAt: new Date().toISOString(),
  };
  await writeMarker(adminUrl, databaseName, marker);
  await analyze(url);
  log(`dataset ${databaseName}: built (${describe(marker)})`);
  return { size, databaseName, url, marker, reused: false };
}

export function describe(marker: DatasetMarker): string {
  const { rows, loadSeconds } = marker;
  const total = rows.workloads + rows.samples;
  return (
    `${rows.workloads.toLocaleString('en-US')} workloads, ${rows.samples.toLocaleString('en-US')} samples, ` +
    `loaded in ${loadSeconds.toFixed(1)} s = ${Math.round(total / loadSeconds).toLocaleString('en-US')} rows/s`
  );
}

/**
 * Sums the loader's trace lines (`[import] <ms> ms  <rows>  <statement>`) of the statements writing workloads
 * and samples: the import rate of the database work alone, next to the end-to-end load time.
 */
class StatementTotals {
  private readonly sums = { workloads: { rows: 0, seconds: 0 }, samples: { rows: 0, seconds: 0 } };

  /** True for every trace line (kept out of the log: a large load prints thousands). */
  take(line: string): boolean {
    if (!line.startsWith('[import] ')) return false;
    // Samples: the rows' INSERT, each chunk's split at the watermark and the merges into day blocks
    // (the loader traces the readings each merged, and 0 for a split that only stages them).
    const match =
      /^\[import\] (\d+) ms\s+(\d+)\s+(?:INSERT INTO (workloads|metric_samples) |WITH (?:split|staged) AS )/.exec(
        line,
      );
    if (match) {
      const total = match[3] === 'workloads' ? this.sums.workloads : this.sums.samples;
      total.seconds += Number(match[1]) / 1000;
      total.rows += Number(match[2]);
    }
    return true;
  }

  totals(): { workloads: StatementTotal; samples: StatementTotal } {
    return { workloads: { ...this.sums.workloads }, samples: { ...this.sums.samples } };
  }
}

function reportedSeconds(stdout: string): number | undefined {
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    const seconds = (JSON.parse(last) as { seconds?: unknown }).seconds;
    return typeof seconds === 'number' ? seconds : undefined;
  } catch {
    return undefined;
  }
}

function staleReason(
  marker: DatasetMarker | null,
  size: DatasetSize,
  seed: number,
  fingerprint: string,
  flags: { rebuild: boolean; keepDataset: boolean },
): string | null {
  if (flags.rebuild) return '--rebuild';
  if (!marker) return 'no benchmark database with a marker yet';
  if (marker.workloads !== size.workloads || marker.samples !== size.samples || marker.seed !== seed) {
    return 'built with other parameters';
  }
  if (marker.fingerprint !== fingerprint && !flags.keepDataset) {
    return 'migrations or data generator changed since it was built (--keep-dataset reuses it anyway)';
  }
  return null;
}

function sourceFingerprint(root: string): string {
  const hash = createHash('sha256');
  for (const file of FINGERPRINT_DIRS.flatMap((dir) => listFiles(join(root, dir))).sort()) {
    hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

function listFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

/** A client of its own on `url` for `work`, ended after it. */
export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function readMarker(adminUrl: string, databaseName: string): Promise<DatasetMarker | null> {
  return withClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`,
      [databaseName],
    );
    const comment = rows[0]?.comment;
    if (!comment) return null;
    try {
      return JSON.parse(comment) as DatasetMarker;
    } catch {
      return null;
    }
  });
}

function quoteIdentifier(name: string): string {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`unexpected database name ${name}`);
  return `"${name}"`;
}

/** `databaseName` made anew: empty, or a copy of `template`. */
export async function recreateDatabase(
  adminUrl: string,
  databaseName: string,
  template?: string,
): Promise<void> {
  await withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(databaseName)} WITH (FORCE)`);
    await client.query(
      `CREATE DATABASE ${quoteIdentifier(databaseName)}${template ? ` TEMPLATE ${quoteIdentifier(template)}` : ''}`,
    );
  });
}

async function writeMarker(adminUrl: string, databaseName: string, marker: DatasetMarker): Promise<void> {
  const literal = JSON.stringify(marker).replace(/'/g, "''");
  await withClient(adminUrl, (client) =>
    client.query(`COMMENT ON DATABASE ${quoteIdentifier(databaseName)} IS '${literal}'`),
  );
}

async function countRows(url: string): Promise<{ workloads: number; samples: number }> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ workloads: number; samples: number }>(
      `SELECT (SELECT count(*) FROM workloads)::int AS workloads,
              (SELECT coalesce(sum(sample_count), 0) FROM metric_aggregates)::float8 AS samples`,
    );
    return rows[0];
  });
}

/** Fresh statistics, so the first benchmarked queries get the plans they will get in steady state. */
async function analyze(url: string): Promise<void> {
  await withClient(url, (client) => client.query('VACUUM ANALYZE'));
}
