/*
 * What readers take of the ranked totals: per (initiative, status) counts and sums, added up over
 * the statuses bound at `statuses` (a text[] placeholder) for the organization bound at
 * `organization`, over the rows `inScope` lets through (its filter on the alias `t`). A ranked page's
 * total_count and scope_average then never grow with the workloads in scope.
 */

type InScope = (alias: string) => string;

function totalsWhereSql(organization: string, statuses: string, inScope: InScope): string {
  return `t.organization_id = ${organization} AND t.status = ANY (${statuses}::text[]) AND ${inScope('t')}`;
}

/** total_count and scope_average of a lifetime sample average (`metric` from a fixed list, never input). */
export function averageTotalsSql(
  metric: string,
  organization: string,
  statuses: string,
  inScope: InScope,
): string {
  return `
    SELECT coalesce(sum(t.workload_count), 0)::int AS total_count,
           (sum(t.${metric}_avg_sum) / nullif(sum(t.workload_count), 0))::float8 AS scope_average
    FROM metric_ranked_totals t
    WHERE ${totalsWhereSql(organization, statuses, inScope)}`;
}

/** workload_count and gpu_seconds_sum (share-unit seconds) of the settled workloads. */
export function gpuSecondsTotalsSql(organization: string, statuses: string, inScope: InScope): string {
  return `
      SELECT coalesce(sum(t.workload_count), 0) AS workload_count, coalesce(sum(t.gpu_seconds_sum), 0) AS gpu_seconds_sum
      FROM workload_status_totals t
      WHERE ${totalsWhereSql(organization, statuses, inScope)}`;
}

/** workload_count and idle_sum (numeric idle GPU-hours) of the settled sampled workloads. */
export function idleGpuHoursTotalsSql(organization: string, statuses: string, inScope: InScope): string {
  return `
      SELECT coalesce(sum(t.workload_count), 0) AS workload_count, coalesce(sum(t.idle_gpu_hours_sum), 0) AS idle_sum
      FROM metric_ranked_totals t
      WHERE ${totalsWhereSql(organization, statuses, inScope)}`;
}
