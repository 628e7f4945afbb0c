import type { WorkloadRow } from '../../support/factories';

/** Contract §1: at most 4 decimals. */
function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

/** PostgreSQL's percentile_cont over sorted values: linear between the two nearest ranks. */
export function percentileCont(sorted: number[], fraction: number): number {
  const position = fraction * (sorted.length - 1);
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - lower);
}

/**
 * The queue-wait percentiles' stated bound (docs/api.md): within 1 % of percentile_cont over the same
 * waits, each side rounded to 4 decimals. Matches a number, or its text in a CSV cell.
 */
class WithinPercentileBound {
  readonly $$typeof = Symbol.for('jest.asymmetricMatcher');
  constructor(readonly exact: number) {}
  asymmetricMatch(other: unknown): boolean {
    const value = typeof other === 'string' && other !== '' ? Number(other) : other;
    return typeof value === 'number' && Math.abs(value - this.exact) <= this.exact * 0.01 + 0.0001;
  }
  toAsymmetricMatcher(): string {
    return `within 1 % of ${this.exact}`;
  }
}

/** `exact` (a percentile_cont figure) as the API may answer it; null stays null. */
export function percentileFigure(exact: number | null): WithinPercentileBound | null {
  return exact === null ? null : new WithinPercentileBound(exact);
}

/** A started workload's wait in whole seconds (floor), as the service defines it. */
export function waitOf(row: WorkloadRow): number {
  return Math.floor((row.startedAt!.getTime() - row.submittedAt.getTime()) / 1000);
}

/**
 * `queue_wait` and `pending` of a set of workloads, recomputed from the rows the test inserted: exact,
 * but for p50 and p95, matched within their bound (percentileFigure).
 */
export function queueFiguresOf(rows: WorkloadRow[]) {
  const waits = rows
    .filter((row) => row.startedAt !== null)
    .map(waitOf)
    .sort((a, b) => a - b);
  const pending = rows.filter((row) => row.status === 'pending');
  const oldest = pending.reduce<Date | null>(
    (first, row) => (first === null || row.submittedAt < first ? row.submittedAt : first),
    null,
  );
  const some = waits.length > 0;
  return {
    queue_wait: {
      started: waits.length,
      avg_seconds: some ? round4(waits.reduce((sum, wait) => sum + wait, 0) / waits.length) : null,
      p50_seconds: percentileFigure(some ? round4(percentileCont(waits, 0.5)) : null),
      p95_seconds: percentileFigure(some ? round4(percentileCont(waits, 0.95)) : null),
      max_seconds: some ? waits[waits.length - 1] : null,
    },
    pending: {
      count: pending.length,
      gpus: pending.reduce((sum, row) => sum + row.gpuCount, 0),
      gpu_share: round4(pending.reduce((sum, row) => sum + row.shareUnits, 0) / 5040),
      oldest_submitted_at: oldest === null ? null : oldest.toISOString(),
    },
  };
}
