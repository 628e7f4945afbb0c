import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { UnfinishedWorkload } from '../src/ingest/kubernetes/kubernetes-source';
import { ORGANIZATION_ID } from './fixtures';
import { runCompiledCli, type ServiceBuild } from './processes';

/**
 * What one sync-sized batch writes, besides a minute of readings for every running workload. The
 * counts keep the pending and running populations where the dataset has them: new running ones and
 * started ones replace the finished ones, started ones replace the new pending ones.
 */
export const BATCH = { newPending: 10, newRunning: 10, started: 10, finished: 20 } as const;
/** A minute at the demo data's 30 s cadence: two readings a running workload, 7.5 s apart so batches never repeat one. */
const READING_OFFSETS_MS = [7_500, 0];
/** One in this many finished workloads fails (exit code 1); the others complete. */
const FAILED_EVERY = 10;

export interface WriterStats {
  batches: number;
  workloads: number;
  samples: number;
  /** Wall time of each batch: the file written and `gpucap import` run to its end. */
  seconds: number[];
}

/** A pending or running workload as the sync reads it (sharing aside), with its status. */
interface Unfinished extends Omit<
  UnfinishedWorkload,
  'gpu_share_units' | 'gpu_sharing_mode' | 'gpu_sharing_profile' | 'gpu_sharing_replicas'
> {
  status: 'pending' | 'running';
  /** Whole GPUs: its record needs no gpu_share or gpu_sharing, so its status can change here. */
  whole: boolean;
}

/**
 * Lands a batch every `intervalMs` in the benchmarked organization through `gpucap import` of `build`
 * (the loader `gpucap sync` writes with: validation, the writer lock, upserts, rollup triggers, one
 * transaction) until `stop` resolves; each batch moves the organization's data version, so the
 * dashboards' next reads are computed again, as after every sync in production.
 */
export async function runWriter(
  databaseUrl: string,
  build: ServiceBuild,
  intervalMs: number,
  stop: Promise<void>,
  log: (line: string) => void,
): Promise<WriterStats> {
  const stats: WriterStats = { batches: 0, workloads: 0, samples: 0, seconds: [] };
  const file = join(tmpdir(), `gpucap-live-batch-${process.pid}.json`);
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  let stopped = false;
  void stop.then(() => (stopped = true));
  try {
    while (!stopped) {
      const started = Date.now();
      try {
        const batch = nextBatch(await readUnfinished(client), started);
        writeFileSync(file, JSON.stringify(batch));
        await runCompiledCli(build, ['import', file], { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, log);
        stats.workloads += batch.workloads.length;
        stats.samples += batch.metric_samples.length;
      } catch (error) {
        // Without its writes a build would be measured on still data: the run is void.
        throw new Error(`writer: batch failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      stats.batches += 1;
      stats.seconds.push((Date.now() - started) / 1000);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        stop,
        new Promise((done) => (timer = setTimeout(done, started + intervalMs - Date.now()))),
      ]);
      clearTimeout(timer);
    }
  } finally {
    await client.end();
    rmSync(file, { force: true });
  }
  return stats;
}

/**
 * The sync's own first step: the organization's pending and running workloads. The sharing columns
 * are read by name from the row's JSON: an earlier commit's schema (--before-dataset) has none.
 */
async function readUnfinished(client: Client): Promise<Unfinished[]> {
  const { rows } = await client.query<Unfinished>(
    `SELECT workload_id, initiative_id, name, status, submitted_by, instance_type, gpu_count, is_managed,
            cluster_id, namespace, submitted_at, started_at,
            to_jsonb(w) ->> 'gpu_sharing_mode' IS NULL AND to_jsonb(w) ->> 'share_units' IS NULL AS whole
       FROM workloads w
      WHERE organization_id = $1 AND status IN ('pending', 'running')
      ORDER BY submitted_at`,
    [ORGANIZATION_ID],
  );
  return rows;
}

function iso(time: number): string {
  return new Date(time).toISOString();
}

function record(workload: Unfinished, changes: Partial<Record<string, unknown>>): Record<string, unknown> {
  return {
    organization_id: ORGANIZATION_ID,
    workload_id: workload.workload_id,
    initiative_id: workload.initiative_id,
    name: workload.name,
    status: workload.status,
    submitted_by: workload.submitted_by,
    instance_type: workload.instance_type,
    gpu_count: workload.gpu_count,
    is_managed: workload.is_managed,
    cluster_id: workload.cluster_id,
    namespace: workload.namespace,
    submitted_at: workload.submitted_at.toISOString(),
    started_at: workload.started_at?.toISOString() ?? null,
    ...changes,
  };
}

/**
 * The oldest pending workloads start, the longest-running ones finish, new ones arrive (copies of
 * random unfinished ones under new ids), and every workload running during the batch's minute gets
 * its readings.
 */
function nextBatch(
  unfinished: Unfinished[],
  now: number,
): { workloads: Record<string, unknown>[]; metric_samples: Record<string, unknown>[] } {
  const running = unfinished.filter((w) => w.status === 'running');
  const whole = unfinished.filter((w) => w.whole);
  const pending = whole.filter((w) => w.status === 'pending');
  const longest = whole
    .filter((w) => w.status === 'running')
    .sort((a, b) => a.started_at!.getTime() - b.started_at!.getTime());
  const startedAt = iso(now - 15_000);
  const workloads = [
    ...pending.slice(0, BATCH.started).map((w) => record(w, { status: 'running', started_at: startedAt })),
    ...longest.slice(0, BATCH.finished).map((w, index) =>
      record(w, {
        status: index % FAILED_EVERY === 0 ? 'failed' : 'completed',
        completed_at: iso(now),
        exit_code: index % FAILED_EVERY === 0 ? 1 : 0,
      }),
    ),
  ];
  const fresh = (count: number, status: 'pending' | 'running') =>
    Array.from({ length: count }, (_, index) => {
      const template = whole[Math.floor(Math.random() * whole.length)];
      return record(template, {
        workload_id: `live-${now}-${status}-${index}`,
        status,
        submitted_at: iso(now - 30_000),
        started_at: status === 'running' ? startedAt : null,
      });
    });
  if (whole.length > 0)
    workloads.push(...fresh(BATCH.newPending, 'pending'), ...fresh(BATCH.newRunning, 'running'));
  const ran = workloads.filter((w) => w.status !== 'pending').map((w) => w.workload_id as string);
  const ids = new Set([...running.map((w) => w.workload_id), ...ran]);
  const metric_samples = [...ids].flatMap((workload_id) =>
    READING_OFFSETS_MS.map((offset) => ({
      organization_id: ORGANIZATION_ID,
      workload_id,
      timestamp: iso(now - offset),
      gpu_utilization: Math.round(Math.random() * 1000) / 10,
      memory_utilization: Math.round(Math.random() * 1000) / 10,
      temperature: 35 + Math.round(Math.random() * 50),
      power_usage: 80 + Math.round(Math.random() * 600),
    })),
  );
  return { workloads, metric_samples };
}
