import type { StatementParameters } from '../../common/database/statement-parameters';
import {
  aggregateLookupSql,
  idleSharesSql,
  runningAggregateJoinSql,
} from '../metric-aggregates/metric-aggregates.queries';
import { WAIT_SECONDS_SQL } from '../../core/queue-wait';
import type { WorkloadStatus } from '../../core/workload-status';
import type { PeriodSplit, Span } from './period-split';
import { SETTLED_ENERGY_COLUMNS } from '../workload-energy/workload-energy.definitions';

/** The duration of a finished run, whole seconds (floor): the one definition of `duration_seconds`. */
export const DURATION_SECONDS_SQL = 'floor(extract(epoch FROM completed_at - started_at))';

/**
 * `wait_seconds` of a workload at `asOf` (a placeholder): its wait once started, the wait so far while
 * pending, null for one cancelled before it started.
 */
export function waitSecondsAtSql(asOf: string): string {
  return `(CASE WHEN started_at IS NOT NULL THEN ${WAIT_SECONDS_SQL}
      WHEN status = 'pending' THEN greatest(0, floor(extract(epoch FROM ${asOf}::timestamptz - submitted_at))) END)::float8`;
}

export type PeriodDimension = 'none' | 'submitted_by' | 'instance_type';

const STATUS_COUNT_COLUMNS: Record<WorkloadStatus, string> = {
  pending: 'pending_count',
  running: 'running_count',
  completed: 'completed_count',
  failed: 'failed_count',
  cancelled: 'cancelled_count',
};

/** Columns of every fact row, in this order (rollup rows and raw rows alike). */
export const FACT_COLUMNS = [
  ...Object.values(STATUS_COUNT_COLUMNS),
  'finished_count',
  'duration_seconds_sum',
  'gpu_seconds_sum',
];

/** The same measures computed from one raw workloads row (running ones count 0 GPU-seconds). */
export const RAW_MEASURES = [
  ...Object.keys(STATUS_COUNT_COLUMNS).map((status) => `(status = '${status}')::int`),
  `(status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int`,
  `coalesce(${DURATION_SECONDS_SQL}, 0)`,
  `coalesce(gpu_share_units::bigint * ${DURATION_SECONDS_SQL}, 0)`,
];

/**
 * Idle-time facts (migration 15000): finished runs' GPU-seconds that have samples, and the busy part
 * of them (× lifetime average utilization / 100); statistics read them, counts do not.
 */
const IDLE_FACT_COLUMNS = ['sampled_gpu_seconds_sum', 'busy_gpu_seconds_sum'];

/** Raw workloads with their metric aggregate's count and utilization sum (null without samples). */
export const WORKLOADS_WITH_AGGREGATE = `workloads ${aggregateLookupSql('workloads', 'aggregate')}`;

/** WORKLOADS_WITH_AGGREGATE for a read of running workloads only (runningAggregateJoinSql). */
export const RUNNING_WORKLOADS_WITH_AGGREGATE = `workloads ${runningAggregateJoinSql('workloads', 'aggregate')}`;

/** The idle facts of `gpuSeconds` over WORKLOADS_WITH_AGGREGATE, by the rollups' own functions. */
export function rawIdleMeasures(gpuSeconds: string): string[] {
  return idleSharesSql(gpuSeconds, 'aggregate');
}

/**
 * Money facts (src/rollups/workload-costs/): the priced cost, the priced GPU-time (share units ×
 * microseconds of whole seconds) and the idle cost of finished runs, exact numerics before the division
 * by one GPU-hour's unit-microseconds; 0 without prices.
 */
export const COST_FACT_COLUMNS = ['cost_unit_us_sum', 'priced_whole_unit_us_sum', 'idle_cost_unit_us_sum'];

/** The idle part of `amount` over WORKLOADS_WITH_AGGREGATE: sampled less busy, by the rollups' functions. */
export function rawIdlePartSql(amount: string): string {
  const [sampled, busy] = rawIdleMeasures(amount);
  return `(${sampled} - ${busy})`;
}

/**
 * Energy facts (src/rollups/workload-energy/): the settled energy, carbon and uncovered energy of the
 * runs that are not running, exact numerics (µJ, µJ × g/kWh); 0 without samples.
 */
export const ENERGY_FACT_COLUMNS = SETTLED_ENERGY_COLUMNS.map((column) => `${column}_sum`);

/** Statistics' facts: the counts, the idle facts, the money and the energy, on rollup rows and (over WORKLOADS_WITH_AGGREGATE) raw rows. */
export const STATS_FACT_COLUMNS = [
  ...FACT_COLUMNS,
  ...IDLE_FACT_COLUMNS,
  ...COST_FACT_COLUMNS,
  ...ENERGY_FACT_COLUMNS,
];
export const RAW_STATS_MEASURES = [
  ...RAW_MEASURES,
  ...rawIdleMeasures(`coalesce(gpu_share_units::bigint * ${DURATION_SECONDS_SQL}, 0)`),
  // Running ones carry no amounts: runningFactsSql prices them up to now and reads their energy so far.
  'coalesce(priced_cost_unit_us, 0)',
  'coalesce(priced_whole_unit_us, 0)',
  `coalesce(${rawIdlePartSql('whole_cost_unit_us')}, 0)`,
  // Qualified: the aggregate carries columns of the same names (the energy so far).
  ...SETTLED_ENERGY_COLUMNS.map((column) => `coalesce(workloads.${column}, 0)`),
];

/** The energy so far of running workloads over RUNNING_WORKLOADS_WITH_AGGREGATE: their aggregate's, no last hold yet. */
export const RUNNING_ENERGY_MEASURES = SETTLED_ENERGY_COLUMNS.map(
  (column) => `coalesce(aggregate.${column}, 0)`,
);

/** Workloads of a status (all when undefined), as an expression over the fact columns. */
export function workloadCountSql(status?: WorkloadStatus): string {
  return status === undefined
    ? Object.values(STATUS_COUNT_COLUMNS).join(' + ')
    : STATUS_COUNT_COLUMNS[status];
}

export interface PeriodFactsRequest {
  /** The statement's parameters, which the spans' bounds are added to. */
  params: StatementParameters;
  /** Conditions on organization_id and initiative_id, valid on both the rollup and workloads. */
  where: string[];
  /** Further conditions only rollup rows take (on dimension_value)... */
  rollupWhere?: string[];
  /** ...and the same filter on workloads rows. */
  rawWhere?: string[];
  dimension: PeriodDimension;
  /** The group key on rollup rows (`initiative_id`, `dimension_value`, or `NULL::text`)... */
  rollupKey: string;
  /** ...and the same key on workloads rows. */
  rawKey: string;
  /** STATS_FACT_COLUMNS instead of FACT_COLUMNS. */
  withIdle?: boolean;
}

/**
 * SELECTs whose rows together hold the measures of every workload submitted in the split range:
 * `group_key` then FACT_COLUMNS. Rollup rows for whole days and hours, raw rows for the rest, so
 * the work per request stays a few rows per day however many workloads a day holds.
 */
export function periodFactsSql(split: PeriodSplit, request: PeriodFactsRequest): string[] {
  const { params, where } = request;
  const columns = request.withIdle ? STATS_FACT_COLUMNS : FACT_COLUMNS;
  const rollup = (period: 'day' | 'hour', span: Span) => {
    const conditions = [
      ...where,
      ...(request.rollupWhere ?? []),
      `period = '${period}'`,
      `dimension = '${request.dimension}'`,
    ];
    if (span.from) conditions.push(`bucket_start >= ${params.add(span.from)}`);
    if (span.to) conditions.push(`bucket_start < ${params.add(span.to)}`);
    return `SELECT ${request.rollupKey} AS group_key, ${columns.join(', ')}
      FROM workload_period_rollups WHERE ${conditions.join(' AND ')}`;
  };
  const raw = (span: Span) => {
    const conditions = [
      ...where,
      ...(request.rawWhere ?? []),
      `submitted_at >= ${params.add(span.from)}`,
      `submitted_at < ${params.add(span.to)}`,
    ];
    return request.withIdle
      ? `SELECT ${request.rawKey}, ${RAW_STATS_MEASURES.join(', ')}
      FROM ${WORKLOADS_WITH_AGGREGATE} WHERE ${conditions.join(' AND ')}`
      : `SELECT ${request.rawKey}, ${RAW_MEASURES.join(', ')}
      FROM workloads WHERE ${conditions.join(' AND ')}`;
  };
  return [
    ...(split.days ? [rollup('day', split.days)] : []),
    ...split.hours.map((span) => rollup('hour', span)),
    ...split.raw.map(raw),
  ];
}
