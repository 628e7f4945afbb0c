import type { AuthScope } from '../common/auth/auth-scope';
import { type ScopedStatement, scopedStatement } from '../common/database/scoped-statement';
import {
  RAW_STATS_MEASURES,
  STATS_FACT_COLUMNS,
  WORKLOADS_WITH_AGGREGATE,
} from '../rollups/workload-periods/workload-periods.queries';
import { type RollupStarts, rollupStarts, type Span } from '../rollups/workload-periods/period-split';
import {
  GROUPING,
  runningFactsSql,
  STATS_SUMS,
  statsParameters,
  type StatsRequest,
  type StatsRow,
} from './workload-stats.queries';

/**
 * The range cut at the buckets' boundaries (no rollup row straddles one), or, without boundaries,
 * the range whole.
 */
export function bucketSpans(request: StatsRequest, boundaries?: Date[]): { from: Date; to: Date }[] {
  const edges = boundaries ?? [request.from, request.to];
  return edges.slice(0, -1).map((start, index) => {
    const end = edges[index + 1];
    return { from: start < request.from ? request.from : start, to: end > request.to ? request.to : end };
  });
}

/** The range cut for the rollups bucket by bucket. */
export function bucketedSplit(request: StatsRequest, boundaries?: Date[]): RollupStarts {
  const days: Date[] = [];
  const hours: Date[] = [];
  const raw: Span[] = [];
  for (const span of bucketSpans(request, boundaries)) {
    const split = rollupStarts(span.from, span.to);
    days.push(...split.days);
    hours.push(...split.hours);
    raw.push(...split.raw);
  }
  return { days, hours, raw };
}

/**
 * Per bucket the same measures as the summary (and per group with `group_by`): each bucket is cut
 * like a stats range, whole UTC days and hours from workload_period_rollups, partial hours from raw
 * rows; every fact row carries the time it belongs to, and width_bucket files it under its bucket.
 */
export function workloadTimelineQuery(
  scope: AuthScope,
  request: StatsRequest,
  boundaries: Date[],
): ScopedStatement {
  const stats = statsParameters(scope, request);
  const { params, where } = stats;
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const { days, hours, raw } = bucketedSplit(request, boundaries);
  const rollup = (period: 'day' | 'hour', starts: Date[]) =>
    `SELECT bucket_start, ${grouping.rollupKey}, ${STATS_FACT_COLUMNS.join(', ')}
       FROM workload_period_rollups
       WHERE ${where.join(' AND ')} AND period = '${period}' AND dimension = '${grouping.dimension}'
         AND bucket_start = ANY(${params.add(starts)}::timestamptz[])`;
  const facts = [rollup('day', days), rollup('hour', hours)];
  for (const span of raw) {
    facts.push(`SELECT submitted_at, ${grouping.rawKey}, ${RAW_STATS_MEASURES.join(', ')}
       FROM ${WORKLOADS_WITH_AGGREGATE} WHERE ${where.join(' AND ')}
         AND submitted_at >= ${params.add(span.from)} AND submitted_at < ${params.add(span.to)}`);
  }
  facts.push(runningFactsSql(`submitted_at, ${grouping.rawKey}`, stats, request));
  const sets = request.groupBy
    ? 'GROUPING SETS ((bucket_index), (bucket_index, group_key))'
    : '(bucket_index)';
  const text = `SELECT width_bucket(fact_time, ${params.add(boundaries.slice(0, -1))}::timestamptz[]) AS bucket_index,
      ${request.groupBy ? 'GROUPING(group_key) = 1' : 'true'} AS is_summary,
      ${request.groupBy ? 'group_key' : 'NULL::text'} AS group_key,
      ${STATS_SUMS}
    FROM (${facts.join('\n UNION ALL ')}) AS facts(fact_time, group_key, ${STATS_FACT_COLUMNS.join(', ')})
    GROUP BY ${sets}
    ORDER BY ${request.groupBy ? '1, 2 DESC, 4 DESC, group_key COLLATE "C"' : '1'}`;
  return scopedStatement(scope, text, params.values);
}

export interface TimelineRow extends StatsRow {
  /** 1-based position of the bucket among the boundaries given. */
  bucket_index: number;
}
