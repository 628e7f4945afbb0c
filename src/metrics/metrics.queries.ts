import { type AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import { GPU_SHARE_COLUMNS, GPU_SHARE_UNITS, type GpuShareColumns } from '../common/gpu-sharing';
import {
  energyKwhSql,
  runningAggregateJoinSql,
} from '../rollups/metric-aggregates/metric-aggregates.queries';
import {
  averageTotalsSql,
  gpuSecondsTotalsSql,
  idleGpuHoursTotalsSql,
} from '../rollups/ranked-totals/ranked-totals.queries';
import { runCostLateralSql, workloadCostSql } from '../common/cost';
import { UNIT_MICROSECONDS_PER_GPU_HOUR } from '../common/money';
import {
  preparedStatement,
  type ScopedStatement,
  scopedStatement,
  initiativeScopeSql,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { WORKLOAD_STATUSES, type WorkloadStatus } from '../core/workload-status';
import { SAMPLE_METRICS, type SampleMetric, type SortOrder } from './metric-names';

/** UTC text with microseconds: window bounds go back to PostgreSQL without losing precision. */
const UTC_MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

export interface WorkloadWindow {
  /** The workload's share in units (src/common/gpu-sharing.ts): gpu_usage scales by it. */
  gpu_share_units: number;
  /** null for job_lifetime of a workload that never started: the window is empty. */
  window_start: string | null;
  window_end: string;
}

/**
 * The workload (within the caller's scope; out of scope reads exactly like unknown) and its window:
 * ending at completed_at when finished, `now` otherwise; reaching back `windowSeconds`, or to
 * started_at when `windowSeconds` is null (job_lifetime).
 */
export function workloadWindowQuery(
  scope: AuthScope,
  workloadId: string,
  windowSeconds: number | null,
  now: Date,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const workload = params.add(workloadId);
  const initiatives = params.add(scopedInitiativeIds(scope));
  const end = params.add(now);
  const seconds = params.add(windowSeconds);
  return preparedStatement(
    scopedStatement(
      scope,
      `SELECT w.gpu_share_units,
            to_char(b.window_start AT TIME ZONE 'UTC', ${UTC_MICROS}) AS window_start,
            to_char(e.window_end AT TIME ZONE 'UTC', ${UTC_MICROS}) AS window_end
     FROM workloads w
     CROSS JOIN LATERAL (SELECT coalesce(w.completed_at, ${end}::timestamptz) AS window_end) e
     CROSS JOIN LATERAL (
       SELECT CASE WHEN ${seconds}::float8 IS NULL THEN w.started_at
                   ELSE e.window_end - make_interval(secs => ${seconds}::float8) END AS window_start
     ) b
     WHERE w.organization_id = ${params.organization} AND w.workload_id = ${workload}
       AND ${initiativeScopeSql('w.initiative_id', initiatives)}`,
      params.values,
    ),
  );
}

export type WindowStats = { sample_count: number } & Record<
  `${SampleMetric}_${'avg' | 'min' | 'max' | 'current'}`,
  number | null
>;

/**
 * The parameters of a read of one workload's window: the workload, the window's bounds and the
 * caller's initiatives (null for an organization admin, so the text is the same for every caller).
 */
interface WindowParameters {
  params: StatementParameters;
  workload: string;
  start: string;
  end: string;
  initiatives: string;
}

function windowParameters(
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
): WindowParameters {
  const params = new StatementParameters(scope);
  return {
    params,
    workload: params.add(workloadId),
    start: params.add(windowStart),
    end: params.add(windowEnd),
    initiatives: params.add(scopedInitiativeIds(scope)),
  };
}

/** The window's samples from both sample stores (gpucap_workload_samples). */
function windowSamplesSql(window: WindowParameters): string {
  return `gpucap_workload_samples(${window.params.organization}, ${window.workload}, ${window.start}::timestamptz, ${window.end}::timestamptz)`;
}

/** The workload is re-checked in scope by every statement: a writer may have moved it since. */
function workloadInScopeSql(window: WindowParameters): string {
  return `EXISTS (
    SELECT 1 FROM workloads w
    WHERE w.organization_id = ${window.params.organization} AND w.workload_id = ${window.workload}
      AND ${initiativeScopeSql('w.initiative_id', window.initiatives)})`;
}

/**
 * Statistics of one workload's samples in [start, end], both ends included, summed in time order
 * (gpucap_window_readings_in_order: whole sealed hours without decoding their times, the other
 * readings of both stores by time): what the service reads when the hour summaries leave an
 * average open.
 */
export function windowStatsQuery(
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
): ScopedStatement {
  const window = windowParameters(scope, workloadId, windowStart, windowEnd);
  return preparedStatement(
    scopedStatement(
      scope,
      `
  SELECT agg.sample_count, ${SAMPLE_METRICS.map((m) => `agg.${m}_avg, agg.${m}_min, agg.${m}_max, agg.${m}_current`).join(',\n         ')}
  FROM (
    -- The readings arrive in time order, so the last one aggregated is the current one.
    SELECT count(*)::int AS sample_count,
           ${SAMPLE_METRICS.map((m) => `avg(${m}) AS ${m}_avg, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max, (array_agg(${m}))[count(*)] AS ${m}_current`).join(',\n           ')}
    FROM gpucap_window_readings_in_order(${window.params.organization}, ${window.workload}, ${window.start}::timestamptz, ${window.end}::timestamptz)
  ) agg
  -- The workload was found in scope by an earlier statement; a writer may have moved it since.
  JOIN workloads w ON w.organization_id = ${window.params.organization} AND w.workload_id = ${window.workload}
                  AND ${initiativeScopeSql('w.initiative_id', window.initiatives)}`,
      window.params.values,
    ),
  );
}

export type HourWindowStats = { sample_count: number } & Record<
  `${SampleMetric}_${'sum' | 'min' | 'max' | 'current'}`,
  number | null
>;

/**
 * Sums (float8, in no particular order), extremes, count and latest readings of one workload's
 * samples in [start, end], both ends included (gpucap_window_hour_stats): the sealed hours wholly
 * inside the window from their summaries (metric_sample_hours), the readings of its other sealed
 * hours decoded from their slices of the day blocks, and the open rows. The service bounds each
 * average from these sums and reads windowStatsQuery when a bound leaves the answered figure open
 * (window-averages.ts).
 */
export function windowHourStatsQuery(
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
): ScopedStatement {
  const window = windowParameters(scope, workloadId, windowStart, windowEnd);
  return preparedStatement(
    scopedStatement(
      scope,
      `
  SELECT s.*
  FROM gpucap_window_hour_stats(${window.params.organization}, ${window.workload}, ${window.start}::timestamptz, ${window.end}::timestamptz) s
  -- The workload was found in scope by an earlier statement; a writer may have moved it since.
  JOIN workloads w ON w.organization_id = ${window.params.organization} AND w.workload_id = ${window.workload}
                  AND ${initiativeScopeSql('w.initiative_id', window.initiatives)}`,
      window.params.values,
    ),
  );
}

export type SeriesRow = { bucket_start: string; sample_count: number } & Record<
  `${SampleMetric}_${'avg' | 'min' | 'max'}`,
  number | null
>;

/**
 * One row per step bucket of [start, end] (both ends included), empty buckets too, each the
 * statistics of its samples; buckets are aligned to multiples of the step since the Unix epoch.
 * No row at all when the workload has left the caller's scope.
 */
export function seriesQuery(
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
  stepSeconds: number,
): ScopedStatement {
  const window = windowParameters(scope, workloadId, windowStart, windowEnd);
  const step = window.params.add(`${stepSeconds} seconds`);
  return preparedStatement(
    scopedStatement(
      scope,
      `
  WITH per_bucket AS (
    SELECT date_bin(${step}::interval, sampled_at, timestamptz 'epoch') AS bucket_start,
           count(*)::int AS sample_count,
           ${SAMPLE_METRICS.map((m) => `avg(${m}) AS ${m}_avg, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max`).join(',\n           ')}
    FROM ${windowSamplesSql(window)}
    GROUP BY 1
  )
  SELECT to_char(b.bucket_start AT TIME ZONE 'UTC', ${UTC_MICROS}) AS bucket_start,
         coalesce(p.sample_count, 0) AS sample_count,
         ${SAMPLE_METRICS.map((m) => `p.${m}_avg, p.${m}_min, p.${m}_max`).join(',\n         ')}
  FROM generate_series(date_bin(${step}::interval, ${window.start}::timestamptz, timestamptz 'epoch'),
                       date_bin(${step}::interval, ${window.end}::timestamptz, timestamptz 'epoch'),
                       ${step}::interval) AS b (bucket_start)
  LEFT JOIN per_bucket p USING (bucket_start)
  WHERE ${workloadInScopeSql(window)}
  ORDER BY b.bucket_start`,
      window.params.values,
    ),
  );
}

export type WindowPercentiles = { in_scope: boolean } & Record<
  `${SampleMetric}_${'p50' | 'p95'}`,
  number | null
>;

/**
 * Continuous percentiles (linear interpolation) of each metric over the window's samples, which do
 * not depend on the readings' order: whole sealed hours are read without decoding their times
 * (gpucap_window_readings).
 */
export function windowPercentilesQuery(
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
): ScopedStatement {
  const window = windowParameters(scope, workloadId, windowStart, windowEnd);
  return preparedStatement(
    scopedStatement(
      scope,
      `
  SELECT ${SAMPLE_METRICS.map(
    (m) =>
      `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${m}) AS ${m}_p50, ` +
      `percentile_cont(0.95) WITHIN GROUP (ORDER BY ${m}) AS ${m}_p95`,
  ).join(',\n         ')},
         ${workloadInScopeSql(window)} AS in_scope
  FROM gpucap_window_readings(${window.params.organization}, ${window.workload}, ${window.start}::timestamptz, ${window.end}::timestamptz)`,
      window.params.values,
    ),
  );
}

export interface RankedFilters {
  initiativeId?: string;
  clusterId?: string;
  status?: WorkloadStatus;
  order: SortOrder;
  limit: number;
}

export interface RankedRow extends GpuShareColumns {
  gpu_count: number;
  /** null (with the other page columns) in the one row returned when nothing is ranked. */
  workload_id: string | null;
  name: string;
  initiative_id: string;
  avg_value: number;
  current_value: number;
  total_count: number;
  scope_average: number;
}

/**
 * GPU-seconds (in share units: src/common/gpu-sharing.ts) of a workload that is not running, written
 * exactly as the ranked expression indexes on workloads (docs/sql/schema.sql) so the planner reads
 * them; `w` is workloads.
 */
const SETTLED_GPU_SECONDS = `(w.gpu_share_units * greatest(0, floor(date_part('epoch', w.completed_at - w.started_at))))`;

/** The same figure for a running workload up to `now` (a placeholder). */
function runningGpuSecondsSql(now: string): string {
  return `w.gpu_share_units * greatest(0, floor(date_part('epoch', ${now}::timestamptz - w.started_at)))`;
}
/** Share-unit GPU-seconds as GPU-hours: the units first, exact for whole GPUs. */
const UNIT_SECONDS_TO_HOURS = `/ ${GPU_SHARE_UNITS} / 3600`;
/** The workload's share, for the page (as `w` or the candidates that carry it). */
const SHARE_COLUMNS = `gpu_count, ${GPU_SHARE_COLUMNS}`;
const prefixed = (alias: string, columns: string) =>
  columns
    .split(',')
    .map((column) => `${alias}.${column.trim()}`)
    .join(', ');

/** The placeholders every ranking starts with, bound in this order. */
interface RankedParameters {
  params: StatementParameters;
  /** The caller's initiatives (null: all). */
  scope: string;
  /** The initiatives read branch by branch: the filter's one, else the caller's (null: the whole organization at once). */
  branches: string;
  /** The statuses read from the indexes. */
  statuses: string;
  limit: string;
}

function rankedParameters(
  scope: AuthScope,
  filters: RankedFilters,
  statuses: readonly string[],
): RankedParameters {
  const params = new StatementParameters(scope);
  const scopeIds = scopedInitiativeIds(scope);
  return {
    params,
    scope: params.add(scopeIds),
    branches: params.add(filters.initiativeId !== undefined ? [filters.initiativeId] : scopeIds),
    statuses: params.add(statuses),
    limit: params.add(filters.limit),
  };
}

/** The caller's scope and the branches' initiatives, on a table aliased `alias`. */
function rankedScopeSql(alias: string, ranked: RankedParameters): string {
  return `${initiativeScopeSql(`${alias}.initiative_id`, ranked.scope)}
       AND (${ranked.branches}::text[] IS NULL OR ${alias}.initiative_id = ANY (${ranked.branches}::text[]))`;
}

/**
 * rankedScopeSql with the cluster filter, for sources that carry cluster_id (workloads, the status
 * totals, which are kept per cluster); its placeholder is bound here.
 */
function clusterScope(ranked: RankedParameters, filters: RankedFilters): (alias: string) => string {
  const cluster = ranked.params.add(filters.clusterId ?? null);
  return (alias) =>
    `${rankedScopeSql(alias, ranked)} AND (${cluster}::text IS NULL OR ${alias}.cluster_id = ${cluster}::text)`;
}

interface BranchSource {
  /** FROM item, e.g. `workloads w`. */
  from: string;
  /** Rows of one branch `b` (status, and initiative when read per initiative). */
  where: (perInitiative: boolean) => string;
  value: string;
  workloadId: string;
  columns: string;
}

/** The settled workloads of a branch, ranked by `value` (an expression an index orders by). */
function workloadBranches(
  organization: string,
  inScope: (alias: string) => string,
  value: string,
  predicate = '',
): BranchSource {
  return {
    from: 'workloads w',
    where: (byInitiative) => `w.organization_id = ${organization} AND w.status = b.status ${predicate}
        ${byInitiative ? 'AND w.initiative_id = i.initiative_id' : ''}
        AND ${inScope('w')}`,
    value,
    workloadId: 'w.workload_id',
    columns: `w.workload_id, w.name, w.initiative_id, ${prefixed('w', SHARE_COLUMNS)}`,
  };
}

/**
 * The first `limit` rows (value in `order`, workload_id ascending) of every branch (status, or
 * status × initiative), each read from an index range in index order. An ascending index read
 * backwards yields ties by workload_id descending, so a descending branch is read as the rows
 * strictly above its limit-th value plus that value's rows by id ascending: at most 2 × limit rows.
 */
function topPerBranchSql(
  source: BranchSource,
  order: SortOrder,
  perInitiative: boolean,
  ranked: RankedParameters,
): string {
  const statuses = `unnest(${ranked.statuses}::text[]) AS b(status)`;
  const branches = perInitiative
    ? `${statuses} CROSS JOIN unnest(${ranked.branches}::text[]) AS i(initiative_id)`
    : statuses;
  const limit = ranked.limit;
  const where = source.where(perInitiative);
  const id = `${source.workloadId} COLLATE "C"`;
  const select = `SELECT ${source.columns}, ${source.value} AS sort_value FROM ${source.from}`;
  if (order === 'asc') {
    return `
      SELECT c.* FROM ${branches}
      CROSS JOIN LATERAL (${select} WHERE ${where} ORDER BY ${source.value}, ${id} LIMIT ${limit}) c`;
  }
  return `
      SELECT c.* FROM ${branches}
      CROSS JOIN LATERAL (
        SELECT min(top.v) AS threshold FROM (
          SELECT ${source.value} AS v FROM ${source.from} WHERE ${where}
          ORDER BY ${source.value} DESC, ${id} DESC LIMIT ${limit}
        ) top
      ) th
      CROSS JOIN LATERAL (
        (${select} WHERE ${where} AND ${source.value} > th.threshold ORDER BY ${source.value} DESC, ${id} DESC LIMIT ${limit})
        UNION ALL
        (${select} WHERE ${where} AND ${source.value} = th.threshold ORDER BY ${id} LIMIT ${limit})
      ) c`;
}

/**
 * The page (candidates sorted, ties by workload_id ascending whatever the order) beside the totals;
 * with nothing ranked the one row carries the zero count and a null page.
 */
function pageWithTotalsSql(
  candidates: string,
  totals: string,
  order: SortOrder,
  pageColumns: string,
  pageFrom: string,
  limit: string,
): string {
  const direction = order === 'asc' ? 'ASC' : 'DESC';
  return `
    SELECT page.workload_id, page.name, page.initiative_id, page.avg_value, page.current_value,
           ${prefixed('page', SHARE_COLUMNS)}, totals.total_count, totals.scope_average
    FROM (${totals}) totals
    LEFT JOIN LATERAL (
      SELECT ${pageColumns}
      FROM (
        SELECT * FROM (${candidates}) candidates
        ORDER BY avg_value ${direction}, workload_id COLLATE "C" ASC
        LIMIT ${limit}
      ) p
      ${pageFrom}
      ORDER BY p.avg_value ${direction}, p.workload_id COLLATE "C" ASC
    ) page ON true`;
}

/** Whether the branches are read per initiative (a MEMBER, or an initiative filter). */
function perInitiative(scope: AuthScope, filters: RankedFilters): boolean {
  return filters.initiativeId !== undefined || scopedInitiativeIds(scope) !== null;
}

/**
 * Ranked by the lifetime average kept in metric_aggregates, which also carries the workload's
 * initiative and status: the page is top-N index ranges per status (and initiative); the totals sum
 * the per (initiative, status) rows of src/rollups/ranked-totals/, so no part of the answer grows
 * with the workloads in scope; only the page's names
 * are read from workloads. A null initiative marks aggregates without a workload, left out as before.
 * `metric` comes from a fixed list, never from input text.
 */
export function rankedBySampleMetricQuery(
  scope: AuthScope,
  metric: Exclude<SampleMetric, 'temperature'>,
  filters: RankedFilters,
): ScopedStatement {
  const statuses = filters.status !== undefined ? [filters.status] : WORKLOAD_STATUSES;
  const ranked = rankedParameters(scope, filters, statuses);
  const organization = ranked.params.organization;
  const candidates = topPerBranchSql(
    {
      from: 'metric_aggregates a',
      where: (byInitiative) => `a.organization_id = ${organization} AND a.status = b.status
        AND a.sample_count > 0 AND a.initiative_id IS NOT NULL
        ${byInitiative ? 'AND a.initiative_id = i.initiative_id' : ''}
        AND ${rankedScopeSql('a', ranked)}`,
      value: `a.${metric}_avg`,
      workloadId: 'a.workload_id',
      columns: `a.workload_id, a.initiative_id, a.${metric}_latest AS current_value`,
    },
    filters.order,
    perInitiative(scope, filters),
    ranked,
  );
  const totals = averageTotalsSql(metric, organization, ranked.statuses, (alias) =>
    rankedScopeSql(alias, ranked),
  );
  const sql = pageWithTotalsSql(
    `SELECT workload_id, initiative_id, sort_value AS avg_value, current_value FROM (${candidates}) c`,
    totals,
    filters.order,
    `p.workload_id, w.name, p.initiative_id, p.avg_value, p.current_value, ${prefixed('w', SHARE_COLUMNS)}`,
    // Re-checked against the workload itself, not only the initiative copied into its aggregate.
    `JOIN workloads w ON w.organization_id = ${organization} AND w.workload_id = p.workload_id
       AND w.initiative_id = p.initiative_id AND ${rankedScopeSql('w', ranked)}`,
    ranked.limit,
  );
  return scopedStatement(scope, sql, ranked.params.values);
}

/**
 * Ranked by gpu_hours_used = gpu_count × whole seconds run / 3600 (never-started ones 0): every
 * workload in scope that matches the filters. Settled workloads (all but running) come from the
 * GPU-seconds expression indexes, top-N per status (and initiative); running ones (few, partial index)
 * are computed up to `now`. total_count and the mean come from workload_status_totals plus the
 * running ones, never from the workloads in scope one by one. A cluster filter reads the same indexes
 * filtered by cluster, and the totals kept per cluster.
 */
export function rankedByGpuHoursQuery(scope: AuthScope, filters: RankedFilters, now: Date): ScopedStatement {
  const statuses = filters.status !== undefined ? [filters.status] : WORKLOAD_STATUSES;
  const settled = statuses.filter((status) => status !== 'running');
  const ranked = rankedParameters(scope, filters, settled);
  const organization = ranked.params.organization;
  const clock = ranked.params.add(now);
  const readsRunning = ranked.params.add(statuses.includes('running'));
  const inScope = clusterScope(ranked, filters);
  const settledCandidates = topPerBranchSql(
    workloadBranches(organization, inScope, SETTLED_GPU_SECONDS),
    filters.order,
    perInitiative(scope, filters),
    ranked,
  );
  const running = `
    SELECT w.workload_id, w.name, w.initiative_id, ${prefixed('w', SHARE_COLUMNS)}, ${runningGpuSecondsSql(clock)} ${UNIT_SECONDS_TO_HOURS} AS gpu_hours
    FROM workloads w
    WHERE ${readsRunning} AND w.organization_id = ${organization} AND w.status = 'running' AND ${inScope('w')}`;
  const candidates = `
    SELECT workload_id, name, initiative_id, ${SHARE_COLUMNS},
           sort_value ${UNIT_SECONDS_TO_HOURS} AS avg_value, sort_value ${UNIT_SECONDS_TO_HOURS} AS current_value
    FROM (${settledCandidates}) s
    UNION ALL
    SELECT workload_id, name, initiative_id, ${SHARE_COLUMNS}, gpu_hours, gpu_hours FROM (${running}) r`;
  const totals = `
    SELECT (s.workload_count + r.workload_count)::int AS total_count,
           (s.gpu_seconds_sum::float8 ${UNIT_SECONDS_TO_HOURS} + r.gpu_hours_sum) / nullif(s.workload_count + r.workload_count, 0)
             AS scope_average
    FROM (${gpuSecondsTotalsSql(organization, ranked.statuses, inScope)}) s
    CROSS JOIN (SELECT count(*) AS workload_count, coalesce(sum(gpu_hours), 0) AS gpu_hours_sum FROM (${running}) r) r`;
  const sql = pageWithTotalsSql(candidates, totals, filters.order, 'p.*', '', ranked.limit);
  return scopedStatement(scope, sql, ranked.params.values);
}

/**
 * Idle GPU-hours of `gpuSeconds` at lifetime average utilization `utilization`: one SQL function
 * (metric-aggregates.definitions.ts) shared with the expression indexes and the totals triggers, so the
 * value an index orders by, the value answered and the value summed are the same float8.
 */
function idleGpuHoursSql(gpuSeconds: string, utilization: string): string {
  return `gpucap_idle_gpu_hours(${gpuSeconds}, ${utilization})`;
}

/**
 * Ranked by idle GPU-hours = gpu_hours_used × (1 − lifetime average utilization / 100), over the
 * workloads with samples. Settled workloads (all but running) come from expression indexes on
 * metric_aggregates over the GPU-seconds copied from their workload, top-N
 * per status (and initiative) like the other sort keys; running ones (few, partial index) are
 * computed up to `now` from their aggregate. total_count and the mean come from the idle sums of
 * metric_ranked_totals plus the running ones, never from the sampled workloads in scope one by one.
 */
export function rankedByIdleGpuHoursQuery(
  scope: AuthScope,
  filters: RankedFilters,
  now: Date,
): ScopedStatement {
  const statuses = filters.status !== undefined ? [filters.status] : WORKLOAD_STATUSES;
  const settled = statuses.filter((status) => status !== 'running');
  const ranked = rankedParameters(scope, filters, settled);
  const organization = ranked.params.organization;
  const clock = ranked.params.add(now);
  const readsRunning = ranked.params.add(statuses.includes('running'));
  const settledCandidates = topPerBranchSql(
    {
      from: 'metric_aggregates a',
      // The predicate of the indexes, repeated so the planner can use them.
      where: (byInitiative) => `a.organization_id = ${organization} AND a.status = b.status
        AND a.sample_count > 0 AND a.initiative_id IS NOT NULL AND a.settled_gpu_seconds IS NOT NULL
        ${byInitiative ? 'AND a.initiative_id = i.initiative_id' : ''}
        AND ${rankedScopeSql('a', ranked)}`,
      value: idleGpuHoursSql('a.settled_gpu_seconds', 'a.gpu_utilization_avg'),
      workloadId: 'a.workload_id',
      columns: 'a.workload_id, a.initiative_id',
    },
    filters.order,
    perInitiative(scope, filters),
    ranked,
  );
  // The stored average, as the settled rows' index uses: the same float8 wherever it is read.
  const running = `
    SELECT w.workload_id, w.initiative_id,
           ${idleGpuHoursSql(runningGpuSecondsSql(clock), 'a.gpu_utilization_avg')} AS idle_gpu_hours
    FROM workloads w
    ${runningAggregateJoinSql('w', 'a')}
    WHERE ${readsRunning} AND w.organization_id = ${organization} AND w.status = 'running' AND a.sample_count > 0
      AND ${rankedScopeSql('w', ranked)}`;
  const candidates = `
    SELECT workload_id, initiative_id, sort_value AS avg_value, sort_value AS current_value
    FROM (${settledCandidates}) s
    UNION ALL
    SELECT workload_id, initiative_id, idle_gpu_hours, idle_gpu_hours FROM running`;
  // Numeric sums, as the rollup's: each value converts to the same numeric wherever it is summed.
  const totals = `
    SELECT (s.workload_count + r.workload_count)::int AS total_count,
           ((s.idle_sum + r.idle_sum) / nullif(s.workload_count + r.workload_count, 0))::float8 AS scope_average
    FROM (${idleGpuHoursTotalsSql(organization, ranked.statuses, (alias) => rankedScopeSql(alias, ranked))}) s
    CROSS JOIN (
      SELECT count(*) AS workload_count, coalesce(sum(idle_gpu_hours::numeric), 0) AS idle_sum FROM running
    ) r`;
  // Read once for the page and the totals.
  const sql = `WITH running AS MATERIALIZED (${running})
    ${pageWithTotalsSql(
      candidates,
      totals,
      filters.order,
      `p.workload_id, w.name, p.initiative_id, p.avg_value, p.current_value, ${prefixed('w', SHARE_COLUMNS)}`,
      // Re-checked against the workload itself, not only the initiative copied into its aggregate.
      `JOIN workloads w ON w.organization_id = ${organization} AND w.workload_id = p.workload_id
       AND w.initiative_id = p.initiative_id AND ${rankedScopeSql('w', ranked)}`,
      ranked.limit,
    )}`;
  return scopedStatement(scope, sql, ranked.params.values);
}

/** What a ranked read orders by: a lifetime sample average, GPU-hours, or idle GPU-hours. */
export type RankedValue = Exclude<SampleMetric, 'temperature'> | 'gpu_hours' | 'idle_gpu_hours';

/**
 * The ranking within one cluster by a sample figure. Their indexes and totals live on
 * metric_aggregates, which has no cluster copy, so the cluster's workloads in scope are read and
 * ranked as one set: a scan of them, not top-N index ranges (GPU-hours and cost read their indexes
 * filtered by cluster). Values are the same expressions as the indexed reads'; the mean is a numeric average.
 */
export function rankedInClusterQuery(
  scope: AuthScope,
  value: Exclude<RankedValue, 'gpu_hours'>,
  filters: RankedFilters & { clusterId: string },
  now: Date,
): ScopedStatement {
  const statuses = filters.status !== undefined ? [filters.status] : WORKLOAD_STATUSES;
  const ranked = rankedParameters(scope, filters, statuses);
  const organization = ranked.params.organization;
  const clock = ranked.params.add(now);
  const cluster = ranked.params.add(filters.clusterId);
  // A cumulative figure: the running ones' up to now, the settled ones' as stored.
  const cumulative = (settled: string) =>
    `CASE WHEN w.status = 'running' THEN ${runningGpuSecondsSql(clock)} ELSE ${settled} END`;
  const sampleAverage = (metric: string) => ({
    avg: `a.${metric}_avg`,
    current: `a.${metric}_latest`,
    sampled: true,
    readsClock: false,
  });
  const figures: Record<
    Exclude<RankedValue, 'gpu_hours'>,
    { avg: string; current?: string; sampled: boolean; readsClock: boolean }
  > = {
    gpu_utilization: sampleAverage('gpu_utilization'),
    memory_utilization: sampleAverage('memory_utilization'),
    power_usage: sampleAverage('power_usage'),
    idle_gpu_hours: {
      avg: idleGpuHoursSql(cumulative('a.settled_gpu_seconds::float8'), 'a.gpu_utilization_avg'),
      sampled: true,
      readsClock: true,
    },
  };
  const figure = figures[value];
  // The sample averages do not read the clock: it is still typed so the statement's parameters stay one list.
  const clockTyped = figure.readsClock ? '' : `AND ${clock}::timestamptz IS NOT NULL`;
  const direction = filters.order === 'asc' ? 'ASC' : 'DESC';
  const sql = `WITH ranked AS MATERIALIZED (
      SELECT w.workload_id, w.name, w.initiative_id, ${prefixed('w', SHARE_COLUMNS)},
             v.avg_value, ${figure.current ?? 'v.avg_value'} AS current_value
      FROM workloads w
      ${figure.sampled ? 'JOIN' : 'LEFT JOIN'} metric_aggregates a
        ON a.organization_id = w.organization_id AND a.workload_id = w.workload_id
      CROSS JOIN LATERAL (SELECT ${figure.avg} AS avg_value) v
      WHERE w.organization_id = ${organization} AND w.cluster_id = ${cluster} AND w.status = ANY (${ranked.statuses}::text[])
        AND ${rankedScopeSql('w', ranked)} ${figure.sampled ? 'AND a.sample_count > 0' : ''} ${clockTyped}
    )
    SELECT page.*, totals.total_count, totals.scope_average
    FROM (SELECT count(*)::int AS total_count, avg(avg_value::numeric)::float8 AS scope_average FROM ranked) totals
    LEFT JOIN LATERAL (
      SELECT * FROM ranked ORDER BY avg_value ${direction}, workload_id COLLATE "C" ASC LIMIT ${ranked.limit}
    ) page ON true
    ORDER BY page.avg_value ${direction}, page.workload_id COLLATE "C" ASC`;
  return scopedStatement(scope, sql, ranked.params.values);
}

/**
 * Ranked by cost (src/common/cost.ts), over the workloads in scope whose whole run is priced: settled
 * workloads carry their cost (src/rollups/workload-costs/), running ones are priced up to `now`. avg
 * and current are the same exact amount (text, the currency's decimals); the mean is the exact mean
 * rounded once.
 */
export function rankedByCostQuery(scope: AuthScope, filters: RankedFilters, now: Date): ScopedStatement {
  return rankedBySettledAmountQuery(scope, filters, (ranked, organization) => {
    const clock = ranked.params.add(now);
    const minorUnits = `(SELECT max(minor_units) FROM gpu_prices WHERE organization_id = ${organization})`;
    return {
      column: 'cost_unit_us',
      running: `price.price_unit_us FROM workloads w ${runCostLateralSql('w', clock, 'price')}`,
      runningCondition: `${workloadCostSql('w', clock, 'price')} IS NOT NULL`,
      totals: ['costed_count', 'cost_unit_us_sum'],
      answered: (amount) => `round(${amount} / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, ${minorUnits})::text`,
    };
  });
}

/**
 * Ranked by energy (kWh): settled workloads (all but running) from the partial indexes on their
 * settled energy (src/rollups/workload-energy/), top-N per status (and initiative) like cost; running
 * ones (few, partial index) by their aggregate's energy so far. Only workloads with samples are
 * ranked. avg and current are the same amount, rounded once.
 */
export function rankedByEnergyQuery(scope: AuthScope, filters: RankedFilters): ScopedStatement {
  return rankedBySettledAmountQuery(scope, filters, () => ({
    column: 'energy_microjoules',
    // The running aggregates as one set (their partial index), not every aggregate of the organization.
    running: `m.energy_microjoules FROM workloads w ${runningAggregateJoinSql('w', 'm')}`,
    runningCondition: 'm.sample_count > 0',
    totals: ['energy_count', 'energy_microjoules_sum'],
    answered: energyKwhSql,
  }));
}

/** How rankedBySettledAmountQuery ranks one settled amount of workloads. */
interface SettledAmount {
  /** The workloads column, with partial indexes `(org, [initiative,] status, column, id) WHERE column IS NOT NULL`. */
  column: string;
  /** What follows `SELECT <running workload columns>,`: the running workload `w`'s amount so far, and its FROM. */
  running: string;
  /** Which running workloads are ranked. */
  runningCondition: string;
  /** workload_status_totals' count of settled amounts and their sum. */
  totals: [count: string, sum: string];
  /** The amount as answered, from an exact one. */
  answered: (amount: string) => string;
}

/**
 * Ranked by an amount settled on the workloads rows: settled workloads (all but running) read the
 * amount's partial indexes top-N per status (and initiative), like GPU-hours; running ones (few,
 * partial index) are valued where read. total_count and the mean come from workload_status_totals
 * plus the running ones. A cluster filter reads the same indexes filtered by cluster, and the totals
 * kept per cluster. The order is the exact amount's; avg and current are the same amount, answered.
 */
function rankedBySettledAmountQuery(
  scope: AuthScope,
  filters: RankedFilters,
  amountOf: (ranked: RankedParameters, organization: string) => SettledAmount,
): ScopedStatement {
  const statuses = filters.status !== undefined ? [filters.status] : WORKLOAD_STATUSES;
  const settled = statuses.filter((status) => status !== 'running');
  const ranked = rankedParameters(scope, filters, settled);
  const organization = ranked.params.organization;
  const amount = amountOf(ranked, organization);
  const readsRunning = ranked.params.add(statuses.includes('running'));
  const inScope = clusterScope(ranked, filters);
  const column = `w.${amount.column}`;
  const settledCandidates = topPerBranchSql(
    // The predicate of the indexes, repeated so the planner can use them.
    workloadBranches(organization, inScope, column, `AND ${column} IS NOT NULL`),
    filters.order,
    perInitiative(scope, filters),
    ranked,
  );
  const running = `
    SELECT w.workload_id, w.name, w.initiative_id, ${prefixed('w', SHARE_COLUMNS)}, ${amount.running}
    WHERE ${readsRunning} AND w.organization_id = ${organization} AND w.status = 'running' AND ${inScope('w')}
      AND ${amount.runningCondition}`;
  const candidates = `
    SELECT workload_id, name, initiative_id, ${SHARE_COLUMNS}, sort_value AS avg_value FROM (${settledCandidates}) s
    UNION ALL
    SELECT * FROM running r`;
  const [count, sum] = amount.totals;
  const settledTotals = `SELECT coalesce(sum(t.${count}), 0) AS workload_count, coalesce(sum(t.${sum}), 0) AS amount_sum
    FROM workload_status_totals t
    WHERE t.organization_id = ${organization} AND t.status = ANY (${ranked.statuses}::text[]) AND ${inScope('t')}`;
  const totals = `
    SELECT (s.workload_count + r.workload_count)::int AS total_count,
           ${amount.answered('(s.amount_sum + r.amount_sum) / nullif(s.workload_count + r.workload_count, 0)')} AS scope_average
    FROM (${settledTotals}) s
    CROSS JOIN (SELECT count(*) AS workload_count, coalesce(sum(r.amount), 0) AS amount_sum FROM running r) r`;
  // The running ones valued once, for the page and the totals alike.
  const sql = `WITH running (workload_id, name, initiative_id, ${SHARE_COLUMNS}, amount) AS MATERIALIZED (${running})
    ${pageWithTotalsSql(
      candidates,
      totals,
      filters.order,
      `p.workload_id, p.name, p.initiative_id, ${amount.answered('p.avg_value')} AS avg_value, ${amount.answered('p.avg_value')} AS current_value, ${prefixed('p', SHARE_COLUMNS)}`,
      '',
      ranked.limit,
    )}`;
  return scopedStatement(scope, sql, ranked.params.values);
}
