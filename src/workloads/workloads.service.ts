import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { ScopedDatabase } from '../common/database/scoped-database';
import { assertInitiativeInScope, assertOrganizationInScope } from '../common/auth/scope-checks';
import { type CurrencyMetadata, organizationCurrencyQuery } from '../common/cost';
import { currencyMinorUnits } from '../common/money';
import { AppConfig } from '../core/config/app-config';
import { ApiError } from '../common/http/api-error';
import { PageMetadata, WithMetadata } from '../common/http/envelope';
import {
  cursorCodecFor,
  filterFingerprint,
  KeysetCursorCodec,
  type KeysetPosition,
} from '../common/pagination/keyset-cursor';
import { DEFAULT_PAGE_SIZE, ListWorkloadsQueryDto } from './dto/list-workloads-query.dto';
import { WorkloadStatsQueryDto } from './dto/workload-stats-query.dto';
import { type StatsRequest, StatsRow, workloadStatsQuery } from './workload-stats.queries';
import {
  assertDateOrder,
  resolveTimeRangeName,
  type StatsTimeRange,
  timeRangeBounds,
} from '../common/time-range';
import { type StatsJson, toWorkloadStats } from './workload-stats.responses';
import {
  MAX_TIMELINE_BUCKETS,
  type TimelineInterval,
  timelineBoundariesQuery,
} from '../common/calendar-boundaries.queries';
import { type TimelineRow, workloadTimelineQuery } from './workload-timeline.queries';
import { type QueueWaitRow, queueWaitQuery } from './queue-wait.queries';
import { type TimelineBucketJson, toTimeline } from './workload-timeline.responses';
import {
  countWorkloadsQuery,
  listWorkloadsPageQuery,
  WorkloadDetailRow,
  workloadDetailQuery,
  WorkloadListFilters,
  WorkloadSummaryRow,
} from './workloads.queries';
import {
  toWorkloadDetail,
  toWorkloadSummary,
  type WorkloadDetailJson,
  type WorkloadSummaryJson,
} from './workload.responses';

/** A CSV export is a spreadsheet's worth: more rows than this is refused (narrow the filters). */
export const CSV_ROW_CAP = 1_000_000;
/** Rows per statement while streaming a CSV export: one keyset page, as the JSON list reads it. */
const CSV_PAGE_SIZE = 1_000;

export interface WorkloadStatsResult extends StatsJson {
  range: { time_range: StatsTimeRange; start: string; end: string };
  timeline?: TimelineBucketJson[];
}

@Injectable()
export class WorkloadsService {
  private readonly cursors: KeysetCursorCodec;

  constructor(
    private readonly database: ScopedDatabase,
    config: AppConfig,
  ) {
    this.cursors = cursorCodecFor(config.CURSOR_SECRET);
  }

  async list(
    scope: AuthScope,
    query: ListWorkloadsQueryDto,
    asOf: Date,
  ): Promise<WithMetadata<{ workloads: WorkloadSummaryJson[] }, PageMetadata & CurrencyMetadata>> {
    const { filters, fingerprint, after } = this.listRequest(scope, query);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const page = listWorkloadsPageQuery(scope, filters, after, limit, asOf);
    const count = countWorkloadsQuery(scope, filters);
    const [rows, counted] = await Promise.all([
      this.database.run<WorkloadSummaryRow>(page),
      this.database.run<{ total_count: number }>(count),
    ]);
    // The page's rows carry the currency; an empty page asks for it alone.
    const [{ currency }] =
      rows.length > 0 ? rows : await this.database.run<CurrencyMetadata>(organizationCurrencyQuery(scope));
    const shown = rows.slice(0, limit);
    const last = shown[shown.length - 1];
    const nextToken =
      rows.length > limit && last
        ? this.cursors.encode({ key: last.submitted_at_key, id: last.workload_id }, fingerprint)
        : null;
    return new WithMetadata(
      { workloads: shown.map(toWorkloadSummary) },
      { next_token: nextToken, total_count: counted[0].total_count, currency },
    );
  }

  /**
   * The whole filtered set as CSV rows, read page by page through the same keyset cursor as the
   * JSON list (from `next_token` when given). The count comes first, so a set over the cap is
   * refused with a JSON error before any byte of CSV is sent.
   */
  async listCsv(
    scope: AuthScope,
    query: ListWorkloadsQueryDto,
    asOf: Date,
  ): Promise<AsyncIterable<WorkloadSummaryJson>> {
    const { filters, after } = this.listRequest(scope, query);
    const [{ total_count: total }] = await this.database.run<{ total_count: number }>(
      countWorkloadsQuery(scope, filters),
    );
    if (total > CSV_ROW_CAP) {
      throw ApiError.invalidField(
        'Accept',
        'header',
        `a CSV export holds at most ${CSV_ROW_CAP} rows and ${total} match: narrow the filters (e.g. start_date, end_date)`,
      );
    }
    return this.pages(scope, filters, after, asOf);
  }

  private async *pages(
    scope: AuthScope,
    filters: WorkloadListFilters,
    after: KeysetPosition | null,
    asOf: Date,
  ): AsyncIterable<WorkloadSummaryJson> {
    let position = after;
    for (;;) {
      const rows = await this.database.run<WorkloadSummaryRow>(
        listWorkloadsPageQuery(scope, filters, position, CSV_PAGE_SIZE, asOf),
      );
      const page = rows.slice(0, CSV_PAGE_SIZE);
      for (const row of page) yield toWorkloadSummary(row);
      if (rows.length <= CSV_PAGE_SIZE) return;
      const last = page[page.length - 1];
      position = { key: last.submitted_at_key, id: last.workload_id };
    }
  }

  private listRequest(scope: AuthScope, query: ListWorkloadsQueryDto) {
    assertDateOrder(query.start_date, query.end_date);
    assertOrganizationInScope(scope, query.organization_id);
    assertInitiativeInScope(scope, query.initiative_id);
    const filters: WorkloadListFilters = {
      initiativeId: query.initiative_id,
      status: query.status,
      submittedBy: query.submitted_by,
      isManaged: query.is_managed,
      clusterId: query.cluster_id,
      startDate: query.start_date,
      endDate: query.end_date,
    };
    const fingerprint = filterFingerprint({ organization: scope.organizationId, ...filters });
    const after = query.next_token === undefined ? null : this.cursors.decode(query.next_token, fingerprint);
    return { filters, fingerprint, after };
  }

  async detail(
    scope: AuthScope,
    workloadId: string,
    now: Date,
  ): Promise<WithMetadata<WorkloadDetailJson, CurrencyMetadata>> {
    const rows = await this.database.run<WorkloadDetailRow>(workloadDetailQuery(scope, workloadId, now));
    if (rows.length === 0) throw ApiError.notFound(`Workload '${workloadId}' was not found`);
    return new WithMetadata(toWorkloadDetail(rows[0], now), { currency: rows[0].currency });
  }

  async stats(
    scope: AuthScope,
    query: WorkloadStatsQueryDto,
    now: Date,
  ): Promise<WithMetadata<WorkloadStatsResult, CurrencyMetadata>> {
    const timeRange = resolveTimeRangeName(query);
    assertInitiativeInScope(scope, query.initiative_id);
    const { from, to, currency } = await timeRangeBounds(this.database, scope, timeRange, query, now);
    const request: StatsRequest = {
      from,
      to,
      now,
      initiativeId: query.initiative_id,
      clusterId: query.cluster_id,
      groupBy: query.group_by,
    };
    const minorUnits = currency === null ? null : currencyMinorUnits(currency);
    const [rows, queue] = await Promise.all([
      this.database.run<StatsRow>(workloadStatsQuery(scope, request)),
      this.queueAndTimeline(scope, request, query.interval),
    ]);
    const result: WorkloadStatsResult = {
      ...toWorkloadStats(rows, query.group_by, queue.rows, minorUnits),
      range: { time_range: timeRange, start: from.toISOString(), end: to.toISOString() },
    };
    if (queue.timeline) {
      result.timeline = toTimeline(
        queue.timeline.rows,
        queue.timeline.boundaries,
        request.groupBy,
        queue.rows,
        minorUnits,
      );
    }
    return new WithMetadata(result, { currency });
  }

  /**
   * The queue figures of the range and, with an interval, the timeline: its bucket boundaries first
   * (they depend on the organization's time zone), then one pass over the facts and one read of the
   * range's waits for the whole range and every bucket alike.
   */
  private async queueAndTimeline(
    scope: AuthScope,
    request: StatsRequest,
    interval: TimelineInterval | undefined,
  ): Promise<{ rows: QueueWaitRow[]; timeline?: { rows: TimelineRow[]; boundaries: Date[] } }> {
    const boundaries = interval ? await this.timelineBoundaries(scope, request, interval) : [];
    if (boundaries.length === 0) {
      const rows = await this.database.run<QueueWaitRow>(queueWaitQuery(scope, request));
      return interval ? { rows, timeline: { rows: [], boundaries: [] } } : { rows };
    }
    const [timelineRows, rows] = await Promise.all([
      this.database.run<TimelineRow>(workloadTimelineQuery(scope, request, boundaries)),
      this.database.run<QueueWaitRow>(queueWaitQuery(scope, request, boundaries)),
    ]);
    return { rows, timeline: { rows: timelineRows, boundaries } };
  }

  /** The buckets' boundaries over the range: none for an empty range. */
  private async timelineBoundaries(
    scope: AuthScope,
    request: StatsRequest,
    interval: TimelineInterval,
  ): Promise<Date[]> {
    if (request.from >= request.to) return [];
    const boundaryRows = await this.database.run<{ boundary: Date | null }>(
      timelineBoundariesQuery(scope, interval, request.from, request.to),
    );
    const boundaries = boundaryRows.map((row) => row.boundary);
    if (boundaries.length - 1 > MAX_TIMELINE_BUCKETS || boundaries.includes(null)) {
      throw ApiError.invalidField(
        'interval',
        'query',
        `gives more than ${MAX_TIMELINE_BUCKETS} buckets over this range: use a longer interval or a shorter range`,
        interval,
      );
    }
    return boundaries as Date[];
  }
}
