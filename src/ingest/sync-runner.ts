import { retryDelayMs, sleepUnlessStopped } from '../common/retry';
import type { DataSource } from 'typeorm';
import { InitiativeResolver } from './initiatives';
import { connectKubernetes, listKubernetes } from './kubernetes/kubernetes-source';
import { planSamples, prometheusJoins, readSamples } from './prometheus/prometheus-source';
import { listSlurm } from './slurm/slurm-source';
import { SyncConfig, SyncTarget, syncTargets } from './sync-config';
import {
  changedWorkloads,
  organizationExists,
  readInitiativeIds,
  readUnfinishedWorkloads,
  readWatermarks,
  readWorkloadSpans,
} from './sync-reads';
import type { ChangedWorkload, WorkloadListing } from './sync-records';
import { NOTHING_WRITTEN, SOURCE_NAMES, SourceName, SourceReport, writeCounts } from './sync-report';
import { oneLine, SourceUnavailableError } from './source-failure';
import { SyncRejectedError, writeSyncRecords } from './sync-writer';

type SourceResult = Omit<SourceReport, 'source' | 'seconds' | 'ok' | 'cluster'>;

/** What a run works with. */
export interface SyncRun {
  dataSource: DataSource;
  config: SyncConfig;
  /**
   * KUBERNETES_SERVICE_HOST is set (the app config): a Kubernetes source without a kubeconfig then
   * uses the pod's service account.
   */
  inCluster: boolean;
}

/** One source of one cluster (`''`: the config's top-level sources). */
export interface SyncTask {
  cluster: string;
  source: SourceName;
}

/**
 * The sources the config names, in the order they run: cluster by cluster (the top-level sources
 * first), and within one cluster its workload lists first, then the samples joined to them.
 */
export function configuredTasks(config: SyncConfig): SyncTask[] {
  return syncTargets(config).flatMap((target) =>
    SOURCE_NAMES.filter((source) => target[source] !== null).map((source) => ({
      cluster: target.cluster,
      source,
    })),
  );
}

/**
 * One source of one cluster. The sources only read their systems and map what they read to import
 * records; the runner reads what they need from the database before (the initiatives, the source's
 * watermarks, the workloads a listing may cancel or samples may join) and writes their records in
 * one writer transaction per source, which moves the source's watermark.
 */
async function runSource(
  run: SyncRun,
  target: SyncTarget,
  source: SourceName,
  changed: ChangedWorkload[],
): Promise<SourceResult & { changed?: ChangedWorkload[] }> {
  const { dataSource, config } = run;
  const { organizationId } = config;
  // Read anew for each source: initiatives an earlier source created exist now.
  const resolver = async () =>
    new InitiativeResolver(
      organizationId,
      await readInitiativeIds(dataSource, organizationId),
      config.unknownInitiatives,
    );
  switch (source) {
    case 'kubernetes': {
      const kubernetes = target.kubernetes!;
      const initiatives = await resolver();
      const api = await connectKubernetes(kubernetes, run.inCluster);
      const unfinished = await readUnfinishedWorkloads(
        dataSource,
        organizationId,
        api.clusterId,
        kubernetes.namespaces,
      );
      const listing = await listKubernetes(api, kubernetes, { organizationId, initiatives, unfinished });
      return writeListing(run, target.cluster, source, listing);
    }
    case 'slurm': {
      const initiatives = await resolver();
      const lastRead = (await readWatermarks(dataSource, organizationId, target.cluster)).slurm;
      const listing = await listSlurm(target.slurm!, { organizationId, initiatives, lastRead });
      return writeListing(run, target.cluster, source, listing);
    }
    case 'prometheus':
      return runPrometheus(run, target, changed);
  }
}

/** Writes a workload listing and moves its watermark; the workloads it changed are returned for Prometheus. */
async function writeListing(
  { dataSource, config }: SyncRun,
  cluster: string,
  source: 'kubernetes' | 'slurm',
  listing: WorkloadListing,
): Promise<SourceResult & { changed: ChangedWorkload[] }> {
  const changed = await changedWorkloads(dataSource, config.organizationId, listing.records);
  const result = await writeSyncRecords(
    dataSource,
    config.organizationId,
    { cluster, source },
    listing.records,
    listing.readUntil,
  );
  return {
    read: listing.read,
    ...writeCounts(result, listing.createdInitiatives),
    skipped: listing.skipped,
    refused: listing.refused,
    changed,
  };
}

/**
 * Reads the cluster's DCGM series since its watermark (and the lifetimes of the workloads the list
 * sources just changed), joined to the cluster's synced workloads, and writes the samples as they
 * are read.
 */
async function runPrometheus(
  { dataSource, config }: SyncRun,
  target: SyncTarget,
  changed: ChangedWorkload[],
): Promise<SourceResult> {
  const { organizationId } = config;
  const prometheus = target.prometheus!;
  const joins = prometheusJoins(target);
  const watermarks = await readWatermarks(dataSource, organizationId, target.cluster);
  const plan = planSamples(target, prometheus, watermarks, changed);
  if ('idle' in plan) return { ...plan.idle, ...NOTHING_WRITTEN };
  const spans = await readWorkloadSpans(
    dataSource,
    organizationId,
    target.joinScope,
    plan.joinFrom,
    plan.joinTo,
  );
  const reading = readSamples(
    joins,
    prometheus,
    plan,
    { organizationId, spans, changed },
    target.kubernetes?.migProfiles ?? {},
  );
  const result = await writeSyncRecords(
    dataSource,
    organizationId,
    { cluster: target.cluster, source: 'prometheus' },
    reading.records,
    reading.readUntil,
  );
  return { ...reading.tally(), ...writeCounts(result) };
}

/**
 * The organization must exist. With `unknown_initiatives: create` a missing one is created (through
 * the loader, like everything else): named after its id, UTC, the current calendar year as its budget
 * period; `gpucap import` of an organizations record sets the real values later.
 */
async function ensureOrganization({ dataSource, config }: SyncRun): Promise<void> {
  const { organizationId } = config;
  if (await organizationExists(dataSource, organizationId)) return;
  if (config.unknownInitiatives !== 'create') {
    throw new SourceUnavailableError(
      `organization '${organizationId}' does not exist: create it with gpucap import (an organizations record), or set unknown_initiatives: create`,
    );
  }
  const year = new Date().getUTCFullYear();
  const organization = {
    section: 'organizations' as const,
    value: {
      organization_id: organizationId,
      name: organizationId,
      timezone: 'UTC',
      budget_period_start: `${year}-01-01T00:00:00Z`,
      budget_period_end: `${year + 1}-01-01T00:00:00Z`,
    },
  };
  await writeSyncRecords(dataSource, organizationId, null, [organization], new Date());
}

/**
 * The config's prices, carbon intensities and GPU facts, through the import's loader like every
 * record (unchanged ones write nothing).
 */
async function writeConfigRecords({ dataSource, config }: SyncRun): Promise<void> {
  const records = [
    ...config.prices.map((value) => ({ section: 'prices' as const, value })),
    ...config.carbonIntensity.map((value) => ({ section: 'carbon_intensity' as const, value })),
    ...config.instanceTypes.map((value) => ({ section: 'instance_types' as const, value })),
  ];
  if (records.length === 0) return;
  await writeSyncRecords(dataSource, config.organizationId, null, records, new Date());
}

/**
 * Runs the given sources one after another, cluster by cluster, each in its own transaction: a
 * source that fails (down, refused by validation, a database error) reports why in one line and
 * writes nothing, and the others go on, those of its own cluster and of the other clusters alike.
 */
export async function syncOnce(
  run: SyncRun,
  tasks: SyncTask[] = configuredTasks(run.config),
): Promise<SourceReport[]> {
  const reports: SourceReport[] = [];
  let organizationProblem: string | null = null;
  try {
    await ensureOrganization(run);
    await writeConfigRecords(run);
  } catch (error) {
    organizationProblem = describe(error);
  }
  for (const target of syncTargets(run.config)) {
    // Workloads the cluster's list sources wrote as new or changed: its Prometheus re-reads their lifetime.
    const changed: ChangedWorkload[] = [];
    const cluster = target.cluster === '' ? {} : { cluster: target.cluster };
    for (const { source } of tasks.filter((task) => task.cluster === target.cluster)) {
      const started = Date.now();
      const seconds = () => (Date.now() - started) / 1000;
      if (organizationProblem) {
        reports.push(failed(source, cluster, organizationProblem, 0));
        continue;
      }
      try {
        const { changed: wrote, ...result } = await runSource(run, target, source, changed);
        changed.push(...(wrote ?? []));
        reports.push({ source, ...cluster, ok: true, ...result, seconds: seconds() });
      } catch (error) {
        reports.push(failed(source, cluster, describe(error), seconds()));
      }
    }
  }
  return reports;
}

function failed(
  source: SourceName,
  cluster: { cluster?: string },
  error: string,
  seconds: number,
): SourceReport {
  return {
    source,
    ...cluster,
    ok: false,
    read: 0,
    written: 0,
    workloads: 0,
    samples: 0,
    createdInitiatives: [],
    unchanged: 0,
    skipped: {},
    refused: {},
    error,
    seconds,
  };
}

function describe(error: unknown): string {
  if (error instanceof SourceUnavailableError || error instanceof SyncRejectedError) return oneLine(error);
  const database = error as { code?: unknown; message?: unknown };
  if (typeof database.code === 'string' && /^[0-9A-Z]{5}$/.test(database.code)) {
    return `the database refused the write, nothing written: ${oneLine(error)}`;
  }
  if (typeof database.code === 'string' && /^E[A-Z]+$/.test(database.code)) {
    return `cannot reach the database (${database.code}), nothing written`;
  }
  return oneLine(error);
}

export interface LoopOptions {
  intervalMs: number;
  onReport(report: SourceReport, nextAttemptMs: number): void;
  /** Resolves when the loop should stop (a signal); the run in progress finishes first. */
  stopped: Promise<void>;
}

/**
 * `--every`: each source of each cluster runs every interval; one that failed is retried with
 * back-off (5 s, then doubling up to the interval or 10 minutes) while the others keep their own
 * schedule.
 */
export async function syncEvery(run: SyncRun, options: LoopOptions): Promise<void> {
  const tasks = configuredTasks(run.config);
  const keyOf = (task: { cluster?: string; source: SourceName }) =>
    `${task.cluster ?? ''}\u0000${task.source}`;
  const due = new Map(tasks.map((task) => [keyOf(task), 0]));
  const failures = new Map(tasks.map((task) => [keyOf(task), 0]));
  let stop = false;
  void options.stopped.then(() => (stop = true));
  while (!stop) {
    const now = Date.now();
    const ready = tasks.filter((task) => (due.get(keyOf(task)) ?? 0) <= now);
    for (const report of await syncOnce(run, ready)) {
      const key = keyOf(report);
      const count = report.ok ? 0 : (failures.get(key) ?? 0) + 1;
      failures.set(key, count);
      const delay = report.ok
        ? options.intervalMs
        : Math.min(retryDelayMs(count), Math.max(options.intervalMs, 5_000));
      due.set(key, Date.now() + delay);
      options.onReport(report, delay);
    }
    const next = Math.min(...due.values());
    await sleepUnlessStopped(Math.max(0, next - Date.now()), options.stopped);
  }
}
