/**
 * Scale of `gpucap sync`: N running pods with G GPUs each, and H hours of DCGM readings at a 60 s step,
 * synced once from scratch (the backfill) and then again (a steady-state cycle: the overlap re-read,
 * little new to write), by the real CLI (`gpucap sync --once`, a child process) into a database of
 * its own (dropped at the end), while `gpucap serve` answers a steady stream of API requests on the
 * same database.
 *
 *   npx ts-node --transpile-only bench/sync-scale.ts [--pods 1000] [--gpus 1] [--hours 24]
 *     [--no-serve] [--cpu-prof DIR]
 *
 * Kubernetes and Prometheus are generated HTTP sources in this process: a PodList/NodeList server and
 * a `/api/v1/query_range` server that answers the sync's DCGM queries with deterministic values (a
 * real Prometheus would need a TSDB backfilled with N × G × 6 × H × 60 raw samples first). Their cost
 * (JSON generation) is on the same 2 cores, so the sync's time is an upper bound.
 * The server comes from DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from 'pg';
import { databaseUrl } from './dataset';
import { ROOT, runCli, Server as ServiceServer, startService } from './processes';

const DATABASE = 'gpucap_bench_sync';
const ORGANIZATION = 'org-sync-bench';
const INITIATIVES = ['vision', 'nlp', 'speech', 'robotics'];
const STEP = 60;
const RSS_POLL_MS = 50;

interface Options {
  pods: number;
  gpus: number;
  hours: number;
  serve: boolean;
  /** Where the sync processes write V8 CPU profiles, when set. */
  cpuProfileDirectory: string | null;
  adminUrl: string;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      pods: { type: 'string', default: '1000' },
      gpus: { type: 'string', default: '1' },
      hours: { type: 'string', default: '24' },
      'no-serve': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
    },
  });
  const count = (text: string, name: string) => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    pods: count(values.pods, '--pods'),
    gpus: count(values.gpus, '--gpus'),
    hours: count(values.hours, '--hours'),
    serve: !values['no-serve'],
    cpuProfileDirectory: values['cpu-prof'] ?? null,
    adminUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

const podName = (index: number) => `train-${String(index).padStart(6, '0')}`;
const podUid = (index: number) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;

function podList(options: Options, started: number): string {
  const iso = new Date(started * 1000).toISOString().replace('.000Z', 'Z');
  const items = Array.from({ length: options.pods }, (_, index) => ({
    metadata: {
      name: podName(index),
      namespace: 'training',
      uid: podUid(index),
      creationTimestamp: iso,
      labels: {
        'gpucap.io/initiative': INITIATIVES[index % INITIATIVES.length],
        'gpucap.io/submitted-by': `user${index % 50}`,
      },
    },
    spec: {
      nodeName: `node-${index % 100}`,
      containers: [{ name: 'main', resources: { limits: { 'nvidia.com/gpu': String(options.gpus) } } }],
    },
    status: {
      phase: 'Running',
      startTime: iso,
      containerStatuses: [{ name: 'main', state: { running: { startedAt: iso } } }],
    },
  }));
  return JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
}

function nodeList(): string {
  const items = Array.from({ length: 100 }, (_, index) => ({
    metadata: { name: `node-${index}`, labels: { 'node.kubernetes.io/instance-type': 'p4d.24xlarge' } },
  }));
  return JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
}

const VALUES: Record<string, (pod: number, gpu: number, minute: number) => number> = {
  DCGM_FI_DEV_GPU_UTIL: (pod, gpu, minute) => (pod * 7 + gpu * 3 + minute * 13) % 101,
  DCGM_FI_PROF_GR_ENGINE_ACTIVE: (pod, gpu, minute) => ((pod + gpu + minute) % 100) / 100,
  DCGM_FI_DEV_FB_USED: (pod, gpu, minute) => 1000 + ((pod * 31 + gpu + minute) % 70_000),
  DCGM_FI_DEV_FB_FREE: (pod, gpu, minute) => 81_920 - (1000 + ((pod * 31 + gpu + minute) % 70_000)),
  DCGM_FI_DEV_POWER_USAGE: (pod, gpu, minute) => 150 + ((pod * 17 + gpu + minute) % 550),
  DCGM_FI_DEV_GPU_TEMP: (pod, gpu, minute) => 40 + ((pod + gpu + minute) % 45),
};

/** Answers the sync's `avg_over_time(M{pod!=""}[..]) or …` queries: every pod's GPUs, the other selectors nothing. */
function queryRange(body: URLSearchParams, options: Options, started: number): string {
  const query = body.get('query') ?? '';
  const metric = /avg_over_time\((DCGM_\w+)\{pod(!=""|=~"([^"]*)")\}/.exec(query);
  const start = Number(body.get('start'));
  const end = Number(body.get('end'));
  const step = Number(body.get('step'));
  const parts: string[] = [];
  if (metric) {
    const only = metric[3] ? new Set(metric[3].split('|').map((name) => name.replace(/\\\\/g, ''))) : null;
    const value = VALUES[metric[1]];
    for (let pod = 0; pod < options.pods; pod += 1) {
      if (only && !only.has(podName(pod))) continue;
      for (let gpu = 0; gpu < options.gpus; gpu += 1) {
        const points: string[] = [];
        for (let time = Math.max(start, started + STEP); time <= end; time += step) {
          points.push(`[${time},"${value(pod, gpu, Math.floor(time / 60))}"]`);
        }
        if (points.length === 0) continue;
        parts.push(
          `{"metric":{"gpu":"${gpu}","UUID":"GPU-${pod}-${gpu}","namespace":"training","pod":"${podName(pod)}"},"values":[${points.join(',')}]}`,
        );
      }
    }
  }
  return `{"status":"success","data":{"resultType":"matrix","result":[${parts.join(',')}]}}`;
}

function listen(
  handler: (request: IncomingMessage, body: string, response: ServerResponse) => void,
): Promise<Server> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => handler(request, body, response));
  });
  // Idle connections stay open as long as Prometheus keeps them (its --web.read-timeout, 5 minutes).
  server.keepAliveTimeout = 300_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const portOf = (server: Server) => (server.address() as { port: number }).port;

async function dropDatabase(adminUrl: string): Promise<void> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await admin.end();
}

async function prepareDatabase(options: Options): Promise<string> {
  await dropDatabase(options.adminUrl);
  const admin = new Client({ connectionString: options.adminUrl });
  await admin.connect();
  await admin.query(
    `CREATE DATABASE ${DATABASE} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`,
  );
  await admin.end();
  const url = databaseUrl(options.adminUrl, DATABASE);
  await runCli(['migrate'], { DATABASE_URL: url }, () => undefined);
  const client = new Client({ connectionString: url });
  await client.connect();
  await client.query(
    `INSERT INTO organizations (organization_id, name, budget_period_start, budget_period_end)
     VALUES ($1, 'Sync bench', '2026-01-01', '2027-01-01')`,
    [ORGANIZATION],
  );
  for (const id of INITIATIVES) {
    await client.query('INSERT INTO initiatives VALUES ($1, $2, $2)', [ORGANIZATION, id]);
  }
  await client.end();
  return url;
}

function processTree(root: number): number[] {
  const tree = [root];
  for (let index = 0; index < tree.length; index += 1) {
    try {
      const children = readFileSync(`/proc/${tree[index]}/task/${tree[index]}/children`, 'utf8');
      tree.push(...children.split(' ').filter(Boolean).map(Number));
    } catch {
      // Gone already.
    }
  }
  return tree;
}

/** `gpucap sync --once` as a child process: its output, wall time and peak RSS (VmHWM). */
function timedSync(
  config: string,
  url: string,
  profileDirectory: string | null,
): Promise<{ stdout: string; seconds: number; peakRss: number; code: number | null }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(
      process.execPath,
      [
        ...(profileDirectory ? ['--cpu-prof', `--cpu-prof-dir=${profileDirectory}`] : []),
        join(ROOT, 'bin', 'gpucap.js'),
        'sync',
        '--config',
        config,
        '--once',
      ],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: url },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let stdout = '';
    let peakRss = 0;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const poll = setInterval(() => {
      // bin/gpucap.js runs sync in a child of its own (with a heap cap): read every process of the tree.
      for (const pid of processTree(child.pid as number)) {
        try {
          const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          if (match) peakRss = Math.max(peakRss, Number(match[1]) * 1024);
        } catch {
          // Exited; the last reading stands.
        }
      }
    }, RSS_POLL_MS);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(poll);
      resolve({ stdout, code, peakRss, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    });
  });
}

/** Sequential API requests while `until` is pending: how the service answered during the sync. */
async function driveService(service: ServiceServer, token: string, until: Promise<unknown>) {
  const latencies: number[] = [];
  let failures = 0;
  let done = false;
  void until.finally(() => (done = true));
  const paths = [
    '/v1/workloads?limit=20',
    '/v1/workloads/stats?time_range=last_7_days',
    '/v1/workloads/metrics?sort_by=gpu_utilization',
  ];
  for (let request = 0; !done; request += 1) {
    const started = performance.now();
    const response = await fetch(`${service.baseUrl}${paths[request % paths.length]}`, {
      headers: { Authorization: `Bearer ${token}`, 'X-Organization-Id': ORGANIZATION },
    }).catch(() => null);
    if (!response || response.status !== 200) failures += 1;
    await response?.arrayBuffer();
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const at = (quantile: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(quantile * latencies.length))] ?? 0;
  return { requests: latencies.length, failures, p50: at(0.5), p99: at(0.99) };
}

async function main(): Promise<void> {
  const options = parseOptions();
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const url = await prepareDatabase(options);
  const now = Math.floor(Date.now() / 1000);
  const podsStarted = Math.floor((now - options.hours * 3600) / STEP) * STEP - STEP;
  const pods = podList(options, podsStarted);
  const nodes = nodeList();
  const kubernetes = await listen((request, _body, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(path === '/api/v1/nodes' ? nodes : pods);
  });
  let prometheusQueries = 0;
  const prometheus = await listen((_request, body, response) => {
    prometheusQueries += 1;
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(queryRange(new URLSearchParams(body), options, podsStarted));
  });
  const directory = mkdtempSync(join(tmpdir(), 'gpucap-sync-bench-'));
  const kubeconfig = join(directory, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster:\n    server: http://127.0.0.1:${portOf(kubernetes)}\n    insecure-skip-tls-verify: true\nusers:\n- name: bench\n  user:\n    token: bench\ncontexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench\ncurrent-context: bench\n`,
  );
  const config = join(directory, 'sync.json');
  writeFileSync(
    config,
    JSON.stringify({
      organization_id: ORGANIZATION,
      unknown_initiatives: 'create',
      kubernetes: { kubeconfig, namespaces: ['training'] },
      prometheus: {
        url: `http://127.0.0.1:${portOf(prometheus)}`,
        step_seconds: STEP,
        backfill_hours: options.hours,
      },
    }),
  );
  let service: ServiceServer | null = null;
  let token = '';
  if (options.serve) {
    service = await startService(url, true, log);
    token = (
      await runCli(
        ['tokens', 'create', '--org', ORGANIZATION, '--role', 'ORG_ADMIN'],
        { DATABASE_URL: url },
        log,
      )
    )
      .split('\n')
      .map((line) => /gpucap_[A-Za-z0-9_-]+/.exec(line)?.[0])
      .find(Boolean) as string;
  }
  const expected = options.pods * options.hours * 60;
  log(
    `sync bench: ${options.pods} pods × ${options.gpus} GPU(s), ${options.hours} h at ${STEP} s ≈ ${expected.toLocaleString('en-US')} readings (${(expected * options.gpus * 6).toLocaleString('en-US')} DCGM points)`,
  );
  try {
    for (const run of ['first (backfill)', 'second (steady state)']) {
      const queriesBefore = prometheusQueries;
      const sync = timedSync(config, url, options.cpuProfileDirectory);
      const traffic = service ? driveService(service, token, sync) : null;
      const result = await sync;
      log(
        `${run}: ${result.seconds.toFixed(1)} s, exit ${result.code}, peak RSS ${(result.peakRss / 1024 / 1024).toFixed(0)} MB, ${prometheusQueries - queriesBefore} query_range calls`,
      );
      for (const line of result.stdout.split('\n').filter(Boolean)) log(`  ${line}`);
      if (traffic) {
        const answered = await traffic;
        log(
          `  service meanwhile: ${answered.requests} requests, ${answered.failures} non-200, p50 ${answered.p50.toFixed(0)} ms, p99 ${answered.p99.toFixed(0)} ms`,
        );
      }
    }
  } finally {
    await service?.stop();
    kubernetes.close();
    prometheus.close();
    rmSync(directory, { recursive: true, force: true });
    await dropDatabase(options.adminUrl);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
