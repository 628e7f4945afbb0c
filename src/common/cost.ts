import type { AuthScope } from './auth/auth-scope';
import { organizationStatement, type ScopedStatement } from './database/scoped-statement';
import { currencyMinorUnits, UNIT_SECONDS_PER_GPU_HOUR } from './money';

/**
 * Cost SQL shared by every reader (docs/architecture.md, "Cost"). A run is charged from started_at
 * for its whole seconds (the floor the GPU-hours use), up to completed_at or, running, the answer's
 * as_of; each part at the price of the period it falls in. Amounts are numeric: share units ×
 * seconds × price, summed exactly, divided by one GPU-hour's unit-seconds and rounded once, at the
 * end, to the currency's minor units (PostgreSQL's round: half away from zero).
 */

/** The end of the charged run of a workloads row (`w`), or null when it never started. */
export function chargedEndSql(workload: string, asOf: string): string {
  return `(${workload}.started_at + greatest(0, floor(extract(epoch FROM coalesce(${workload}.completed_at, ${asOf}::timestamptz) - ${workload}.started_at))) * interval '1 second')`;
}

/** Seconds of [from, to) inside price period `p` (0 when disjoint; null when `from` is null). */
export function overlapSecondsSql(price: string, from: string, to: string): string {
  // least and greatest skip nulls: without the CASE an open period would meet an unstarted run as infinity.
  return `CASE WHEN ${from} IS NOT NULL THEN greatest(0, extract(epoch FROM least(coalesce(${price}.effective_to, 'infinity'::timestamptz), ${to}) - greatest(${price}.effective_from, ${from}))) ELSE 0 END`;
}

/**
 * Per row of workloads `w`, a LATERAL over its instance type's prices: `price_count` (0 when the
 * instance type has none), `price_unit_seconds` (Σ price × seconds of each part, × share units: the
 * cost before the division) and `priced_seconds` (seconds of the run that have a price).
 */
export function runCostLateralSql(workload: string, asOf: string, alias: string): string {
  const overlap = overlapSecondsSql('p', `${workload}.started_at`, chargedEndSql(workload, asOf));
  return `LEFT JOIN LATERAL (
    SELECT count(*) AS price_count,
      ${workload}.gpu_share_units * coalesce(sum(p.price_per_gpu_hour * ${overlap}), 0) AS price_unit_seconds,
      coalesce(sum(${overlap}), 0) AS priced_seconds,
      max(p.minor_units) AS minor_units
    FROM gpu_prices p
    WHERE p.organization_id = ${workload}.organization_id AND p.instance_type = ${workload}.instance_type
  ) AS ${alias} ON true`;
}

/** The run's charged seconds (0 when it never started). */
export function chargedSecondsSql(workload: string, asOf: string): string {
  return `coalesce(extract(epoch FROM ${chargedEndSql(workload, asOf)} - ${workload}.started_at), 0)`;
}

/**
 * A workload's cost as text with the currency's decimals: null when its instance type has no price
 * or part of its run falls outside every price period (never 0 for "unknown").
 */
export function workloadCostSql(workload: string, asOf: string, alias: string): string {
  return `CASE WHEN ${alias}.price_count > 0 AND ${alias}.priced_seconds >= ${chargedSecondsSql(workload, asOf)}
    THEN round(${alias}.price_unit_seconds / ${UNIT_SECONDS_PER_GPU_HOUR}, ${alias}.minor_units)::text END`;
}

/** GPU-time (share units × seconds) of the run that has no price: what a total leaves out. */
export function unpricedUnitSecondsSql(workload: string, asOf: string, alias: string): string {
  return `${workload}.gpu_share_units * (${chargedSecondsSql(workload, asOf)} - ${alias}.priced_seconds)`;
}

/** A total (Σ price_unit_seconds) as text in the currency's decimals; null without a currency. */
export function totalCostSql(sum: string, minorUnits: string): string {
  return `round(coalesce(${sum}, 0) / ${UNIT_SECONDS_PER_GPU_HOUR}, ${minorUnits})::text`;
}

/** `metadata.currency`: the organization's currency, null while it has no price. */
export interface CurrencyMetadata {
  currency: string | null;
}

/** The organization's currency (prices are organization rows any member may read). */
export function organizationCurrencyQuery(scope: AuthScope): ScopedStatement {
  return organizationStatement(
    scope,
    'SELECT (SELECT currency FROM gpu_prices WHERE organization_id = $1 LIMIT 1) AS currency',
    [scope.organizationId],
  );
}

/** Zero in the currency's decimals ("0.00"), the cost of an empty set; null without a currency. */
export function zeroAmount(currency: string | null): string | null {
  return currency === null ? null : (0).toFixed(currencyMinorUnits(currency));
}
