import type { AuthScope } from '../common/auth/auth-scope';
import { type ScopedStatement, scopedStatement } from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { WAIT_SECONDS_SQL } from '../common/queue-wait';
import { chargedEndSql, overlapMicrosecondsSql } from '../common/cost';
import { UNIT_MICROSECONDS_PER_GPU_HOUR } from '../common/money';
import { idleSharesSql } from '../rollups/metric-aggregates/metric-aggregates.queries';
import { GROUPING, statsConditions, type StatsRequest } from './workload-stats.queries';
import { bucketedSplit, type RollupStarts } from './workload-timeline.queries';

/**
 * Queue wait and pending demand of the workloads submitted in a stats range, from raw rows: a
 * percentile (percentile_cont) needs every wait, which no sum in the period rollups stands for (see
 * docs/architecture.md, "Queue wait"). One index-only pass over workloads_org_submitted_queue (range
 * key; every group key, the start, the status and the GPUs included); started and pending are as
 * stored, like the running workloads of the statistics.
 */

/** The figures of a set of waits and pending workloads, for QueueWaitRow (`pending`: the rows that are). */
function queueFiguresSql(pending: string): string {
  return `count(wait)::float8 AS started,
      avg(wait) AS avg_seconds,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY wait) AS p50_seconds,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY wait) AS p95_seconds,
      max(wait) AS max_seconds,
      count(*) FILTER (WHERE ${pending})::float8 AS pending_count,
      coalesce(sum(gpu_count), 0)::float8 AS pending_gpus,
      coalesce(sum(gpu_share_units), 0)::float8 AS pending_share_units,
      min(submitted_at) FILTER (WHERE ${pending}) AS oldest_submitted_at`;
}

/**
 * One row per workload submitted in the range that started (its wait; no GPUs) or is pending (wait
 * null; its GPUs): `leading` columns, submitted_at, wait, gpu_count, gpu_share_units.
 */
function queueFactsSql(leading: string, where: string[], params: StatementParameters, request: StatsRequest) {
  return `SELECT ${leading}, submitted_at, ${WAIT_SECONDS_SQL},
        CASE WHEN status = 'pending' THEN gpu_count END, CASE WHEN status = 'pending' THEN gpu_share_units END
      FROM workloads WHERE ${where.join(' AND ')}
        AND submitted_at >= ${params.add(request.from)} AND submitted_at < ${params.add(request.to)}
        AND (started_at IS NOT NULL OR status = 'pending')`;
}

/**
 * The priced parts of the runs of the workloads submitted in the range, one row per run and price
 * period it overlaps (wait and GPUs null, so the queue figures skip them): share units × seconds ×
 * price, and share units × microseconds, up to now. A workload's cost belongs to its whole run, counted by
 * submission like its GPU-hours, wherever its prices change: no rollup row keyed by submission can
 * hold it (docs/architecture.md, "Cost"), so it is read here, from the range the queue figures read,
 * the prices joined by hash. What the runs' GPU-seconds leave unpriced is their total less this.
 *
 * The last column is the idle part × price of the runs that idleRollupFactsSql does not cover
 * (`needsRun`), by the rollups' functions on the part's amount; only those runs look up their aggregate.
 */
function pricedFactsSql(
  leading: string,
  where: string[],
  params: StatementParameters,
  request: StatsRequest,
  needsRun: (pivot: string) => string,
) {
  const now = params.add(request.now);
  const end = chargedEndSql('workloads', now);
  const needs = needsRun('price.pivot');
  const amount = '(gpu_share_units::bigint * part.us)::numeric';
  const [sampled, busy] = idleSharesSql(amount, 'a');
  // Renamed price columns: the unqualified group keys and conditions stay the workload's.
  return `SELECT ${leading}, submitted_at, NULL::float8, NULL::integer, NULL::integer,
        (gpu_share_units::bigint * part.us)::numeric * price_per_gpu_hour, gpu_share_units::bigint * part.us,
        CASE WHEN ${needs} THEN (${sampled} - ${busy}) * price_per_gpu_hour END
      FROM workloads
      JOIN (SELECT organization_id AS price_organization_id, instance_type AS price_instance_type,
                   effective_from, effective_to, price_per_gpu_hour, ${PIVOT_SQL} AS pivot
            FROM gpu_prices WHERE organization_id = ${params.organization}) AS price
        ON price_organization_id = workloads.organization_id AND price_instance_type = workloads.instance_type
      CROSS JOIN LATERAL (SELECT ${overlapMicrosecondsSql('price', 'workloads.started_at', end)} AS us) AS part
      LEFT JOIN LATERAL (
        SELECT m.sample_count, m.gpu_utilization_sum FROM metric_aggregates m
        WHERE ${needs} AND m.organization_id = workloads.organization_id AND m.workload_id = workloads.workload_id
        OFFSET 0
      ) AS a ON true
      WHERE ${where.join(' AND ')}
        AND submitted_at >= ${params.add(request.from)} AND submitted_at < ${params.add(request.to)}
        AND started_at IS NOT NULL AND effective_from < ${end}
        AND (effective_to IS NULL OR effective_to > started_at)`;
}

/**
 * Per price row, the first UTC midnight from which its instance type's price no longer changes: the
 * end of its last period (or the start of its open one, the last), rounded up to a day (timestamps
 * are whole microseconds, so a midnight stays itself), by a window over the few price rows. Every run
 * submitted from then on (runs start after submission) lies wholly in the open period, or in none.
 */
const PIVOT_SQL = `(date_trunc('day', (max(coalesce(effective_to, effective_from)) OVER (PARTITION BY instance_type))
          AT TIME ZONE 'UTC' + interval '1 day' - interval '1 microsecond') AT TIME ZONE 'UTC')`;

/**
 * The idle part × price of the finished runs in whole rollup days and hours from the pivot on
 * (PIVOT_SQL), read from the 'instance_type' rollup rows at their one price: (sampled − busy)
 * share-unit-seconds × 10^6 × the open period's price. Left out when the grouping has no such rows
 * (by submitter, or any raw read): every run is then costed by pricedFactsSql.
 */
function idleRollupFactsSql(
  rollupKey: string,
  where: string[],
  params: StatementParameters,
  starts: RollupStarts,
): string {
  // Unqualified: the scope conditions name the rollup's columns; the price's are renamed.
  return `SELECT ${rollupKey}, bucket_start, NULL::float8, NULL::integer, NULL::integer, NULL::numeric, NULL::numeric,
        (sampled_gpu_seconds_sum - busy_gpu_seconds_sum) * 1000000 * price_per_gpu_hour
      FROM workload_period_rollups
      JOIN (SELECT instance_type AS price_instance_type, price_per_gpu_hour, ${PIVOT_SQL} AS pivot
            FROM gpu_prices WHERE organization_id = ${params.organization} AND effective_to IS NULL) AS price
        ON price_instance_type = dimension_value AND bucket_start >= pivot
      WHERE ${where.join(' AND ')} AND dimension = 'instance_type' AND sampled_gpu_seconds_sum <> 0
        AND ((period = 'day' AND bucket_start = ANY(${params.add(starts.days)}::timestamptz[]))
          OR (period = 'hour' AND bucket_start = ANY(${params.add(starts.hours)}::timestamptz[])))`;
}

/**
 * The summary and, with `group_by`, each group, in one pass (GROUPING SETS); with the `boundaries`
 * of a timeline (as for workloadTimelineQuery), the same per bucket too, each workload in the bucket
 * of its submission: the range is read once for all of them. With `minorUnits` (the organization
 * prices in a currency with that many decimals) also the cost of the same workloads.
 */
export function queueWaitQuery(
  scope: AuthScope,
  request: StatsRequest,
  boundaries?: Date[],
  minorUnits: number | null = null,
): ScopedStatement {
  // No running workload accrues here: a clock the statement does not read would be an untyped parameter.
  const params = new StatementParameters(scope);
  const where = statsConditions(params, scope, request);
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const queue = queueFactsSql(grouping.rawKey, where, params, request);
  const facts = minorUnits === null ? queue : costFactsSql(queue, request, where, params, boundaries);
  const keys = request.groupBy ? [[], ['group_key']] : [[]];
  const sets = (boundaries ? [...keys, ...keys.map((key) => ['bucket_index', ...key])] : keys).map(
    (set) => `(${set.join(', ')})`,
  );
  const bucketed = boundaries
    ? `width_bucket(submitted_at, ${params.add(boundaries.slice(0, -1))}::timestamptz[]) AS bucket_index, `
    : '';
  const costs =
    minorUnits === null
      ? ''
      : `,
      round(coalesce(sum(price_unit_us), 0) / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, ${params.add(minorUnits)}::integer)::text AS total_cost,
      round(coalesce(sum(idle_price_unit_us), 0) / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, ${params.add(minorUnits)}::integer)::text AS idle_cost,
      (coalesce(sum(priced_unit_us), 0) / 1e6)::float8 AS priced_unit_seconds`;
  const text = `SELECT ${boundaries ? 'bucket_index' : 'NULL::integer AS bucket_index'},
      ${request.groupBy ? 'GROUPING(group_key) = 1' : 'true'} AS is_summary,
      ${request.groupBy ? 'group_key' : 'NULL::text'} AS group_key,
      ${queueFiguresSql(minorUnits === null ? 'wait IS NULL' : 'wait IS NULL AND priced_unit_us IS NULL AND idle_price_unit_us IS NULL')}${costs}
    FROM (SELECT ${bucketed}facts.*
      FROM (${facts}
      ) AS facts(group_key, submitted_at, wait, gpu_count, gpu_share_units${minorUnits === null ? '' : ', price_unit_us, priced_unit_us, idle_price_unit_us'})) AS bucketed
    GROUP BY GROUPING SETS (${sets.join(', ')})`;
  return scopedStatement(scope, text, params.values);
}

/**
 * The queue facts with the cost facts beside them: every priced run part (pricedFactsSql) and the
 * idle cost, from the rollup rows where one price covers them (idleRollupFactsSql) and from the runs
 * elsewhere: running ones, raw spans, rollup buckets before their type's pivot, and every run when
 * the grouping has no per-instance-type rollup rows (by submitter, or raw reads).
 */
function costFactsSql(
  queue: string,
  request: StatsRequest,
  where: string[],
  params: StatementParameters,
  boundaries?: Date[],
): string {
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const starts = bucketedSplit(request, boundaries);
  const byType = grouping.dimension !== 'submitted_by' && starts.days.length + starts.hours.length > 0;
  // Qualified: inside the aggregate lookup, status would be the aggregate's own.
  const needsRun = (pivot: string) => {
    if (!byType) return 'true';
    const raw = starts.raw.map(
      (span) =>
        `(workloads.submitted_at >= ${params.add(span.from)} AND workloads.submitted_at < ${params.add(span.to)})`,
    );
    return `(workloads.status = 'running' OR workloads.submitted_at < ${pivot}${raw.map((span) => ` OR ${span}`).join('')})`;
  };
  return `SELECT *, NULL::numeric, NULL::numeric, NULL::numeric FROM (${queue}) AS queue
         UNION ALL
         ${pricedFactsSql(grouping.rawKey, where, params, request, needsRun)}${
           byType
             ? `
         UNION ALL
         ${idleRollupFactsSql(grouping.rollupKey, where, params, starts)}`
             : ''
         }`;
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
  /** With prices only: decimal text in the currency's minor units. */
  total_cost?: string;
  /** With prices only: the money of the idle part of the priced GPU-time, decimal text. */
  idle_cost?: string;
  /** With prices only: share-unit-seconds of the runs that have a price. */
  priced_unit_seconds?: number;
}
