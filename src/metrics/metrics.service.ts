import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import type { AuthScope } from '../common/auth/auth-scope';
import { ScopedDatabase } from '../common/database/scoped-database';
import { assertInitiativeInScope } from '../common/auth/scope-checks';
import { ApiError } from '../common/http/api-error';
import { round4OrNull } from '../common/http/decimal';
import { WithMetadata, type CountMetadata } from '../common/http/envelope';
import type {
  MetricSummaryDto,
  RankedMetricsDto,
  RankedWorkloadDto,
  WorkloadMetricsDto,
} from './dto/metrics-response.dto';
import type { RankedMetricsQueryDto } from './dto/ranked-metrics-query.dto';
import type { WorkloadMetricsQueryDto } from './dto/workload-metrics-query.dto';
import {
  METRIC_NAMES,
  type MetricName,
  parseMetricList,
  type SampleMetric,
  type TimeRange,
  WINDOW_SECONDS,
} from './metric-names';
import {
  rankedByGpuHoursQuery,
  rankedBySampleMetricQuery,
  type RankedFilters,
  type RankedRow,
  type WindowStats,
  windowStatsQuery,
  type WorkloadWindow,
  workloadWindowQuery,
} from './metrics.queries';

const EMPTY_SUMMARY: MetricSummaryDto = { avg: null, min: null, max: null, current: null };

@Injectable()
export class MetricsService {
  constructor(
    private readonly database: ScopedDatabase,
    private readonly clock: Clock,
  ) {}

  async workloadMetrics(
    scope: AuthScope,
    workloadId: string,
    query: WorkloadMetricsQueryDto,
  ): Promise<WorkloadMetricsDto> {
    const timeRange: TimeRange = query.time_range ?? 'last_1h';
    const names = requestedMetrics(query.metrics);
    const windowSeconds = timeRange === 'job_lifetime' ? null : WINDOW_SECONDS[timeRange];
    const [window] = await this.database.run<WorkloadWindow>(
      workloadWindowQuery(scope, workloadId, windowSeconds, this.clock.now()),
    );
    if (!window) throw ApiError.notFound(`Workload '${workloadId}' not found`);
    let stats: WindowStats | undefined;
    if (window.window_start) {
      [stats] = await this.database.run<WindowStats>(
        windowStatsQuery(scope, workloadId, window.window_start, window.window_end),
      );
      // The statistics re-check the scope: a writer may have moved the workload since.
      if (!stats) throw ApiError.notFound(`Workload '${workloadId}' not found`);
    }
    const metrics: Partial<Record<MetricName, MetricSummaryDto>> = {};
    for (const name of names) metrics[name] = summarize(stats, name, window.gpu_count);
    return { workload_id: workloadId, time_range: timeRange, metrics };
  }

  async ranked(
    scope: AuthScope,
    query: RankedMetricsQueryDto,
  ): Promise<WithMetadata<RankedMetricsDto, CountMetadata>> {
    assertInitiativeInScope(scope, query.initiative_id);
    const sortBy = query.sort_by ?? 'gpu_utilization';
    const filters: RankedFilters = {
      initiativeId: query.initiative_id,
      status: query.status,
      order: query.order ?? 'desc',
      limit: query.limit ?? 10,
    };
    const rows = await this.database.run<RankedRow>(
      sortBy === 'gpu_hours'
        ? rankedByGpuHoursQuery(scope, filters, this.clock.now())
        : rankedBySampleMetricQuery(scope, sortBy, filters),
    );
    const page = rows.filter((row): row is RankedRow & { workload_id: string } => row.workload_id !== null);
    const workloads = page.map((row): RankedWorkloadDto => ({
      workload_id: row.workload_id,
      name: row.name,
      initiative_id: row.initiative_id,
      [sortBy]: { avg: round4OrNull(row.avg_value), current: round4OrNull(row.current_value) },
    }));
    const totalCount = rows[0]?.total_count ?? 0;
    const scopeAverage = totalCount > 0 ? round4OrNull(rows[0].scope_average) : null;
    return new WithMetadata(
      { workloads, scope_average: { [sortBy]: scopeAverage } },
      { total_count: totalCount },
    );
  }
}

function requestedMetrics(text: string | undefined): readonly MetricName[] {
  if (text === undefined) return METRIC_NAMES;
  const parsed = parseMetricList(text);
  // The DTO has already rejected unknown names; this keeps the types honest.
  return 'metrics' in parsed ? parsed.metrics : METRIC_NAMES;
}

/** gpu_usage = gpu_count × gpu_utilization / 100 per sample, so its avg/min/max/current scale alike. */
function summarize(stats: WindowStats | undefined, name: MetricName, gpuCount: number): MetricSummaryDto {
  if (!stats || stats.sample_count === 0) return { ...EMPTY_SUMMARY };
  const source: SampleMetric = name === 'gpu_usage' ? 'gpu_utilization' : name;
  const scale =
    name === 'gpu_usage'
      ? (value: number | null) => (value === null ? null : (gpuCount * value) / 100)
      : (value: number | null) => value;
  return {
    avg: round4OrNull(scale(stats[`${source}_avg`])),
    min: round4OrNull(scale(stats[`${source}_min`])),
    max: round4OrNull(scale(stats[`${source}_max`])),
    current: round4OrNull(scale(stats[`${source}_current`])),
  };
}
