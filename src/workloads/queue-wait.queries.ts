import type { AuthScope } from '../common/auth/auth-scope';
import { type ScopedStatement, scopedStatement } from '../common/database/scoped-statement';
import { WAIT_SECONDS_SQL } from '../common/queue-wait';
import { runCostLateralSql, totalCostSql, unpricedUnitSecondsSql } from '../common/cost';
import { GROUPING, statsParameters, type StatsRequest } from './workload-stats.queries';

/**
 * Queue wait and pending demand of the workloads submitted in a stats range, from raw rows: a
 * percentile (percentile_cont) needs every wait, which no sum in the period rollups stands for (see
 * docs/architecture.md, "Queue wait"). One index-only pass over workloads_org_submitted_queue (range
 * key; every group key, the start, the status and the GPUs included); started and pending are as
 * stored, like the running workloads of the statistics.
 */

/** The figures of a set of waits and pending workloads, for QueueWaitRow. */
const QUEUE_FIGURES = `count(wait)::float8 AS started,
      avg(wait) AS avg_seconds,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY wait) AS p50_seconds,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY wait) AS p95_seconds,
      max(wait) AS max_seconds,
      count(*) FILTER (WHERE wait IS NULL)::float8 AS pending_count,
      coalesce(sum(gpu_count), 0)::float8 AS pending_gpus,
      coalesce(sum(gpu_share_units), 0)::float8 AS pending_share_units,
      min(submitted_at) FILTER (WHERE wait IS NULL) AS oldest_submitted_at,
      ${totalCostSql('sum(price_unit_seconds)', '(SELECT minor_units FROM gpu_prices WHERE organization_id = $1 LIMIT 1)')} AS total_cost,
      coalesce(sum(unpriced_unit_seconds), 0)::float8 AS unpriced_unit_seconds`;

/**
 * One row per workload submitted in the range that started (its wait; no GPUs) or is pending (wait
 * null; its GPUs): `leading` columns, submitted_at, wait, gpu_count, gpu_share_units; and the cost
 * of its run up to now (src/common/cost.ts): the priced amount before the division, and the
 * GPU-time without a price. The statistics' cost is read here, from raw rows, because it belongs to
 * each workload's whole run wherever its prices change, which no rollup row keyed by submission
 * can hold (docs/architecture.md, "Cost").
 */
function queueFactsSql(
  leading: string,
  where: string[],
  add: (value: unknown) => string,
  request: StatsRequest,
) {
  const now = add(request.now);
  return `SELECT ${leading}, submitted_at, ${WAIT_SECONDS_SQL},
        CASE WHEN status = 'pending' THEN gpu_count END, CASE WHEN status = 'pending' THEN gpu_share_units END,
        price.price_unit_seconds, ${unpricedUnitSecondsSql('workloads', now, 'price')}
      FROM workloads ${runCostLateralSql('workloads', now, 'price')} WHERE ${where.join(' AND ')}
        AND submitted_at >= ${add(request.from)} AND submitted_at < ${add(request.to)}
        AND (started_at IS NOT NULL OR status = 'pending')`;
}

/**
 * The summary and, with `group_by`, each group, in one pass (GROUPING SETS); with the `boundaries`
 * of a timeline (as for workloadTimelineQuery), the same per bucket too, each workload in the bucket
 * of its submission: the range is read once for all of them.
 */
export function queueWaitQuery(
  scope: AuthScope,
  request: StatsRequest,
  boundaries?: Date[],
): ScopedStatement {
  const { values, add, where } = statsParameters(scope, request, false);
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const facts = queueFactsSql(grouping.rawKey, where, add, request);
  const keys = request.groupBy ? [[], ['group_key']] : [[]];
  const sets = (boundaries ? [...keys, ...keys.map((key) => ['bucket_index', ...key])] : keys).map(
    (set) => `(${set.join(', ')})`,
  );
  const bucketed = boundaries
    ? `width_bucket(submitted_at, ${add(boundaries.slice(0, -1))}::timestamptz[]) AS bucket_index, `
    : '';
  const text = `SELECT ${boundaries ? 'bucket_index' : 'NULL::integer AS bucket_index'},
      ${request.groupBy ? 'GROUPING(group_key) = 1' : 'true'} AS is_summary,
      ${request.groupBy ? 'group_key' : 'NULL::text'} AS group_key,
      ${QUEUE_FIGURES}
    FROM (SELECT ${bucketed}facts.*
      FROM (${facts}
      ) AS facts(group_key, submitted_at, wait, gpu_count, gpu_share_units, price_unit_seconds, unpriced_unit_seconds)) AS bucketed
    GROUP BY GROUPING SETS (${sets.join(', ')})`;
  return scopedStatement(scope, text, values);
}

export interface QueueWaitRow {
  /** 1-based position of the bucket among the boundaries given; null for the whole range. */
  bucket_index: number | null;
  is_summary: boolean;
  group_key: string | null;
  started: number;
  /** Seconds; null when nothing started. */
  avg_seconds: number | null;
  p50_seconds: number | null;
  p95_seconds: number | null;
  max_seconds: number | null;
  pending_count: number;
  pending_gpus: number;
  /** Share units (src/common/gpu-sharing.ts). */
  pending_share_units: number;
  oldest_submitted_at: Date | null;
  /** Decimal text in the currency's minor units; null when the organization has no price. */
  total_cost: string | null;
  /** Share-unit-seconds of the runs without a price. */
  unpriced_unit_seconds: number;
}
