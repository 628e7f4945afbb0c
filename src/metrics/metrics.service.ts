import { type CurrencyMetadata, organizationCurrencyQuery, workloadIdleCostsQuery } from '../common/cost';
import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { ScopedDatabase } from '../common/database/scoped-database';
import type { ScopedStatement } from '../common/database/scoped-statement';
import { assertInitiativeInScope } from '../common/auth/scope-checks';
import { ApiError } from '../common/http/api-error';
import { gpusOfUnits, shareFieldsOf } from '../common/gpu-sharing';
import { round4OrNull } from '../common/http/decimal';
import { WithMetadata, type CountMetadata } from '../common/http/envelope';
import type {
  MetricSummaryDto,
  RankedMetricsDto,
  RankedWorkloadDto,
  SeriesPointDto,
  SeriesValueDto,
  WorkloadMetricsDto,
} from './dto/metrics-response.dto';
import type { RankedMetricsQueryDto } from './dto/ranked-metrics-query.dto';
import type { WorkloadMetricsQueryDto } from './dto/workload-metrics-query.dto';
import {
  METRIC_NAMES,
  type MetricName,
  type RankMetric,
  parseMetricList,
  type SampleMetric,
  type TimeRange,
  WINDOW_SECONDS,
} from './metric-names';
import {
  rankedByCostQuery,
  rankedByEnergyQuery,
  rankedByGpuHoursQuery,
  rankedByIdleGpuHoursQuery,
  rankedBySampleMetricQuery,
  rankedInClusterQuery,
  type RankedFilters,
  type RankedRow,
  type SeriesRow,
  seriesQuery,
  type WindowPercentiles,
  windowPercentilesQuery,
  type WindowStats,
  windowHourStatsQuery,
  type HourWindowStats,
  windowStatsQuery,
  type WorkloadWindow,
  workloadWindowQuery,
} from './metrics.queries';
import { MAX_SERIES_POINTS, seriesPointCount } from './series-step';
import { statsFromHours } from './window-averages';

const EMPTY_SUMMARY: MetricSummaryDto = { avg: null, min: null, max: null, current: null };

@Injectable()
export class MetricsService {
  constructor(private readonly database: ScopedDatabase) {}

  async workloadMetrics(
    scope: AuthScope,
    workloadId: string,
    query: WorkloadMetricsQueryDto,
    now: Date,
  ): Promise<WorkloadMetricsDto> {
    const timeRange: TimeRange = query.time_range ?? 'last_1h';
    const names = requestedMetrics(query.metrics);
    const windowSeconds = timeRange === 'job_lifetime' ? null : WINDOW_SECONDS[timeRange];
    const [window] = await this.database.run<WorkloadWindow>(
      workloadWindowQuery(scope, workloadId, windowSeconds, now),
    );
    if (!window) throw ApiError.notFound(`Workload '${workloadId}' not found`);
    const stats = window.window_start
      ? await this.windowStats(scope, workloadId, window.window_start, window, names)
      : undefined;
    const metrics: Partial<Record<MetricName, MetricSummaryDto>> = {};
    for (const name of names) metrics[name] = summarize(stats, name, gpusOfUnits(window.gpu_share_units));
    const answer: WorkloadMetricsDto = { workload_id: workloadId, time_range: timeRange, metrics };
    if (query.step === undefined) return answer;
    return this.withSeries(scope, workloadId, window, names, query.step, answer);
  }

  /**
   * The window's statistics from the hour summaries, or from the readings in time order when the
   * summaries leave an answered average open (window-averages.ts). Both re-check the scope: a writer
   * may have moved the workload since.
   */
  private async windowStats(
    scope: AuthScope,
    workloadId: string,
    windowStart: string,
    window: WorkloadWindow,
    names: readonly MetricName[],
  ): Promise<WindowStats> {
    const [hours] = await this.database.run<HourWindowStats>(
      windowHourStatsQuery(scope, workloadId, windowStart, window.window_end),
    );
    if (!hours) throw ApiError.notFound(`Workload '${workloadId}' not found`);
    const gpus = gpusOfUnits(window.gpu_share_units);
    const fromHours = statsFromHours(hours, (metric, average) =>
      names
        .map((name) => metricScale(name, gpus))
        .filter(({ source }) => source === metric)
        .map(({ factor }) => scaled(average, factor)),
    );
    if (fromHours) return fromHours;
    const [stats] = await this.database.run<WindowStats>(
      windowStatsQuery(scope, workloadId, windowStart, window.window_end),
    );
    if (!stats) throw ApiError.notFound(`Workload '${workloadId}' not found`);
    return stats;
  }

  /** `step` adds the series and the window's percentiles; both re-check the scope. */
  private async withSeries(
    scope: AuthScope,
    workloadId: string,
    window: WorkloadWindow,
    names: readonly MetricName[],
    stepSeconds: number,
    answer: WorkloadMetricsDto,
  ): Promise<WorkloadMetricsDto> {
    answer.step_seconds = stepSeconds;
    if (!window.window_start) {
      for (const name of names) Object.assign(answer.metrics[name]!, { p50: null, p95: null });
      return { ...answer, series: [] };
    }
    assertPointBudget(window.window_start, window.window_end, stepSeconds, answer.time_range);
    const [percentiles] = await this.database.run<WindowPercentiles>(
      windowPercentilesQuery(scope, workloadId, window.window_start, window.window_end),
    );
    const rows = await this.database.run<SeriesRow>(
      seriesQuery(scope, workloadId, window.window_start, window.window_end, stepSeconds),
    );
    if (!percentiles?.in_scope || rows.length === 0)
      throw ApiError.notFound(`Workload '${workloadId}' not found`);
    const gpus = gpusOfUnits(window.gpu_share_units);
    for (const name of names) Object.assign(answer.metrics[name]!, percentilesOf(percentiles, name, gpus));
    answer.series = rows.map((row) => seriesPoint(row, names, gpus));
    return answer;
  }

  async ranked(
    scope: AuthScope,
    query: RankedMetricsQueryDto,
    now: Date,
  ): Promise<WithMetadata<RankedMetricsDto, CountMetadata>> {
    assertInitiativeInScope(scope, query.initiative_id);
    const sortBy = query.sort_by ?? 'gpu_utilization';
    const filters: RankedFilters = {
      initiativeId: query.initiative_id,
      clusterId: query.cluster_id,
      status: query.status,
      order: query.order ?? 'desc',
      limit: query.limit ?? 10,
    };
    if (sortBy === 'cost') return this.rankedByCost(scope, filters, now);
    const rows = await this.database.run<RankedRow>(rankedStatementFor(scope, sortBy, filters, now));
    // Efficiency is utilization as a fraction: the same order, scaled.
    const scale = sortBy === 'gpu_efficiency' ? 0.01 : 1;
    const page = rows.filter((row): row is RankedRow & { workload_id: string } => row.workload_id !== null);
    const workloads = page.map((row): RankedWorkloadDto => ({
      workload_id: row.workload_id,
      name: row.name,
      initiative_id: row.initiative_id,
      gpu_count: row.gpu_count,
      ...shareFieldsOf(row),
      [sortBy]: { avg: scaled(row.avg_value, scale), current: scaled(row.current_value, scale) },
    }));
    const totalCount = rows[0]?.total_count ?? 0;
    const scopeAverage = totalCount > 0 ? scaled(rows[0].scope_average, scale) : null;
    const body = { workloads, scope_average: { [sortBy]: scopeAverage } };
    if (sortBy !== 'idle_gpu_hours') return new WithMetadata(body, { total_count: totalCount });
    return new WithMetadata(body, {
      total_count: totalCount,
      currency: await this.addIdleCosts(scope, workloads, now),
    });
  }

  /** The money of each ranked workload's idle GPU-hours (src/common/cost.ts); the currency answered. */
  private async addIdleCosts(
    scope: AuthScope,
    workloads: RankedWorkloadDto[],
    now: Date,
  ): Promise<string | null> {
    const [costs, [{ currency }]] = await Promise.all([
      workloads.length === 0
        ? Promise.resolve([])
        : this.database.run<{ workload_id: string; idle_cost: string | null }>(
            workloadIdleCostsQuery(
              scope,
              workloads.map((workload) => workload.workload_id),
              now,
            ),
          ),
      this.database.run<CurrencyMetadata>(organizationCurrencyQuery(scope)),
    ]);
    const idleCostOf = new Map(costs.map((row) => [row.workload_id, row.idle_cost]));
    for (const workload of workloads) workload.idle_cost = idleCostOf.get(workload.workload_id) ?? null;
    return currency;
  }

  /** Ranked by cost: amounts as exact strings, the currency in metadata. */
  private async rankedByCost(
    scope: AuthScope,
    filters: RankedFilters,
    now: Date,
  ): Promise<WithMetadata<RankedMetricsDto, CountMetadata & CurrencyMetadata>> {
    const [rows, [{ currency }]] = await Promise.all([
      this.database.run<CostRankedRow>(rankedByCostQuery(scope, filters, now)),
      this.database.run<CurrencyMetadata>(organizationCurrencyQuery(scope)),
    ]);
    const page = rows.filter(
      (row): row is CostRankedRow & { workload_id: string } => row.workload_id !== null,
    );
    const workloads = page.map((row) => ({
      workload_id: row.workload_id,
      name: row.name,
      initiative_id: row.initiative_id,
      gpu_count: row.gpu_count,
      ...shareFieldsOf(row),
      cost: { avg: row.avg_value, current: row.current_value },
    }));
    const totalCount = rows[0]?.total_count ?? 0;
    return new WithMetadata(
      { workloads, scope_average: { cost: totalCount > 0 ? rows[0].scope_average : null } },
      { total_count: totalCount, currency },
    );
  }
}

/** A RankedRow whose amounts are exact decimal text. */
type CostRankedRow = Omit<RankedRow, 'avg_value' | 'current_value' | 'scope_average'> & {
  avg_value: string;
  current_value: string;
  scope_average: string | null;
};

function rankedStatementFor(
  scope: AuthScope,
  sortBy: RankMetric,
  filters: RankedFilters,
  now: Date,
): ScopedStatement {
  if (sortBy === 'cost') throw new Error('sort_by=cost is ranked by rankedByCostQuery');
  if (sortBy === 'energy_kwh') return rankedByEnergyQuery(scope, filters);
  if (filters.clusterId !== undefined && sortBy !== 'gpu_hours') {
    const value = sortBy === 'gpu_efficiency' ? 'gpu_utilization' : sortBy;
    return rankedInClusterQuery(scope, value, { ...filters, clusterId: filters.clusterId }, now);
  }
  switch (sortBy) {
    case 'gpu_hours':
      return rankedByGpuHoursQuery(scope, filters, now);
    case 'idle_gpu_hours':
      return rankedByIdleGpuHoursQuery(scope, filters, now);
    case 'gpu_efficiency':
      return rankedBySampleMetricQuery(scope, 'gpu_utilization', filters);
    default:
      return rankedBySampleMetricQuery(scope, sortBy, filters);
  }
}

function assertPointBudget(windowStart: string, windowEnd: string, stepSeconds: number, timeRange: string) {
  const points = seriesPointCount(new Date(windowStart), new Date(windowEnd), stepSeconds);
  if (points <= MAX_SERIES_POINTS) return;
  const issue = `the ${timeRange} window at this step gives ${points} points; at most ${MAX_SERIES_POINTS}`;
  throw ApiError.validation(
    [
      { field: 'step', location: 'query', issue: `${issue}: use a longer step`, value: `${stepSeconds}s` },
      {
        field: 'time_range',
        location: 'query',
        issue: `${issue}: use a shorter time_range`,
        value: timeRange,
      },
    ],
    `step and time_range give ${points} points; at most ${MAX_SERIES_POINTS}`,
  );
}

/**
 * gpu_usage scales gpu_utilization by the GPUs held / 100 (gpu_share: gpu_count for whole GPUs), sample
 * by sample, so its statistics scale alike: a MIG 1g instance fully busy does a seventh of a GPU's work.
 */
function metricScale(name: MetricName, gpuCount: number): { source: SampleMetric; factor: number } {
  return name === 'gpu_usage'
    ? { source: 'gpu_utilization', factor: gpuCount / 100 }
    : { source: name, factor: 1 };
}

function scaled(value: number | null, factor: number): number | null {
  return round4OrNull(value === null ? null : value * factor);
}

function percentilesOf(row: WindowPercentiles, name: MetricName, gpuCount: number) {
  const { source, factor } = metricScale(name, gpuCount);
  return { p50: scaled(row[`${source}_p50`], factor), p95: scaled(row[`${source}_p95`], factor) };
}

function seriesPoint(row: SeriesRow, names: readonly MetricName[], gpuCount: number): SeriesPointDto {
  const point: SeriesPointDto = { timestamp: isoMillis(row.bucket_start), sample_count: row.sample_count };
  for (const name of names) {
    const { source, factor } = metricScale(name, gpuCount);
    const value: SeriesValueDto = {
      avg: scaled(row[`${source}_avg`], factor),
      min: scaled(row[`${source}_min`], factor),
      max: scaled(row[`${source}_max`], factor),
    };
    point[name] = value;
  }
  return point;
}

/** Bucket starts are whole seconds: the microsecond text becomes the contract's millisecond form. */
function isoMillis(utcMicros: string): string {
  return new Date(utcMicros).toISOString();
}

function requestedMetrics(text: string | undefined): readonly MetricName[] {
  if (text === undefined) return METRIC_NAMES;
  const parsed = parseMetricList(text);
  // The DTO has already rejected unknown names; this keeps the types honest.
  return 'metrics' in parsed ? parsed.metrics : METRIC_NAMES;
}

function summarize(stats: WindowStats | undefined, name: MetricName, gpuCount: number): MetricSummaryDto {
  if (!stats || stats.sample_count === 0) return { ...EMPTY_SUMMARY };
  const { source, factor } = metricScale(name, gpuCount);
  return {
    avg: scaled(stats[`${source}_avg`], factor),
    min: scaled(stats[`${source}_min`], factor),
    max: scaled(stats[`${source}_max`], factor),
    current: scaled(stats[`${source}_current`], factor),
  };
}
