export const SOURCE_NAMES = ['kubernetes', 'slurm', 'prometheus'] as const;
export type SourceName = (typeof SOURCE_NAMES)[number];

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

/** `kubernetes: read 12, written 3, unchanged 7, skipped 2 (2 no nvidia.com/gpu limit)` */
export function reportLine(report: SourceReport): string {
  const source = sourceName(report);
  if (!report.ok) return `${source}: FAILED: ${report.error ?? 'unknown error'}`;
  const refused =
    total(report.refused) > 0 ? `, refused ${total(report.refused)}${reasons(report.refused)}` : '';
  return (
    `${source}: read ${report.read}, written ${report.written}, unchanged ${report.unchanged}, ` +
    `skipped ${total(report.skipped)}${reasons(report.skipped)}${refused} in ${report.seconds.toFixed(1)} s`
  );
}
