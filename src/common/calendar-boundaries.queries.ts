import type { AuthScope } from './auth/auth-scope';
import { organizationStatement, type ScopedStatement } from './database/scoped-statement';
import { StatementParameters } from './database/statement-parameters';

export const TIMELINE_INTERVALS = ['hour', 'day', 'week'] as const;
export type TimelineInterval = (typeof TIMELINE_INTERVALS)[number];

/** A timeline is drawn, not paged: as many buckets as a chart can show, like a series' points. */
export const MAX_TIMELINE_BUCKETS = 11_000;

/**
 * The boundaries of the buckets that overlap [from, to), in the organization's time zone: local
 * midnights (Mondays for weeks) from PostgreSQL's time zone database, so a DST day lasts 23 or 25
 * hours; hours step in absolute time from a local hour. The last boundary ends the last bucket.
 * At most one boundary more than the limit allows is made, so the caller can tell it was passed,
 * and no more than the range can need (its length over the shortest bucket: a 23-hour day, a week
 * less an hour): making and converting the limit's boundaries would cost every burn-down.
 * Each comes with its local date.
 */
export function timelineBoundariesQuery(
  scope: AuthScope,
  interval: TimelineInterval,
  from: Date,
  to: Date,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const unit = params.add(interval);
  const start = params.add(from);
  const end = params.add(to);
  const limit = params.add(MAX_TIMELINE_BUCKETS);
  return organizationStatement(
    scope,
    `WITH org AS (
       SELECT coalesce((SELECT gpucap_known_time_zone(timezone) FROM organizations WHERE organization_id = ${organization}), 'UTC') AS tz
     ),
     boundaries AS (
       SELECT CASE ${unit}::text
                WHEN 'hour' THEN (date_trunc('hour', ${start}::timestamptz AT TIME ZONE org.tz) AT TIME ZONE org.tz)
                                 + make_interval(hours => n)
                WHEN 'day' THEN (date_trunc('day', ${start}::timestamptz AT TIME ZONE org.tz) + make_interval(days => n))
                                AT TIME ZONE org.tz
                ELSE (date_trunc('week', ${start}::timestamptz AT TIME ZONE org.tz) + make_interval(weeks => n))
                     AT TIME ZONE org.tz
              END AS boundary
       FROM org, generate_series(0, least(${limit}::int, ceil(date_part('epoch', ${end}::timestamptz - ${start}::timestamptz)
                                   / CASE ${unit}::text WHEN 'hour' THEN 3600 WHEN 'day' THEN 82800 ELSE 601200 END)::int) + 1) AS n
     )
     SELECT b.boundary, to_char(b.boundary AT TIME ZONE org.tz, 'YYYY-MM-DD') AS local_date
     FROM org, (
       SELECT boundary FROM boundaries WHERE boundary < ${end}::timestamptz
       UNION ALL
       SELECT min(boundary) FROM boundaries WHERE boundary >= ${end}::timestamptz
     ) b
     ORDER BY 1`,
    params.values,
  );
}
