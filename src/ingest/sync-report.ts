import type { WriteResult } from './sync-writer';

export const SOURCE_NAMES = ['kubernetes', 'slurm', 'prometheus'] as const;
export type SourceName = (typeof SOURCE_NAMES)[number];

/** What a source reads, for the report line. */
const ITEMS: Record<SourceName, [string, string]> = {
  kubernetes: ['pod', 'pods'],
  slurm: ['job', 'jobs'],
  prometheus: ['reading', 'readings'],
};

/** What one source did in one run: the progress line and the JSON log entry are made from it. */
export interface SourceReport {
  source: SourceName;
  /** The `clusters[]` entry the source belongs to; absent for the config's top-level sources. */
  cluster?: string;
  ok: boolean;
  /** Items read from the source: pods, jobs, or per-workload readings. */
  read: number;
  /** Rows inserted or changed (initiatives, workloads, samples). */
  written: number;
  /** Of those, workload rows. */
  workloads: number;
  /** Of those, metric sample rows. */
  samples: number;
  /** Initiatives (teams) created by `unknown_initiatives: create`: they have no budget yet. */
  createdInitiatives: string[];
  /** Records sent to the loader that matched what was stored: nothing written. */
  unchanged: number;
  /** Items left out, by reason. */
  skipped: Record<string, number>;
  /** Records refused by the config (unknown initiatives with `unknown_initiatives: refuse`). */
  refused: Record<string, number>;
  /** Why the source failed, in one line. */
  error?: string;
  seconds: number;
}

/** Counts items under a reason. */
export class ReasonCounter {
  readonly counts: Record<string, number> = {};

  add(reason: string, count = 1): void {
    this.counts[reason] = (this.counts[reason] ?? 0) + count;
  }

  get total(): number {
    return Object.values(this.counts).reduce((sum, count) => sum + count, 0);
  }
}

function reasons(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return entries.length === 0
    ? ''
    : ` (${entries.map(([reason, count]) => `${count} ${reason}`).join('; ')})`;
}

function total(counts: Record<string, number>): number {
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}

/** `kubernetes`, or `kubernetes[eks-west]` for a source of a `clusters[]` entry. */
function sourceName(report: SourceReport): string {
  return report.cluster ? `${report.source}[${report.cluster}]` : report.source;
}

/** The counts of a source that wrote nothing. */
export const NOTHING_WRITTEN = {
  written: 0,
  unchanged: 0,
  workloads: 0,
  samples: 0,
  createdInitiatives: [] as string[],
};

/** The counts of a source's write, as the report carries them. */
export function writeCounts(
  result: WriteResult,
  createdInitiatives: string[] = [],
): Pick<SourceReport, 'written' | 'unchanged' | 'workloads' | 'samples' | 'createdInitiatives'> {
  return {
    written: result.written,
    unchanged: result.records - result.written,
    workloads: result.writtenBySection.workloads,
    samples: result.writtenBySection.metric_samples,
    // Listed only when the write created them (a concurrent run may have created them first).
    createdInitiatives: result.writtenBySection.initiatives > 0 ? createdInitiatives : [],
  };
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * `slurm: read 3 jobs; wrote 2 workloads, 0 samples; created 1 team (no budget: ...); unchanged 1;
 * skipped 1 (1 no gres/gpu) in 0.2 s`
 */
export function reportLine(report: SourceReport): string {
  const source = sourceName(report);
  if (!report.ok) return `${source}: FAILED: ${report.error ?? 'unknown error'}`;
  const [one, many] = ITEMS[report.source];
  const created = report.createdInitiatives.length;
  const parts = [
    `read ${plural(report.read, one, many)}`,
    `wrote ${plural(report.workloads, 'workload')}, ${plural(report.samples, 'sample')}`,
    ...(created > 0
      ? [
          `created ${plural(created, 'team')} (no budget: ${created === 1 ? 'it shows' : 'they show'} as exhausted until an allocation is imported)`,
        ]
      : []),
    `unchanged ${report.unchanged}`,
    `skipped ${total(report.skipped)}${reasons(report.skipped)}`,
    ...(total(report.refused) > 0 ? [`refused ${total(report.refused)}${reasons(report.refused)}`] : []),
  ];
  return `${source}: ${parts.join('; ')} in ${report.seconds.toFixed(1)} s`;
}

/** A warning per team created without a budget, after the report line. */
export function reportWarnings(report: SourceReport): string[] {
  return report.createdInitiatives.map(
    (initiative) =>
      `${sourceName(report)}: warning: created team '${initiative}' (unknown_initiatives: create) with no budget: ` +
      'its capacity shows as exhausted until an allocation for it is imported with gpucap import',
  );
}
