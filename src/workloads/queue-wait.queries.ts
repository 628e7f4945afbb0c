import type { AuthScope } from '../common/auth/auth-scope';
import { type ScopedStatement, scopedStatement } from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import {
  exactWaitFiguresSql,
  WAIT_FACT_COLUMNS,
  waitFactsSql,
  waitFiguresSql,
} from '../rollups/queue-waits/queue-waits.queries';
import { GROUPING, statsConditions, type StatsRequest } from './workload-stats.queries';
import { readsOnlyRaw, waitStarts } from '../rollups/workload-periods/period-split';
import { bucketSpans } from './workload-timeline.queries';

/**
 * Queue wait and pending demand of the workloads submitted in a stats range. Waits come from the
 * queue-wait histograms (src/rollups/queue-waits/): whole UTC days and hours from their rows, the
 * partial hours at the edges (and every submitter read) from raw rows; started, average and largest are
 * exact, p50 and p95 within 1 % (docs/architecture.md, "Queue wait"). Pending workloads are the short
 * stored queue, read as stored through workloads_org_status_submitted, like the running workloads of
 * the statistics.
 */

/** The figures of the pending workloads among the fact rows, for QueueWaitRow. */
const PENDING_FIGURES_SQL = `count(*) FILTER (WHERE is_pending)::float8 AS pending_count,
      coalesce(sum(gpu_count), 0)::float8 AS pending_gpus,
      coalesce(sum(gpu_share_units), 0)::float8 AS pending_share_units,
      min(submitted_at) FILTER (WHERE is_pending) AS oldest_submitted_at`;

/** One row per pending workload submitted in the range: `leading` columns, submitted_at, true, its GPUs. */
function pendingFactsSql(
  leading: string,
  where: string[],
  params: StatementParameters,
  request: StatsRequest,
) {
  return `SELECT ${leading}, submitted_at, true, gpu_count, gpu_share_units
      FROM workloads WHERE ${where.join(' AND ')} AND status = 'pending'
        AND submitted_at >= ${params.add(request.from)} AND submitted_at < ${params.add(request.to)}`;
}

/**
 * The summary and, with `group_by`, each group (GROUPING SETS); with the `boundaries` of a timeline
 * (as for workloadTimelineQuery), the same per bucket too, each workload in the bucket of its
 * submission. Two parts, each set's figures then taken from the one that has them: the merged wait
 * histograms, and the pending workloads.
 */
export function queueWaitQuery(
  scope: AuthScope,
  request: StatsRequest,
  boundaries?: Date[],
): ScopedStatement {
  // No running workload accrues here: a clock the statement does not read would be an untyped parameter.
  const params = new StatementParameters(scope);
  const where = statsConditions(params, scope, request);
  const grouping = GROUPING[request.groupBy ?? 'none'];
  const keys = request.groupBy ? [[], ['group_key']] : [[]];
  const keySets = boundaries ? [...keys, ...keys.map((key) => ['bucket_index', ...key])] : keys;
  const sets = (extra: string[]) => keySets.map((set) => `(${[...set, ...extra].join(', ')})`).join(', ');
  const bucketOf = (time: string) =>
    boundaries
      ? `width_bucket(${time}, ${params.add(boundaries.slice(0, -1))}::timestamptz[])`
      : 'NULL::integer';
  const setColumns = `${boundaries ? 'bucket_index' : 'NULL::integer AS bucket_index'}, ${request.groupBy ? 'GROUPING(group_key) = 1' : 'true'} AS is_summary,
      ${request.groupBy ? 'group_key' : 'NULL::text'} AS group_key`;
  const setKeys = ['bucket_index', 'is_summary', 'group_key'];

  // No histograms per submitter (queue-waits.definitions.ts): their waits are read from the queue index.
  const starts =
    request.groupBy === 'submitted_by'
      ? {
          days: [],
          hours: [],
          raw: [{ from: request.from, to: request.to }],
          blocks: [],
        }
      : waitStarts(bucketSpans(request, boundaries));
  const waitFacts = waitFactsSql({ params, where, ...grouping, ...starts }).join('\n UNION ALL ');
  const bucketedWaits = `SELECT ${bucketOf('fact_time')} AS bucket_index, facts.*
      FROM (${waitFacts}) AS facts(fact_time, group_key, ${WAIT_FACT_COLUMNS.join(', ')})`;
  // Read raw alone, the waits themselves are cheaper to take exactly than to merge as histograms.
  const waits = readsOnlyRaw(starts)
    ? exactWaitFiguresSql(bucketedWaits, setColumns, sets([]))
    : waitFiguresSql(
        `SELECT ${setColumns}, wait_bucket, sum(started_count) AS n, sum(wait_seconds_sum) AS total_wait,
             max(wait_seconds_max) AS largest
           FROM (${bucketedWaits}) AS bucketed GROUP BY GROUPING SETS (${sets(['wait_bucket'])})`,
        setKeys,
      );

  const pending = pendingFactsSql(grouping.rawKey, where, params, request);
  const others = `SELECT ${setColumns}, ${PENDING_FIGURES_SQL}
      FROM (SELECT ${bucketOf('submitted_at')} AS bucket_index, facts.*
            FROM (${pending}) AS facts(group_key, submitted_at, is_pending, gpu_count, gpu_share_units)) AS bucketed
      GROUP BY GROUPING SETS (${sets([])})`;

  const waitColumns = ['started', 'avg_seconds', 'p50_seconds', 'p95_seconds', 'max_seconds'];
  const otherColumns = ['pending_count', 'pending_gpus', 'pending_share_units', 'oldest_submitted_at'];
  const nulls = (columns: string[]) => columns.map((column) => `NULL AS ${column}`).join(', ');
  // Every part's rows by set; a set present in one part only gets the other's "none" figures.
  const text = `SELECT ${setKeys.join(', ')},
      coalesce(max(started), 0) AS started, max(avg_seconds) AS avg_seconds, max(p50_seconds) AS p50_seconds,
      max(p95_seconds) AS p95_seconds, max(max_seconds) AS max_seconds,
      coalesce(max(pending_count), 0) AS pending_count, coalesce(max(pending_gpus), 0) AS pending_gpus,
      coalesce(max(pending_share_units), 0) AS pending_share_units, max(oldest_submitted_at) AS oldest_submitted_at
    FROM (SELECT ${setKeys.join(', ')}, ${waitColumns.join(', ')}, ${nulls(otherColumns)}
          FROM (${waits}) AS waits
          UNION ALL
          SELECT ${setKeys.join(', ')}, ${nulls(waitColumns)}, ${otherColumns.join(', ')}
          FROM (${others}) AS others) AS parts
    GROUP BY ${setKeys.join(', ')}`;
  return scopedStatement(scope, text, params.values);
}

export interface QueueWaitRow {
  /** 1-based position of the bucket among the boundaries given; null for the whole range. */
  bucket_index: number | null;
  is_summary: boolean;
  group_key: string | null;
  started: number;
  /** Seconds; null when nothing started. */
  avg_seconds: number | null;
  p50_seconds: number | null;
  p95_seconds: number | null;
  max_seconds: number | null;
  pending_count: number;
  pending_gpus: number;
  /** Share units (src/common/gpu-sharing.ts). */
  pending_share_units: number;
  oldest_submitted_at: Date | null;
}
