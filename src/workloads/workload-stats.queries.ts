import type { AuthScope } from '../common/auth/auth-scope';
import { scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  FACT_COLUMNS,
  PeriodDimension,
  periodFactsSql,
  rawIdleMeasures,
  STATS_FACT_COLUMNS,
  RUNNING_WORKLOADS_WITH_AGGREGATE,
  RUNNING_ENERGY_MEASURES,
  rawIdlePartSql,
  workloadCountSql,
} from '../rollups/workload-periods/workload-periods.queries';
import { splitByPeriod } from '../rollups/workload-periods/period-split';
import {
  type ScopedStatement,
  scopedStatement,
  initiativeScopeSql,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { runCostLateralSql } from '../common/cost';
import { carbonKgSql, energyKwhSql } from '../rollups/metric-aggregates/metric-aggregates.queries';

export const STATS_GROUP_BY = ['submitted_by', 'initiative_id', 'instance_type', 'cluster_id'] as const;
export type StatsGroupBy = (typeof STATS_GROUP_BY)[number];

export interface StatsRequest {
  from: Date;
  to: Date;
  now: Date;
  initiativeId?: string;
  clusterId?: string;
  groupBy?: StatsGroupBy;
}

/** The rollup dimension and the group key, on rollup rows and on raw rows, per `group_by`. */
export const GROUPING: Record<
  StatsGroupBy | 'none',
  { dimension: PeriodDimension; rollupKey: string; rawKey: string }
> = {
  none: { dimension: 'none', rollupKey: 'NULL::text', rawKey: 'NULL::text' },
  initiative_id: { dimension: 'none', rollupKey: 'initiative_id', rawKey: 'initiative_id' },
  submitted_by: { dimension: 'submitted_by', rollupKey: 'dimension_value', rawKey: 'submitted_by' },
  instance_type: { dimension: 'instance_type', rollupKey: 'dimension_value', rawKey: 'instance_type' },
  cluster_id: { dimension: 'none', rollupKey: 'cluster_id', rawKey: 'cluster_id' },
};

/**
 * Statistics of the workloads submitted in [from, to): whole UTC days and hours from
 * workload_period_rollups, the partial hours at the edges from raw rows (periodFactsSql), plus the
 * GPU-seconds so far of the running ones, read through the partial index of running workloads.
 * Summary and groups come from one pass (GROUPING SETS).
 */
export function workloadStatsQuery(scope: AuthScope, request: StatsRequest): ScopedStatement {
  const stats = statsParameters(scope, request);
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const facts = periodFactsSql(splitByPeriod(request.from, request.to), {
    params: stats.params,
    where: stats.where,
    ...grouping,
    withIdle: true,
  });
  facts.push(runningFactsSql(grouping.rawKey, stats, request));
  const sets = request.groupBy ? 'GROUPING SETS ((), (group_key))' : '()';
  const isSummary = request.groupBy ? 'GROUPING(group_key) = 1' : 'true';
  const order = request.groupBy ? 'ORDER BY 1 DESC, 3 DESC, group_key COLLATE "C"' : '';
  const text = `SELECT ${isSummary} AS is_summary, ${request.groupBy ? 'group_key' : 'NULL::text'} AS group_key,
      ${STATS_SUMS}
    FROM (${facts.join('\n UNION ALL ')}) AS facts(group_key, ${STATS_FACT_COLUMNS.join(', ')})
    GROUP BY ${sets}
    ${order}`;
  return scopedStatement(scope, text, stats.params.values);
}

/** The figures of StatsRow, summed over fact rows of STATS_FACT_COLUMNS. */
export const STATS_SUMS = `coalesce(sum(${workloadCountSql()}), 0)::float8 AS workload_count,
      coalesce(sum(gpu_seconds_sum), 0)::float8 AS gpu_seconds,
      coalesce(sum(finished_count), 0)::float8 AS finished_count,
      coalesce(sum(duration_seconds_sum), 0)::float8 AS duration_seconds,
      coalesce(sum(completed_count), 0)::float8 AS completed_count,
      coalesce(sum(failed_count), 0)::float8 AS failed_count,
      coalesce(sum(sampled_gpu_seconds_sum), 0)::float8 AS sampled_gpu_seconds,
      coalesce(sum(busy_gpu_seconds_sum), 0)::float8 AS busy_gpu_seconds,
      coalesce(sum(cost_unit_us_sum), 0)::text AS cost_unit_us,
      coalesce(sum(idle_cost_unit_us_sum), 0)::text AS idle_cost_unit_us,
      (coalesce(sum(priced_whole_unit_us_sum), 0) / 1e6)::float8 AS priced_unit_seconds,
      ${energyKwhSql('coalesce(sum(energy_microjoules_sum), 0)')} AS total_energy_kwh,
      ${carbonKgSql('coalesce(sum(carbon_microjoule_grams_per_kwh_sum), 0)')} AS total_carbon_kg,
      ${energyKwhSql('coalesce(sum(uncovered_microjoules_sum), 0)')} AS uncovered_energy_kwh`;

/**
 * The caller's initiatives and the initiative (and cluster) filter of a statistics read, with the
 * organization, as conditions valid on both workloads and workload_period_rollups.
 */
export function statsConditions(
  params: StatementParameters,
  scope: AuthScope,
  request: StatsRequest,
): string[] {
  const where = [`organization_id = ${params.organization}`];
  const initiatives = scopedInitiativeIds(scope);
  if (initiatives !== null) where.push(initiativeScopeSql('initiative_id', params.add(initiatives)));
  if (request.initiativeId !== undefined) where.push(`initiative_id = ${params.add(request.initiativeId)}`);
  if (request.clusterId !== undefined) where.push(`cluster_id = ${params.add(request.clusterId)}`);
  return where;
}

/** A statistics read that counts running workloads up to `now`: the clock, then statsConditions. */
export interface StatsParameters {
  params: StatementParameters;
  now: string;
  where: string[];
}

export function statsParameters(scope: AuthScope, request: StatsRequest): StatsParameters {
  const params = new StatementParameters(scope);
  const now = params.add(request.now);
  return { params, now, where: statsConditions(params, scope, request) };
}

/**
 * The GPU-seconds so far of the running workloads submitted in the range and their idle facts (by
 * their samples so far), as rows of STATS_FACT_COLUMNS (their counts are already in the rollup and
 * raw rows); `leading` are the columns before the facts.
 */
export function runningFactsSql(leading: string, stats: StatsParameters, request: StatsRequest): string {
  const runningSeconds = `gpu_share_units::bigint * greatest(0, floor(extract(epoch FROM ${stats.now}::timestamptz - started_at)))`;
  const zeros = FACT_COLUMNS.slice(0, -1).map(() => '0');
  const money = [
    'price.price_unit_us',
    'gpu_share_units * price.whole_priced_us',
    rawIdlePartSql('price.whole_price_unit_us'),
  ];
  return `SELECT ${leading}, ${zeros.join(', ')}, ${runningSeconds}, ${rawIdleMeasures(runningSeconds).join(', ')}, ${money.join(', ')},
        ${RUNNING_ENERGY_MEASURES.join(', ')}
      FROM ${RUNNING_WORKLOADS_WITH_AGGREGATE} ${runCostLateralSql('workloads', stats.now, 'price')}
      WHERE ${stats.where.join(' AND ')} AND status = 'running'
        AND submitted_at >= ${stats.params.add(request.from)} AND submitted_at < ${stats.params.add(request.to)}`;
}

export interface StatsRow {
  is_summary: boolean;
  group_key: string | null;
  workload_count: number;
  gpu_seconds: number;
  finished_count: number;
  duration_seconds: number;
  completed_count: number;
  failed_count: number;
  sampled_gpu_seconds: number;
  busy_gpu_seconds: number;
  /** The priced cost × one GPU-hour's unit-microseconds (numeric text, exact; "0" without prices). */
  cost_unit_us: string;
  /** The same of the idle part. */
  idle_cost_unit_us: string;
  /** Share-unit-seconds of the GPU-time that has a price (whole seconds). */
  priced_unit_seconds: number;
  /** Energy of the set's samples, kWh (4 decimals): finished workloads' settled, running ones' so far. */
  total_energy_kwh: number;
  /** Carbon of the part of it a carbon intensity covers, kg CO2e (4 decimals). */
  total_carbon_kg: number;
  /** The part of total_energy_kwh no carbon intensity covers. */
  uncovered_energy_kwh: number;
}
