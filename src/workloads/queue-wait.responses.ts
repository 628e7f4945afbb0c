import { gpuHoursOfUnitSeconds, gpusOfUnits } from '../common/gpu-sharing';
import { round4, round4OrNull } from '../common/http/decimal';
import type { QueueWaitRow } from './queue-wait.queries';

/** Rows of queue-wait.queries.ts shaped into the statistics' `queue_wait` and `pending`. */

export interface QueueWaitJson {
  started: number;
  avg_seconds: number | null;
  p50_seconds: number | null;
  p95_seconds: number | null;
  max_seconds: number | null;
}

export interface PendingJson {
  count: number;
  gpus: number;
  gpu_share: number;
  oldest_submitted_at: string | null;
}

export interface QueueFiguresJson {
  queue_wait: QueueWaitJson;
  pending: PendingJson;
}

/** The figures of one row; a set with no row (nothing started or pending) gets zeros and nulls. */
export function queueFigures(row: QueueWaitRow | undefined): QueueFiguresJson {
  return {
    queue_wait: {
      started: row?.started ?? 0,
      avg_seconds: round4OrNull(row?.avg_seconds ?? null),
      p50_seconds: round4OrNull(row?.p50_seconds ?? null),
      p95_seconds: round4OrNull(row?.p95_seconds ?? null),
      max_seconds: row?.max_seconds ?? null,
    },
    pending: {
      count: row?.pending_count ?? 0,
      gpus: row?.pending_gpus ?? 0,
      gpu_share: round4(gpusOfUnits(row?.pending_share_units ?? 0)),
      oldest_submitted_at: row?.oldest_submitted_at?.toISOString() ?? null,
    },
  };
}

/** The rows of one set (the statistics, or one bucket) by group: the summary under null. */
export function queueRowsByGroup(rows: QueueWaitRow[]): Map<string | null, QueueWaitRow> {
  return new Map(rows.map((row) => [row.is_summary ? null : row.group_key, row]));
}

export interface CostFiguresJson {
  /** In metadata.currency; the priced GPU-hours only (see unpriced_gpu_hours); null without prices. */
  total_cost: string | null;
  /** GPU-hours of the set that no price covers: what total_cost leaves out. */
  unpriced_gpu_hours: number;
  /** The money of the priced part of idle_gpu_hours; null without prices. */
  idle_cost: string | null;
}

/**
 * The cost of one set: from the same row as its queue figures (absent: the set has no started or
 * pending workload); `gpuSeconds` the set's GPU-time (share-unit-seconds) from the statistics' own
 * row, so what no price covers is that less the priced part. `zero` is "0.00" in the organization's
 * currency, null when it has no price (every GPU-hour is then unpriced).
 */
export function costFigures(
  row: QueueWaitRow | undefined,
  gpuSeconds: number,
  zero: string | null,
): CostFiguresJson {
  if (zero === null)
    return {
      total_cost: null,
      unpriced_gpu_hours: round4(gpuHoursOfUnitSeconds(gpuSeconds)),
      idle_cost: null,
    };
  return {
    total_cost: row?.total_cost ?? zero,
    unpriced_gpu_hours: round4(gpuHoursOfUnitSeconds(gpuSeconds - (row?.priced_unit_seconds ?? 0))),
    idle_cost: row?.idle_cost ?? zero,
  };
}
