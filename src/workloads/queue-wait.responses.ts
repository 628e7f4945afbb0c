import { gpuHoursOfUnitSeconds, gpusOfUnits } from '../common/gpu-sharing';
import { round4, round4OrNull } from '../common/http/decimal';
import { ExactSum, UNIT_MICROSECONDS_PER_GPU_HOUR } from '../common/money';
import type { QueueWaitRow } from './queue-wait.queries';
import type { StatsRow } from './workload-stats.queries';

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

/** What a set's money is read from: the statistics' own row (workload-stats.queries.ts). */
export type CostSums = Pick<
  StatsRow,
  'gpu_seconds' | 'cost_unit_us' | 'idle_cost_unit_us' | 'priced_unit_seconds'
>;

const NO_COST: CostSums = {
  gpu_seconds: 0,
  cost_unit_us: '0',
  idle_cost_unit_us: '0',
  priced_unit_seconds: 0,
};

/**
 * The cost of one set from its exact sums (absent: the set is empty), each divided by one GPU-hour's
 * unit-microseconds and rounded once to `minorUnits`, the currency's decimals (null: the organization
 * has no price, and every GPU-hour is unpriced); what no price covers is the set's GPU-time less the
 * priced part.
 */
export function costFigures(row: CostSums | undefined, minorUnits: number | null): CostFiguresJson {
  const sums = row ?? NO_COST;
  if (minorUnits === null)
    return {
      total_cost: null,
      unpriced_gpu_hours: round4(gpuHoursOfUnitSeconds(sums.gpu_seconds)),
      idle_cost: null,
    };
  const amount = (unitUs: string) => {
    const sum = new ExactSum();
    sum.add(unitUs);
    return sum.rounded(BigInt(UNIT_MICROSECONDS_PER_GPU_HOUR), minorUnits);
  };
  return {
    total_cost: amount(sums.cost_unit_us),
    unpriced_gpu_hours: round4(gpuHoursOfUnitSeconds(sums.gpu_seconds - sums.priced_unit_seconds)),
    idle_cost: amount(sums.idle_cost_unit_us),
  };
}
