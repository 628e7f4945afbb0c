/**
 * Peak memory of `gpucap import` on one large file: generates a valid dataset (one organization, a
 * few initiatives, N workloads and M samples) into a temporary file, imports it into a database of
 * its own (created, migrated, dropped at the end) and prints the time and the importer's peak RSS.
 *
 *   npx ts-node --transpile-only bench/import-rss.ts [--workloads N] [--samples N] [--format json|ndjson|both]
 *
 * The server comes from DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { databaseUrl, recreateDatabase, withClient } from './dataset';
import { ROOT, runCli } from './processes';

const DATABASE = 'gpucap_bench_import_rss';
const ORGANIZATION = 'org-rss';
const INITIATIVES = ['vision', 'nlp', 'speech', 'robotics'];
const INSTANCE_TYPES = ['p5.48xlarge', 'g5.12xlarge', 'g5.48xlarge'];
const STATUSES = ['completed', 'completed', 'completed', 'completed', 'failed', 'running'] as const;
const START = Date.parse('2026-03-01T00:00:00Z');
const MINUTE = 60_000;
/** How often the child's VmHWM is read; it is a high-water mark, so only growth in the last interval can be missed. */
const RSS_POLL_MS = 50;

type Format = 'json' | 'ndjson';

interface Options {
  workloads: number;
  samples: number;
  formats: Format[];
  adminUrl: string;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      workloads: { type: 'string', default: '1000000' },
      samples: { type: 'string', default: '10000000' },
      format: { type: 'string', default: 'json' },
    },
  });
  const count = (text: string, name: string) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  const format = values.format;
  if (format !== 'json' && format !== 'ndjson' && format !== 'both') {
    throw new Error('--format must be json, ndjson or both');
  }
  return {
    workloads: count(values.workloads, '--workloads'),
    samples: count(values.samples, '--samples'),
    formats: format === 'both' ? ['json', 'ndjson'] : [format],
    adminUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

const iso = (time: number) => new Date(time).toISOString();

function parents(): Record<string, Record<string, unknown>[]> {
  const organization_id = ORGANIZATION;
  return {
    organizations: [
      {
        organization_id,
        name: 'RSS Robotics',
        timezone: 'Europe/Berlin',
        budget_period_start: '2026-01-01T00:00:00Z',
        budget_period_end: '2027-01-01T00:00:00Z',
      },
    ],
    initiatives: INITIATIVES.map((id) => ({ organization_id, initiative_id: id, name: id.toUpperCase() })),
    pools: [
      { organization_id, pool_id: 'h100', name: 'H100 reserved', instance_types: [INSTANCE_TYPES[0]] },
      { organization_id, pool_id: 'a10g', name: 'A10G spot', instance_types: INSTANCE_TYPES.slice(1) },
    ],
    allocations: INITIATIVES.map((id, index) => ({
      organization_id,
      initiative_id: id,
      pool_id: index % 2 ? 'a10g' : 'h100',
      allocated_gpu_hours: 5000 + index * 250.5,
    })),
    members: [
      { organization_id, subject: 'admin@rss.example', role: 'ORG_ADMIN' },
      { organization_id, subject: 'lead@rss.example', role: 'TEAM_LEAD', initiative_ids: ['vision', 'nlp'] },
    ],
  };
}

/** Workload `index` and its samples, one a minute from its start; samples are spread evenly. */
function* workloadRecords(index: number, options: Options): Generator<[string, Record<string, unknown>]> {
  const samples =
    Math.floor(options.samples / options.workloads) + (index < options.samples % options.workloads ? 1 : 0);
  const status = STATUSES[index % STATUSES.length];
  const workloadId = `wl-${String(index).padStart(8, '0')}`;
  const submitted = START + index * 7_000;
  const started = submitted + MINUTE;
  const finished = status !== 'running';
  yield [
    'workloads',
    {
      organization_id: ORGANIZATION,
      workload_id: workloadId,
      initiative_id: INITIATIVES[index % INITIATIVES.length],
      name: `train-${index % 997}`,
      status,
      submitted_by: `user${index % 50}@rss.example`,
      instance_type: INSTANCE_TYPES[index % INSTANCE_TYPES.length],
      gpu_count: 1 << (index % 4),
      is_managed: index % 3 !== 0,
      cluster_id: 'eks-use1',
      namespace: 'training',
      submitted_at: iso(submitted),
      started_at: iso(started),
      completed_at: finished ? iso(started + (samples + 1) * MINUTE) : null,
      exit_code: finished ? (status === 'failed' ? 137 : 0) : null,
    },
  ];
  for (let sample = 0; sample < samples; sample += 1) {
    yield [
      'metric_samples',
      {
        organization_id: ORGANIZATION,
        workload_id: workloadId,
        timestamp: iso(started + (sample + 1) * MINUTE),
        gpu_utilization: (index * 7 + sample * 13) % 101,
        memory_utilization: ((index * 3 + sample * 11) % 1000) / 10,
        temperature: 40 + ((index + sample) % 45),
        power_usage: 150 + ((index * 17 + sample) % 550),
      },
    ];
  }
}

const KIND: Record<string, string> = {
  organizations: 'organization',
  initiatives: 'initiative',
  pools: 'pool',
  allocations: 'allocation',
  members: 'member',
  workloads: 'workload',
  metric_samples: 'metric_sample',
};

/** Buffered writes that wait for the disk, so generating never holds more than a few MB. */
class Writer {
  private readonly stream;
  private parts: string[] = [];
  private size = 0;

  constructor(file: string) {
    this.stream = createWriteStream(file);
  }

  async write(text: string): Promise<void> {
    this.parts.push(text);
    this.size += text.length;
    if (this.size < 1 << 20) return;
    const ok = this.stream.write(this.parts.join(''));
    this.parts = [];
    this.size = 0;
    if (!ok) await once(this.stream, 'drain');
  }

  async close(): Promise<void> {
    this.stream.end(this.parts.join(''));
    await once(this.stream, 'finish');
  }
}

/**
 * NDJSON: one record a line. JSON: one document on a single line (as JSON.stringify writes it),
 * parents first, then the workloads section and the samples section, the sections the reader must
 * never hold whole.
 */
async function generate(file: string, format: Format, options: Options): Promise<void> {
  const out = new Writer(file);
  const fixed = parents();
  if (format === 'ndjson') {
    for (const [section, records] of Object.entries(fixed)) {
      for (const record of records)
        await out.write(`${JSON.stringify({ kind: KIND[section], ...record })}\n`);
    }
    for (let index = 0; index < options.workloads; index += 1) {
      for (const [section, record] of workloadRecords(index, options)) {
        await out.write(`${JSON.stringify({ kind: KIND[section], ...record })}\n`);
      }
    }
  } else {
    await out.write(JSON.stringify(fixed).slice(0, -1));
    for (const section of ['workloads', 'metric_samples']) {
      await out.write(`,${JSON.stringify(section)}:[`);
      let first = true;
      for (let index = 0; index < options.workloads; index += 1) {
        for (const [recordSection, record] of workloadRecords(index, options)) {
          if (recordSection !== section) continue;
          await out.write(`${first ? '' : ','}${JSON.stringify(record)}`);
          first = false;
        }
      }
      await out.write(']');
    }
    await out.write('}\n');
  }
  await out.close();
}

/** The process and its descendants (`bin/gpucap.js` re-runs an import under a heap cap in a child). */
function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone since the listing.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i += 1) {
    for (const [pid, parent] of parents) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** Runs `gpucap import FILE`; resolves with its exit code and the largest peak RSS (VmHWM) in its process tree, in bytes. */
function importWithPeakRss(file: string, url: string): Promise<{ code: number | null; peakRss: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'gpucap.js'), 'import', file], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    let peakRss = 0;
    const poll = setInterval(() => {
      for (const pid of processTree(child.pid as number)) {
        try {
          const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          if (match) peakRss = Math.max(peakRss, Number(match[1]) * 1024);
        } catch {
          // The process has just exited; the last reading stands.
        }
      }
    }, RSS_POLL_MS);
    child.on('error', (error) => {
      clearInterval(poll);
      reject(error);
    });
    child.on('exit', (code) => {
      clearInterval(poll);
      resolve({ code, peakRss });
    });
  });
}

async function countRows(url: string): Promise<{ workloads: number; samples: number }> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ workloads: number; samples: number }>(
      `SELECT (SELECT count(*)::int FROM workloads) AS workloads, (SELECT coalesce(sum(sample_count), 0)::int FROM metric_aggregates) AS samples`,
    );
    return rows[0];
  });
}

async function measure(format: Format, options: Options, url: string): Promise<void> {
  const file = join(tmpdir(), `gpucap-import-rss-${process.pid}.${format === 'json' ? 'json' : 'ndjson'}`);
  try {
    let started = Date.now();
    await generate(file, format, options);
    const megabytes = statSync(file).size / 1e6;
    log(`${format}: generated ${megabytes.toFixed(0)} MB in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    await recreateDatabase(options.adminUrl, DATABASE);
    await runCli(['migrate'], { DATABASE_URL: url }, log);
    started = Date.now();
    const { code, peakRss } = await importWithPeakRss(file, url);
    const seconds = (Date.now() - started) / 1000;
    if (code !== 0) throw new Error(`gpucap import exited with ${code}`);
    const rows = await countRows(url);
    if (rows.workloads !== options.workloads || rows.samples !== options.samples) {
      throw new Error(`imported ${rows.workloads} workloads and ${rows.samples} samples, expected more`);
    }
    log(
      `${format}: ${options.workloads} workloads, ${options.samples} samples (${megabytes.toFixed(0)} MB): ` +
        `import ${seconds.toFixed(1)} s, peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`,
    );
  } finally {
    rmSync(file, { force: true });
  }
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<void> {
  const settings = options();
  const url = databaseUrl(settings.adminUrl, DATABASE);
  try {
    for (const format of settings.formats) await measure(format, settings, url);
  } finally {
    await withClient(settings.adminUrl, (client) =>
      client.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`),
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`import-rss: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
