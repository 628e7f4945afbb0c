import type { DataSource } from 'typeorm';
import { type AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import type { WorkloadStatus } from '../workloads/entities/workload.entity';
import { SAMPLE_METRICS, type SampleMetric, type SortOrder } from './metric-names';

/** UTC text with microseconds: window bounds go back to PostgreSQL without losing precision. */
const UTC_MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

export interface WorkloadWindow {
  gpu_count: number;
  /** null for job_lifetime of a workload that never started: the window is empty. */
  window_start: string | null;
  window_end: string;
}

/**
 * The workload (within the caller's scope; out of scope reads exactly like unknown) and its window:
 * ending at completed_at when finished, `now` otherwise; reaching back `windowSeconds`, or to
 * started_at when `windowSeconds` is null (job_lifetime).
 */
export async function findWorkloadWindow(
  dataSource: DataSource,
  scope: AuthScope,
  workloadId: string,
  windowSeconds: number | null,
  now: Date,
): Promise<WorkloadWindow | null> {
  const rows: WorkloadWindow[] = await dataSource.query(
    `SELECT w.gpu_count,
            to_char(b.window_start AT TIME ZONE 'UTC', ${UTC_MICROS}) AS window_start,
            to_char(e.window_end AT TIME ZONE 'UTC', ${UTC_MICROS}) AS window_end
     FROM workloads w
     CROSS JOIN LATERAL (SELECT coalesce(w.completed_at, $4::timestamptz) AS window_end) e
     CROSS JOIN LATERAL (
       SELECT CASE WHEN $5::float8 IS NULL THEN w.started_at
                   ELSE e.window_end - make_interval(secs => $5::float8) END AS window_start
     ) b
     WHERE w.organization_id = $1 AND w.workload_id = $2
       AND ($3::text[] IS NULL OR w.initiative_id = ANY ($3::text[]))`,
    [scope.organizationId, workloadId, scopedInitiativeIds(scope), now, windowSeconds],
  );
  return rows[0] ?? null;
}

export type WindowStats = { sample_count: number } & Record<
  `${SampleMetric}_${'avg' | 'min' | 'max' | 'current'}`,
  number | null
>;

const WINDOW_STATS_SQL = `
  SELECT agg.sample_count, ${SAMPLE_METRICS.map((m) => `agg.${m}_avg, agg.${m}_min, agg.${m}_max, cur.${m} AS ${m}_current`).join(',\n         ')}
  FROM (
    SELECT count(*)::int AS sample_count,
           ${SAMPLE_METRICS.map((m) => `avg(${m}) AS ${m}_avg, min(${m}) AS ${m}_min, max(${m}) AS ${m}_max`).join(',\n           ')}
    FROM metric_samples
    WHERE organization_id = $1 AND workload_id = $2 AND sampled_at BETWEEN $3::timestamptz AND $4::timestamptz
  ) agg
  LEFT JOIN LATERAL (
    SELECT ${SAMPLE_METRICS.join(', ')}
    FROM metric_samples
    WHERE organization_id = $1 AND workload_id = $2 AND sampled_at BETWEEN $3::timestamptz AND $4::timestamptz
    ORDER BY sampled_at DESC
    LIMIT 1
  ) cur ON true`;

/**
 * Statistics of one workload's samples in [start, end], both ends included. The bounds are
 * parameters so the planner prunes to the partitions of the window; each half is one range scan
 * of the samples primary key (organization_id, workload_id, sampled_at).
 */
export async function windowStats(
  dataSource: DataSource,
  scope: AuthScope,
  workloadId: string,
  windowStart: string,
  windowEnd: string,
): Promise<WindowStats> {
  const rows: WindowStats[] = await dataSource.query(WINDOW_STATS_SQL, [
    scope.organizationId,
    workloadId,
    windowStart,
    windowEnd,
  ]);
  return rows[0];
}

export interface RankedFilters {
  initiativeId?: string;
  status?: WorkloadStatus;
  order: SortOrder;
  limit: number;
}

export interface RankedRow {
  /** null (with the other page columns) in the one row returned when nothing is ranked. */
  workload_id: string | null;
  name: string;
  initiative_id: string;
  avg_value: number;
  current_value: number;
  total_count: number;
  scope_average: number;
}

/** Scope and filters on workloads `w`, as parameters $1..$4. */
const WORKLOAD_FILTER_SQL = `w.organization_id = $1
       AND ($2::text[] IS NULL OR w.initiative_id = ANY ($2::text[]))
       AND ($3::text IS NULL OR w.initiative_id = $3)
       AND ($4::text IS NULL OR w.status = $4)`;

/**
 * The count and mean over every ranked row (one aggregate pass, no sort) beside the page (a top-N
 * heap sort keeping `limit` rows). A window aggregate over the whole set would force a full sort.
 * Ties: workload_id ascending (code point order) whatever the direction. With nothing ranked the
 * one row carries the zero count and a null page.
 */
function rankingSql(rankedSource: string, order: SortOrder): string {
  const direction = order === 'asc' ? 'ASC' : 'DESC';
  return `
    SELECT page.workload_id, page.name, page.initiative_id, page.avg_value, page.current_value,
           totals.total_count, totals.scope_average
    FROM (SELECT count(*)::int AS total_count, avg(avg_value) AS scope_average FROM (${rankedSource}) ranked) totals
    LEFT JOIN LATERAL (
      SELECT * FROM (${rankedSource}) ranked
      ORDER BY avg_value ${direction}, workload_id COLLATE "C" ASC
      LIMIT $5
    ) page ON true`;
}

function filterParameters(scope: AuthScope, filters: RankedFilters): unknown[] {
  return [
    scope.organizationId,
    scopedInitiativeIds(scope),
    filters.initiativeId ?? null,
    filters.status ?? null,
    filters.limit,
  ];
}

/**
 * Ranked by the lifetime average kept in metric_aggregates (one row per workload that has samples);
 * samples are never read. `metric` comes from a fixed list, never from input text.
 */
export async function rankBySampleMetric(
  dataSource: DataSource,
  scope: AuthScope,
  metric: Exclude<SampleMetric, 'temperature'>,
  filters: RankedFilters,
): Promise<RankedRow[]> {
  const source = `
    SELECT w.workload_id, w.name, w.initiative_id, a.${metric}_avg AS avg_value, a.${metric}_latest AS current_value
    FROM metric_aggregates a
    JOIN workloads w ON w.organization_id = a.organization_id AND w.workload_id = a.workload_id
    WHERE a.organization_id = $1 AND a.sample_count > 0 AND ${WORKLOAD_FILTER_SQL}`;
  return dataSource.query(rankingSql(source, filters.order), filterParameters(scope, filters));
}

/**
 * Ranked by gpu_hours_used = gpu_count × whole seconds run / 3600 (running ones up to `now`,
 * never-started ones 0): every workload in scope that matches the filters. float8 epoch arithmetic
 * (date_part) rather than numeric: this reads every workload in scope.
 */
export async function rankByGpuHours(
  dataSource: DataSource,
  scope: AuthScope,
  filters: RankedFilters,
  now: Date,
): Promise<RankedRow[]> {
  const source = `
    SELECT w.workload_id, w.name, w.initiative_id, h.gpu_hours AS avg_value, h.gpu_hours AS current_value
    FROM workloads w
    CROSS JOIN LATERAL (
      SELECT CASE WHEN w.started_at IS NULL THEN 0::float8
                  ELSE w.gpu_count * greatest(0, floor(date_part('epoch', coalesce(w.completed_at, $6::timestamptz) - w.started_at))) / 3600
             END AS gpu_hours
    ) h
    WHERE ${WORKLOAD_FILTER_SQL}`;
  return dataSource.query(rankingSql(source, filters.order), [...filterParameters(scope, filters), now]);
}
