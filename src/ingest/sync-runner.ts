import type { DataSource } from 'typeorm';
import { InitiativeResolver } from './initiatives';
import { syncKubernetes } from './kubernetes/kubernetes-source';
import { syncPrometheus } from './prometheus/prometheus-source';
import { syncSlurm } from './slurm/slurm-source';
import { SyncConfig, SyncTarget, syncTargets } from './sync-config';
import { SOURCE_NAMES, SourceName, SourceReport } from './sync-report';
import { oneLine, SourceUnavailableError } from './source-failure';
import { ChangedWorkload, SyncRejectedError, writeSyncRecords } from './sync-writer';

type SourceResult = Omit<SourceReport, 'source' | 'seconds' | 'ok' | 'cluster'>;

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

async function runSource(
  dataSource: DataSource,
  config: SyncConfig,
  target: SyncTarget,
  source: SourceName,
  changed: ChangedWorkload[],
): Promise<SourceResult & { changed?: ChangedWorkload[] }> {
  const { organizationId, unknownInitiatives } = config;
  const resolver = () => InitiativeResolver.load(dataSource, organizationId, unknownInitiatives);
  switch (source) {
    case 'kubernetes':
      return syncKubernetes(dataSource, organizationId, target.cluster, target.kubernetes!, await resolver());
    case 'slurm':
      return syncSlurm(dataSource, organizationId, target.cluster, target.slurm!, await resolver());
    case 'prometheus':
      return syncPrometheus(dataSource, organizationId, target, target.prometheus!, changed);
  }
}

/**
 * The organization must exist. With `unknown_initiatives: create` a missing one is created (through
 * the loader, like everything else): named after its id, UTC, the current calendar year as its budget
 * period; `gpucap import` of an organizations record sets the real values later.
 */
async function ensureOrganization(dataSource: DataSource, config: SyncConfig): Promise<void> {
  const { organizationId } = config;
  const rows: unknown[] = await dataSource.query('SELECT 1 FROM organizations WHERE organization_id = $1', [
    organizationId,
  ]);
  if (rows.length > 0) return;
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
 * Runs the given sources one after another, cluster by cluster, each in its own transaction: a
 * source that fails (down, refused by validation, a database error) reports why in one line and
 * writes nothing, and the others go on, those of its own cluster and of the other clusters alike.
 */
export async function syncOnce(
  dataSource: DataSource,
  config: SyncConfig,
  tasks: SyncTask[] = configuredTasks(config),
): Promise<SourceReport[]> {
  const reports: SourceReport[] = [];
  let organizationProblem: string | null = null;
  try {
    await ensureOrganization(dataSource, config);
  } catch (error) {
    organizationProblem = describe(error);
  }
  for (const target of syncTargets(config)) {
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
        const { changed: wrote, ...result } = await runSource(dataSource, config, target, source, changed);
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

/** Delay before retrying a source that failed `failures` times in a row: 5 s, doubling, at most 10 min. */
export function retryDelayMs(failures: number): number {
  return Math.min(5_000 * 2 ** Math.max(0, failures - 1), 600_000);
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
export async function syncEvery(
  dataSource: DataSource,
  config: SyncConfig,
  options: LoopOptions,
): Promise<void> {
  const tasks = configuredTasks(config);
  const keyOf = (task: { cluster?: string; source: SourceName }) =>
    `${task.cluster ?? ''}\u0000${task.source}`;
  const due = new Map(tasks.map((task) => [keyOf(task), 0]));
  const failures = new Map(tasks.map((task) => [keyOf(task), 0]));
  let stop = false;
  void options.stopped.then(() => (stop = true));
  while (!stop) {
    const now = Date.now();
    const ready = tasks.filter((task) => (due.get(keyOf(task)) ?? 0) <= now);
    for (const report of await syncOnce(dataSource, config, ready)) {
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
    await Promise.race([
      new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now()))),
      options.stopped,
    ]);
  }
}
