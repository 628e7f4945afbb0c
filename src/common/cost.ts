import type { AuthScope } from './auth/auth-scope';
import { scopedInitiativeIds } from './auth/auth-scope';
import {
  initiativeScopeSql,
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
} from './database/scoped-statement';
import { StatementParameters } from './database/statement-parameters';
import { overlapMicrosecondsSql } from '../core/price-overlap';
import { UNIT_MICROSECONDS_PER_GPU_HOUR } from './money';

/**
 * Cost SQL shared by every reader (docs/architecture.md, "Cost"). Money is charged on the exact run,
 * from started_at to completed_at or, running, the answer's as_of, as capacity counts it, so list,
 * detail, statistics, capacity and FOCUS agree; each part at the price of the period it falls in.
 * GPU-time figures beside the money (unpriced GPU-hours; idle GPU-hours and their idle cost) keep
 * the GPU-hours' own basis, the run's whole seconds. Time is whole microseconds (bigint: float epoch
 * arithmetic rounded to the microsecond, exact below 2^53 µs; numeric `extract` cost ~2 µs a row
 * more). Amounts are numeric: share units × microseconds × price, summed exactly, divided once by one
 * GPU-hour's unit-microseconds and rounded once, at the end, to the currency's minor units
 * (PostgreSQL's round: half away from zero).
 */

/** The end of the charged run of a workloads row (exact), or null when it never started. */
export function chargedEndSql(workload: string, asOf: string): string {
  return `greatest(${workload}.started_at, coalesce(${workload}.completed_at, ${asOf}::timestamptz))`;
}

/** The end of the run's whole seconds from started_at (the GPU-hours' basis), or null when it never started. */
export function wholeSecondsEndSql(workload: string, asOf: string): string {
  return `(${workload}.started_at + floor(greatest(0, date_part('epoch', coalesce(${workload}.completed_at, ${asOf}::timestamptz) - ${workload}.started_at))) * interval '1 second')`;
}

/**
 * Per row of workloads `workload`, a LATERAL over its instance type's prices (primary key):
 * `price_count` (0 when the instance type has none), `price_unit_us` (Σ price × microseconds of each
 * part, × share units: the cost before the division), `priced_us` (microseconds that have a price),
 * and over the run's whole seconds `whole_priced_us` (the priced GPU-time's basis) and
 * `whole_price_unit_us` (what idle cost shares).
 */
export function runCostLateralSql(workload: string, asOf: string, alias: string): string {
  const overlap = overlapMicrosecondsSql('p', `${workload}.started_at`, chargedEndSql(workload, asOf));
  const whole = overlapMicrosecondsSql('p', `${workload}.started_at`, wholeSecondsEndSql(workload, asOf));
  return `LEFT JOIN LATERAL (
    SELECT count(*) AS price_count,
      ${workload}.gpu_share_units * coalesce(sum(p.price_per_gpu_hour * ${overlap}), 0) AS price_unit_us,
      coalesce(sum(${overlap}), 0) AS priced_us,
      coalesce(sum(${whole}), 0) AS whole_priced_us,
      ${workload}.gpu_share_units * coalesce(sum(p.price_per_gpu_hour * ${whole}), 0) AS whole_price_unit_us,
      max(p.minor_units) AS minor_units
    FROM gpu_prices p
    WHERE p.organization_id = ${workload}.organization_id AND p.instance_type = ${workload}.instance_type
  ) AS ${alias} ON true`;
}

/**
 * A workload's cost as text with the currency's decimals: null when its instance type has no price
 * or part of its run falls outside every price period (never 0 for "unknown").
 */
export function workloadCostSql(workload: string, asOf: string, alias: string): string {
  const chargedUs = `round(date_part('epoch', ${chargedEndSql(workload, asOf)} - ${workload}.started_at) * 1e6)`;
  return `CASE WHEN ${alias}.price_count > 0 AND ${alias}.priced_us >= coalesce(${chargedUs}, 0)
    THEN round(${alias}.price_unit_us / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, ${alias}.minor_units)::text END`;
}

/**
 * The idle part of a workload's cost (text, the currency's decimals): the cost of its whole seconds
 * (the idle GPU-hours' basis) × (1 − average GPU utilization / 100), in numeric like the rollups' busy
 * shares, rounded once; null without a cost or without samples (`aggregate`: sample_count and
 * gpu_utilization_sum, null without samples).
 */
export function idleCostSql(workload: string, asOf: string, alias: string, aggregate: string): string {
  return `CASE WHEN ${aggregate}.sample_count > 0 AND ${workloadCostSql(workload, asOf, alias)} IS NOT NULL
        THEN round(${alias}.whole_price_unit_us * (1 - ${aggregate}.gpu_utilization_sum / (${aggregate}.sample_count * 100)) / ${UNIT_MICROSECONDS_PER_GPU_HOUR},
                   ${alias}.minor_units)::text END`;
}

/**
 * idleCostSql of a few workloads (a ranked page) at `asOf`, in the caller's scope: one price lookup
 * and one aggregate lookup each.
 */
export function workloadIdleCostsQuery(scope: AuthScope, workloadIds: string[], asOf: Date): ScopedStatement {
  const params = new StatementParameters(scope);
  const conditions = [
    `w.organization_id = ${params.organization}`,
    `w.workload_id = ANY(${params.add(workloadIds)}::text[])`,
  ];
  const at = params.add(asOf);
  const initiatives = scopedInitiativeIds(scope);
  if (initiatives !== null) conditions.push(initiativeScopeSql('w.initiative_id', params.add(initiatives)));
  return scopedStatement(
    scope,
    `SELECT w.workload_id, ${idleCostSql('w', at, 'price', 'a')} AS idle_cost
     FROM workloads w ${runCostLateralSql('w', at, 'price')}
     LEFT JOIN LATERAL (
       SELECT m.sample_count, m.gpu_utilization_sum FROM metric_aggregates m
       WHERE m.organization_id = w.organization_id AND m.workload_id = w.workload_id AND m.sample_count > 0
     ) AS a ON true
     WHERE ${conditions.join(' AND ')}`,
    params.values,
  );
}

/** `metadata.currency`: the organization's currency, null while it has no price. */
export interface CurrencyMetadata {
  currency: string | null;
}

/** The organization's currency (prices are organization rows any member may read). */
export function organizationCurrencyQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  return organizationStatement(
    scope,
    `SELECT (SELECT currency FROM gpu_prices WHERE organization_id = ${params.organization} LIMIT 1) AS currency`,
    params.values,
  );
}
