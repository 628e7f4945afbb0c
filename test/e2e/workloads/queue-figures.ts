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

/** A started workload's wait in whole seconds (floor), as the service defines it. */
export function waitOf(row: WorkloadRow): number {
  return Math.floor((row.startedAt!.getTime() - row.submittedAt.getTime()) / 1000);
}

/** `queue_wait` and `pending` of a set of workloads, recomputed from the rows the test inserted. */
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
      p50_seconds: some ? round4(percentileCont(waits, 0.5)) : null,
      p95_seconds: some ? round4(percentileCont(waits, 0.95)) : null,
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
