import { AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
  initiativeScopeSql,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { shareCuts, splitAtCuts, type UsageWindow } from '../rollups/capacity-usage/usage-window';
import {
  cutsSql,
  gpuHoursSql,
  gpuMicrosecondsSql,
  IDLE_AND_ENERGY_PARTS,
  IDLE_PARTS,
  NO_PARTS,
  partColumns,
  usagePartsSql,
  usageToCutsSql,
} from '../rollups/capacity-usage/capacity-usage.queries';
import {
  idleSharesSql,
  runningAggregateJoinSql,
} from '../rollups/metric-aggregates/metric-aggregates.queries';
import { waitStarts } from '../rollups/workload-periods/period-split';
import { WAIT_FACT_COLUMNS, waitFactsSql, waitFiguresSql } from '../rollups/queue-waits/queue-waits.queries';

export interface CapacityFilters {
  initiativeId: string | null;
  poolId: string | null;
  /** Absent or null: every cluster. */
  clusterId?: string | null;
}

export interface BudgetPeriod {
  start: Date;
  end: Date;
}

/** The budget period with the organization's IANA time zone, whose local days the burn-down counts. */
export interface OrganizationPeriodRow extends BudgetPeriod {
  timezone: string;
  /** The currency of the organization's prices; null while it has none. */
  currency: string | null;
  /** Every instant a price period starts or ends, ascending. */
  price_boundaries: Date[];
  /** The price periods that overlap the budget period (JSON: instants as ISO text, price as decimal text). */
  period_prices: { instance_type: string; from: string; to: string | null; price: string }[];
}

/**
 * What one initiative draws on one pool (pool null: an instance type no pool owns): GPU hours used
 * in the period so far and in the burn window, and GPUs held by its running workloads now.
 */
export interface UsageRow {
  initiative_id: string;
  pool_id: string | null;
  used_gpu_hours: number;
  burn_window_gpu_hours: number;
  active_gpus: number;
  /** GPUs held by its running workloads, in share units (src/common/gpu-sharing.ts). */
  active_share_units: number;
  /** Of the period's use: the part with samples and its busy part (src/common/idle-gpu.ts). */
  sampled_gpu_seconds: number;
  busy_gpu_seconds: number;
  /** Of the period's use: its workloads' energy spread over their GPU-time, µJ. */
  energy_microjoules: number;
}

/** Both windows end at or before the request's `now`; the burn window ends at it. */
export interface UsageWindows {
  period: UsageWindow;
  burn: UsageWindow;
}

export interface AllocationRow {
  initiative_id: string;
  pool_id: string;
  allocated_gpu_hours: number;
}

export interface InitiativeRow {
  initiative_id: string;
  name: string;
}

export interface PoolRow {
  pool_id: string;
  name: string;
  instance_types: string[];
}

/** The placeholders every scoped query below starts with, bound in this order after the organization. */
interface InitiativeParameters {
  params: StatementParameters;
  /** The caller's initiatives (null: all). */
  scope: string;
  /** The initiative filter (null: none). */
  initiative: string;
}

/** InitiativeParameters and then the pool filter (null: none), which all but the initiatives' read take. */
interface CapacityParameters extends InitiativeParameters {
  pool: string;
}

function initiativeParameters(scope: AuthScope, filters: CapacityFilters): InitiativeParameters {
  const params = new StatementParameters(scope);
  const initiativeIds = scopedInitiativeIds(scope);
  return {
    params,
    scope: params.add(initiativeIds === null ? null : [...initiativeIds]),
    initiative: params.add(filters.initiativeId),
  };
}

function capacityParameters(scope: AuthScope, filters: CapacityFilters): CapacityParameters {
  const initiatives = initiativeParameters(scope, filters);
  return { ...initiatives, pool: initiatives.params.add(filters.poolId) };
}

/** Scope and initiative filter on a row source aliased `alias` (constant SQL, never input). */
function scopeAndInitiativeSql(alias: string, bound: InitiativeParameters): string {
  return `${initiativeScopeSql(`${alias}.initiative_id`, bound.scope)}
    AND (${bound.initiative}::text IS NULL OR ${alias}.initiative_id = ${bound.initiative}::text)`;
}

/**
 * scopeAndInitiativeSql with the cluster filter (`cluster`: its placeholder, null for every cluster),
 * for usage rows: the capacity rollups are kept per cluster, as are the workloads.
 */
function usageScopeSql(alias: string, bound: InitiativeParameters, cluster: string): string {
  return `${scopeAndInitiativeSql(alias, bound)}
    AND (${cluster}::text IS NULL OR ${alias}.cluster_id = ${cluster}::text)`;
}

/** Usage rows' pool `p` (a LEFT JOIN: null for a type no pool owns) within the pool filter. */
function poolFilterSql(bound: CapacityParameters): string {
  return `${bound.pool}::text IS NULL OR p.pool_id = ${bound.pool}::text`;
}

/** The budget period and time zone, and the prices' currency and the instants they change. */
export function budgetPeriodQuery(scope: AuthScope): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  return organizationStatement(
    scope,
    `SELECT budget_period_start AS start, budget_period_end AS end, timezone,
            (SELECT currency FROM gpu_prices WHERE organization_id = ${organization} LIMIT 1) AS currency,
            ARRAY(SELECT DISTINCT b.at FROM gpu_prices p
                  CROSS JOIN LATERAL (VALUES (p.effective_from), (p.effective_to)) AS b (at)
                  WHERE p.organization_id = ${organization} AND b.at IS NOT NULL ORDER BY b.at) AS price_boundaries,
            (SELECT coalesce(json_agg(json_build_object('instance_type', p.instance_type,
                      'from', p.effective_from, 'to', p.effective_to, 'price', p.price_per_gpu_hour::text)
                      ORDER BY p.instance_type, p.effective_from), '[]')
             FROM gpu_prices p
             WHERE p.organization_id = ${organization} AND p.effective_from < budget_period_end
               AND (p.effective_to IS NULL OR p.effective_to > budget_period_start)) AS period_prices
     FROM organizations WHERE organization_id = ${organization}`,
    params.values,
  );
}

/**
 * Usage in both windows in one statement (so the running workloads are read once), and of the
 * period's its sampled and busy parts (idle figures): whole UTC days from the daily rollup, each
 * window's edges as signed cuts (usage-window.ts; the period and the burn window usually share
 * `now`), running workloads' accrual up to each window's end.
 */
export function usageByInitiativeAndPoolQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindows,
): ScopedStatement {
  const period = splitAtCuts(windows.period);
  const burn = splitAtCuts(windows.burn);
  const cuts = shareCuts([period, burn]);
  const signsOf = (windowIndex: number) =>
    cuts.instants.map((_, cutIndex) =>
      cuts.uses
        .filter((use) => use.windowIndex === windowIndex && use.cutIndex === cutIndex)
        .reduce((sum, use) => sum + use.sign, 0),
    );
  const bound = capacityParameters(scope, filters);
  const { params } = bound;
  const organization = params.organization;
  const cluster = params.add(filters.clusterId ?? null);
  const inScope = (alias: string) => usageScopeSql(alias, bound, cluster);
  const instants = params.add(cuts.instants);
  const periodSigns = params.add(signsOf(0));
  const burnSigns = params.add(signsOf(1));
  const periodDays = `r.usage_day >= ${params.add(period.fullDaysFrom)}::date AND r.usage_day < ${params.add(period.fullDaysTo)}::date`;
  const burnDays = `r.usage_day >= ${params.add(burn.fullDaysFrom)}::date AND r.usage_day < ${params.add(burn.fullDaysTo)}::date`;
  const periodFrom = params.add(windows.period.from);
  const periodTo = params.add(windows.period.to);
  const burnFrom = params.add(windows.burn.from);
  const burnTo = params.add(windows.burn.to);
  return scopedStatement(
    scope,
    `WITH cuts AS (
       ${cutsSql(instants)}
     ),
     usage AS (
       SELECT r.initiative_id, r.instance_type,
              CASE WHEN ${periodDays}
                   THEN r.gpu_microseconds ELSE 0 END::numeric AS period_us,
              CASE WHEN ${burnDays}
                   THEN r.gpu_microseconds ELSE 0 END::numeric AS burn_us,
              0 AS active_gpus, 0 AS active_share_units,
              CASE WHEN ${periodDays}
                   THEN r.sampled_gpu_microseconds ELSE 0 END::numeric AS period_sampled_us,
              CASE WHEN ${periodDays}
                   THEN r.busy_gpu_microseconds ELSE 0 END::numeric AS period_busy_us,
              CASE WHEN ${periodDays}
                   THEN r.energy_gpu_microseconds ELSE 0 END::numeric AS period_energy
       FROM capacity_usage_daily r
       WHERE r.organization_id = ${organization} AND ${inScope('r')}
         AND ((${periodDays})
              OR (${burnDays}))
       UNION ALL
       SELECT g.initiative_id, g.instance_type, s.period_sign * g.us, s.burn_sign * g.us, 0, 0,
              s.period_sign * g.sampled_us, s.period_sign * g.busy_us, s.period_sign * g.energy_us
       FROM (${usageToCutsSql(IDLE_AND_ENERGY_PARTS, bound.params.organization, inScope)}
       ) g (cut_index, initiative_id, instance_type, us, ${partColumns(IDLE_AND_ENERGY_PARTS).join(', ')})
       JOIN unnest(${periodSigns}::int[], ${burnSigns}::int[]) WITH ORDINALITY AS s (period_sign, burn_sign, ordinal)
         ON s.ordinal - 1 = g.cut_index
       UNION ALL
       SELECT w.initiative_id, w.instance_type, running.period_us,
              w.gpu_share_units * greatest(0, date_part('epoch', ${burnTo}::timestamptz - greatest(w.started_at, ${burnFrom}::timestamptz)) * 1e6)::numeric,
              w.gpu_count, w.gpu_share_units,
              ${usagePartsSql('running.period_us', IDLE_AND_ENERGY_PARTS, burnTo).join(', ')}
       FROM workloads w
       CROSS JOIN LATERAL (
         SELECT w.gpu_share_units * greatest(0, date_part('epoch', ${periodTo}::timestamptz - greatest(w.started_at, ${periodFrom}::timestamptz)) * 1e6)::numeric
           AS period_us
       ) running
       ${runningAggregateJoinSql('w', 'a')}
       WHERE w.organization_id = ${organization} AND w.status = 'running' AND ${inScope('w')}
     ),
     usage_by_type AS (
       SELECT initiative_id, instance_type,
              sum(period_us) AS period_us, sum(burn_us) AS burn_us, sum(active_gpus) AS active_gpus,
              sum(active_share_units) AS active_share_units,
              sum(period_sampled_us) AS period_sampled_us, sum(period_busy_us) AS period_busy_us,
              sum(period_energy) AS period_energy
       FROM usage
       GROUP BY initiative_id, instance_type
     )
     SELECT u.initiative_id, p.pool_id,
            ${gpuHoursSql('sum(u.period_us)')} AS used_gpu_hours,
            ${gpuHoursSql('sum(u.burn_us)')} AS burn_window_gpu_hours,
            sum(u.active_gpus)::integer AS active_gpus,
            sum(u.active_share_units)::float8 AS active_share_units,
            (sum(u.period_sampled_us) / 1e6)::float8 AS sampled_gpu_seconds,
            (sum(u.period_busy_us) / 1e6)::float8 AS busy_gpu_seconds,
            sum(u.period_energy)::float8 AS energy_microjoules
     FROM usage_by_type u
     LEFT JOIN pool_instance_types p ON p.organization_id = ${organization} AND p.instance_type = u.instance_type
     WHERE ${poolFilterSql(bound)}
     GROUP BY u.initiative_id, p.pool_id`,
    params.values,
  );
}

export function allocationsQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  const bound = capacityParameters(scope, filters);
  return scopedStatement(
    scope,
    `SELECT a.initiative_id, a.pool_id, a.allocated_gpu_hours
     FROM allocations a
     WHERE a.organization_id = ${bound.params.organization} AND ${scopeAndInitiativeSql('a', bound)}
       AND (${bound.pool}::text IS NULL OR a.pool_id = ${bound.pool}::text)`,
    bound.params.values,
  );
}

/** Every initiative in scope (only the filtered one with `initiative_id`), ordered by id. */
export function initiativesQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  const bound = initiativeParameters(scope, filters);
  return scopedStatement(
    scope,
    `SELECT i.initiative_id, i.name
     FROM initiatives i
     WHERE i.organization_id = ${bound.params.organization} AND ${scopeAndInitiativeSql('i', bound)}
     ORDER BY i.initiative_id COLLATE "C"`,
    bound.params.values,
  );
}

/** The organization's pools (only the filtered one with `pool_id`) with their instance types. */
export function poolsQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  const params = new StatementParameters(scope);
  const pool = params.add(filters.poolId);
  return organizationStatement(
    scope,
    `SELECT p.pool_id, p.name,
            coalesce(array_agg(t.instance_type ORDER BY t.instance_type COLLATE "C")
                       FILTER (WHERE t.instance_type IS NOT NULL), '{}') AS instance_types
     FROM capacity_pools p
     LEFT JOIN pool_instance_types t ON t.organization_id = p.organization_id AND t.pool_id = p.pool_id
     WHERE p.organization_id = ${params.organization} AND (${pool}::text IS NULL OR p.pool_id = ${pool}::text)
     GROUP BY p.pool_id, p.name`,
    params.values,
  );
}

/** Per pool: what its pending workloads ask for, and how long its workloads waited lately. */
export interface PoolQueueRow {
  pool_id: string;
  /** Share units (src/common/gpu-sharing.ts) asked for by every pending workload in scope. */
  pending_share_units: number;
  /** The 95th percentile of the waits (seconds) of the workloads submitted in the window that started, within 1 % of percentile_cont(0.95). */
  queue_wait_p95_seconds: number | null;
}

/**
 * Pending demand and recent queue wait per pool, by the instance types it owns: every pending
 * workload in scope (through workloads_org_status_submitted: the queue is short) and the merged
 * 'instance_type' wait histograms of the workloads submitted in `window` that started (whole UTC days
 * and hours from their rows, the edges from raw rows), as the statistics read them. A cluster filter
 * narrows both, as it narrows usage.
 */
export function poolQueueQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  window: UsageWindow,
): ScopedStatement {
  const bound = capacityParameters(scope, filters);
  const { params } = bound;
  const cluster = params.add(filters.clusterId ?? null);
  // Valid on histogram rows and workloads alike: the histograms are kept per cluster.
  const where = [
    `organization_id = ${params.organization}`,
    initiativeScopeSql('initiative_id', bound.scope),
    `(${bound.initiative}::text IS NULL OR initiative_id = ${bound.initiative}::text)`,
    `(${cluster}::text IS NULL OR cluster_id = ${cluster}::text)`,
  ];
  const waitFacts = waitFactsSql({
    params,
    where,
    dimension: 'instance_type',
    rollupKey: 'dimension_value',
    rawKey: 'instance_type',
    ...waitStarts([window]),
  }).join('\n UNION ALL ');
  const histogram = `SELECT p.pool_id, wait_bucket, sum(started_count) AS n, sum(wait_seconds_sum) AS total_wait,
        max(wait_seconds_max) AS largest
      FROM (${waitFacts}) AS facts(fact_time, instance_type, ${WAIT_FACT_COLUMNS.join(', ')})
      JOIN pool_instance_types p ON p.organization_id = ${params.organization} AND p.instance_type = facts.instance_type
      WHERE ${poolFilterSql(bound)}
      GROUP BY p.pool_id, wait_bucket`;
  return scopedStatement(
    scope,
    `SELECT pool_id, coalesce(sum(pending_share_units), 0)::float8 AS pending_share_units,
            max(p95_seconds) AS queue_wait_p95_seconds
     FROM (
       SELECT p.pool_id, w.gpu_share_units AS pending_share_units, NULL::float8 AS p95_seconds
       FROM workloads w
       JOIN pool_instance_types p ON p.organization_id = ${params.organization} AND p.instance_type = w.instance_type
       WHERE w.organization_id = ${params.organization} AND ${scopeAndInitiativeSql('w', bound)}
         AND (${cluster}::text IS NULL OR w.cluster_id = ${cluster}::text) AND w.status = 'pending'
         AND (${poolFilterSql(bound)})
       UNION ALL
       SELECT pool_id, NULL, p95_seconds FROM (${waitFiguresSql(histogram, ['pool_id'])}) AS waits
     ) AS parts
     GROUP BY pool_id`,
    params.values,
  );
}

/** GPU hours one initiative drew on one pool inside window `window_index` (pool null: no pool owns the type). */
export interface WindowUsageRow {
  window_index: number;
  initiative_id: string;
  pool_id: string | null;
  used_gpu_hours: number;
}

/**
 * Usage in each of several windows in one statement (the days of a burn-down): every window is cut
 * like the period in usageByInitiativeAndPoolQuery — whole UTC days from the daily rollup, edges as
 * signed cuts, each instant read once for the two local days it separates — and running workloads
 * accrue up to `now` inside each window. Local days of a zone with a whole-hour offset cut on the
 * hour and read no raw rows; other zones read one hour's starts and ends per day.
 * The windows are consecutive and in order (a period's days): a running workload accrues part of
 * the window it started in (found by width_bucket) and every later window whole, so those are summed
 * per start window (a few dozen rows) rather than per workload and window (~60k at 1M). G is summed
 * per cut before each cut's signs are applied, for the same reason.
 */
export function usageByWindowQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindow[],
  now: Date,
): ScopedStatement {
  return windowUsageStatement(
    scope,
    filters,
    windows,
    now,
    false,
    (
      bound,
    ) => `SELECT u.window_index, u.initiative_id, p.pool_id, ${gpuHoursSql('sum(u.us)')} AS used_gpu_hours
     FROM usage u
     LEFT JOIN pool_instance_types p ON p.organization_id = ${bound.params.organization} AND p.instance_type = u.instance_type
     WHERE ${poolFilterSql(bound)}
     GROUP BY u.window_index, u.initiative_id, p.pool_id`,
  );
}

/**
 * What one initiative's use of one pool (pool null: no pool owns the type) cost inside consecutive
 * windows in none of which a price changes (the period so far cut at every price boundary, so a
 * window's price is the one in force at its start): Σ unit-microseconds × price per instance type,
 * exact (numeric text), and the unit-microseconds no price covers. The use is usageByWindowQuery's,
 * read from the same rollups and cut the same way, so it is exactly the GPU-hours answered.
 */
export function costByWindowQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindow[],
  now: Date,
): ScopedStatement {
  return windowUsageStatement(
    scope,
    filters,
    windows,
    now,
    true,
    (bound) => `SELECT u.initiative_id, p.pool_id,
            coalesce(sum(u.us * pr.price_per_gpu_hour), 0)::text AS price_unit_us,
            coalesce(sum((u.sampled_us - u.busy_us) * pr.price_per_gpu_hour), 0)::text AS idle_price_unit_us,
            coalesce(sum(u.us) FILTER (WHERE pr.price_per_gpu_hour IS NULL), 0)::float8 AS unpriced_unit_us
     FROM usage u
     JOIN windows x ON x.ordinal - 1 = u.window_index
     LEFT JOIN gpu_prices pr ON pr.organization_id = ${bound.params.organization} AND pr.instance_type = u.instance_type
       AND pr.effective_from <= x.window_from AND (pr.effective_to IS NULL OR pr.effective_to > x.window_from)
     LEFT JOIN pool_instance_types p ON p.organization_id = ${bound.params.organization} AND p.instance_type = u.instance_type
     WHERE ${poolFilterSql(bound)}
     GROUP BY u.initiative_id, p.pool_id`,
  );
}

/** What one initiative's use of one pool cost (costByWindowQuery). */
export interface CostRow {
  initiative_id: string;
  pool_id: string | null;
  /** Σ share-unit-microseconds × price: numeric text, exact. */
  price_unit_us: string;
  /** Σ idle share-unit-microseconds × price (sampled − busy parts, src/common/idle-gpu.ts): numeric text, exact. */
  idle_price_unit_us: string;
  unpriced_unit_us: number;
}

/**
 * The usage CTEs of usageByWindowQuery, finished by `select` (over `usage` and `windows`, with the
 * statement's parameters bound so far). With
 * `idle`, each usage row also carries its sampled and busy parts (`sampled_us`, `busy_us`): the
 * rollups' own for whole days and hourly buckets, the rollups' functions on each raw and running part.
 */
function windowUsageStatement(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindow[],
  now: Date,
  idle: boolean,
  select: (bound: CapacityParameters) => string,
): ScopedStatement {
  const splits = windows.map(splitAtCuts);
  const whole = splits
    .map((split, index) => ({ index, from: split.fullDaysFrom, to: split.fullDaysTo }))
    .filter((range) => range.from < range.to);
  const cuts = shareCuts(splits);
  const bound = capacityParameters(scope, filters);
  const { params } = bound;
  const organization = params.organization;
  const cluster = params.add(filters.clusterId ?? null);
  const inScope = (alias: string) => usageScopeSql(alias, bound, cluster);
  const instants = params.add(cuts.instants);
  const uses = [
    `${params.add(cuts.uses.map((use) => use.windowIndex))}::int[]`,
    `${params.add(cuts.uses.map((use) => use.cutIndex))}::int[]`,
    `${params.add(cuts.uses.map((use) => use.sign))}::int[]`,
  ];
  const wholeDays = [
    `${params.add(whole.map((range) => range.index))}::int[]`,
    `${params.add(whole.map((range) => range.from))}::date[]`,
    `${params.add(whole.map((range) => range.to))}::date[]`,
  ];
  const froms = params.add(windows.map((window) => window.from));
  const tos = params.add(windows.map((window) => window.to));
  const clock = params.add(now);
  return scopedStatement(
    scope,
    `WITH cuts AS (
       ${cutsSql(instants)}
     ),
     windows AS (
       SELECT * FROM unnest(${froms}::timestamptz[], ${tos}::timestamptz[]) WITH ORDINALITY AS x (window_from, window_to, ordinal)
     ),
     running AS (
       SELECT w.organization_id, w.workload_id, w.initiative_id, w.instance_type, w.gpu_share_units, w.started_at,
              width_bucket(w.started_at, ${froms}::timestamptz[]) AS start_window
       FROM workloads w
       WHERE w.organization_id = ${organization} AND w.status = 'running' AND ${inScope('w')}
     ),
     usage AS (
       SELECT f.window_index, r.initiative_id, r.instance_type, r.gpu_microseconds::numeric AS us${
         idle ? ', r.sampled_gpu_microseconds::numeric AS sampled_us, r.busy_gpu_microseconds AS busy_us' : ''
       }
       FROM unnest(${wholeDays.join(', ')}) AS f (window_index, from_day, to_day)
       JOIN capacity_usage_daily r ON r.organization_id = ${organization}
         AND r.usage_day >= f.from_day AND r.usage_day < f.to_day
       WHERE ${inScope('r')}
       UNION ALL
       SELECT s.window_index, g.initiative_id, g.instance_type, s.sign * g.us${
         idle ? ', s.sign * g.sampled_us, s.sign * g.busy_us' : ''
       }
       FROM (
         SELECT g.cut_index, g.initiative_id, g.instance_type, sum(g.us) AS us${
           idle ? ', sum(g.sampled_us) AS sampled_us, sum(g.busy_us) AS busy_us' : ''
         }
         FROM (${usageToCutsSql(idle ? IDLE_PARTS : NO_PARTS, bound.params.organization, inScope)}
         ) g (cut_index, initiative_id, instance_type, us${idle ? ', sampled_us, busy_us' : ''})
         GROUP BY g.cut_index, g.initiative_id, g.instance_type
       ) g
       JOIN unnest(${uses.join(', ')}) AS s (window_index, cut_index, sign)
         ON s.cut_index = g.cut_index
       UNION ALL
       ${idle ? runningIdleUsageSql(clock) : runningUsageSql(clock)}
     )
     ${select(bound)}`,
    params.values,
  );
}

/**
 * Running workloads' use per window up to now (`now`, a placeholder): part of the window each started
 * in, and every later window whole, summed per start window (a few dozen rows) rather than per
 * workload and window.
 */
function runningUsageSql(now: string): string {
  const end = `least(${now}::timestamptz, x.window_to)`;
  return `SELECT (x.ordinal - 1)::int, r.initiative_id, r.instance_type,
              ${gpuMicrosecondsSql('r.gpu_share_units', 'r.started_at', end)}
       FROM running r
       JOIN windows x ON x.ordinal = r.start_window AND r.started_at < ${end}
       UNION ALL
       SELECT (x.ordinal - 1)::int, r.initiative_id, r.instance_type,
              ${gpuMicrosecondsSql('r.gpus', 'x.window_from', end)}
       FROM (
         SELECT initiative_id, instance_type, start_window, sum(gpu_share_units) AS gpus
         FROM running GROUP BY initiative_id, instance_type, start_window
       ) r
       JOIN windows x ON x.ordinal > r.start_window`;
}

/**
 * runningUsageSql with idle parts: one row per running workload and window it ran in (the windows
 * are the few price periods of the period so far), each part split by the workload's own average.
 */
function runningIdleUsageSql(now: string): string {
  const end = `least(${now}::timestamptz, x.window_to)`;
  const us = gpuMicrosecondsSql('r.gpu_share_units', 'greatest(r.started_at, x.window_from)', end);
  return `SELECT (x.ordinal - 1)::int, r.initiative_id, r.instance_type, part.us,
              ${idleSharesSql('part.us', 'a').join(', ')}
       FROM running r
       JOIN windows x ON x.ordinal >= r.start_window
         AND greatest(r.started_at, x.window_from) < ${end}
       CROSS JOIN LATERAL (SELECT ${us} AS us) AS part
       ${runningAggregateJoinSql('r', 'a')}`;
}
