import type { AuthScope } from './auth/auth-scope';
import { type CurrencyMetadata, organizationCurrencyQuery } from './cost';
import type { ScopedDatabase } from './database/scoped-database';
import { organizationStatement, type ScopedStatement } from './database/scoped-statement';
import { StatementParameters } from './database/statement-parameters';
import { ApiError, type ErrorDetail } from './http/api-error';

/** The named ranges of the statistics (contract §4), which other range-taking reads follow. */
export const STATS_TIME_RANGES = [
  'today',
  'this_week',
  'this_month',
  'last_7_days',
  'last_30_days',
  'custom',
] as const;
export type StatsTimeRange = (typeof STATS_TIME_RANGES)[number];

/**
 * Start of a named range in the organization's time zone, computed by PostgreSQL (its time zone
 * database handles DST and half-hour offsets). `this_week` starts on Monday (ISO weeks).
 * The rolling ranges are exact hours: `interval '7 days'` would follow the session's DST rules.
 * With the organization's currency (null without prices), which decides whether statistics cost runs.
 */
export function resolveRangeStartQuery(scope: AuthScope, range: StatsTimeRange, now: Date): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const name = params.add(range);
  const at = params.add(now);
  return organizationStatement(
    scope,
    `SELECT CASE ${name}::text
        WHEN 'today' THEN date_trunc('day', ${at}::timestamptz AT TIME ZONE tz) AT TIME ZONE tz
        WHEN 'this_week' THEN date_trunc('week', ${at}::timestamptz AT TIME ZONE tz) AT TIME ZONE tz
        WHEN 'this_month' THEN date_trunc('month', ${at}::timestamptz AT TIME ZONE tz) AT TIME ZONE tz
        WHEN 'last_7_days' THEN ${at}::timestamptz - interval '168 hours'
        ELSE ${at}::timestamptz - interval '720 hours'
      END AS range_start,
      (SELECT currency FROM gpu_prices WHERE organization_id = ${organization} LIMIT 1) AS currency
      FROM (SELECT coalesce((SELECT gpucap_known_time_zone(timezone) FROM organizations WHERE organization_id = ${organization}), 'UTC') AS tz) AS org`,
    params.values,
  );
}

export interface TimeRangeQuery {
  time_range?: StatsTimeRange;
  start_date?: Date;
  end_date?: Date;
}

export interface TimeRangeBounds extends CurrencyMetadata {
  from: Date;
  to: Date;
}

/**
 * [from, to) of a range resolved by resolveTimeRangeName (a named range ends now), with the
 * organization's currency.
 */
export async function timeRangeBounds(
  database: ScopedDatabase,
  scope: AuthScope,
  timeRange: StatsTimeRange,
  query: TimeRangeQuery,
  now: Date,
): Promise<TimeRangeBounds> {
  if (timeRange === 'custom') {
    const [{ currency }] = await database.run<CurrencyMetadata>(organizationCurrencyQuery(scope));
    return { from: query.start_date as Date, to: query.end_date as Date, currency };
  }
  const [row] = await database.run<{ range_start: Date } & CurrencyMetadata>(
    resolveRangeStartQuery(scope, timeRange, now),
  );
  return { from: row.range_start, to: now, currency: row.currency };
}

export function assertDateOrder(start: Date | undefined, end: Date | undefined): void {
  if (start !== undefined && end !== undefined && start > end) {
    throw ApiError.invalidField('start_date', 'query', 'must not be after end_date', start.toISOString());
  }
}

/** Contract §4: omitted means last_30_days unless dates are given; custom needs both; dates only with custom. */
export function resolveTimeRangeName(query: TimeRangeQuery): StatsTimeRange {
  const hasDates = query.start_date !== undefined || query.end_date !== undefined;
  const timeRange = query.time_range ?? (hasDates ? 'custom' : 'last_30_days');
  const details: ErrorDetail[] = [];
  if (timeRange === 'custom') {
    for (const field of ['start_date', 'end_date'] as const) {
      if (query[field] === undefined) {
        details.push({ field, location: 'query', issue: 'is required with time_range=custom' });
      }
    }
  } else {
    for (const field of ['start_date', 'end_date'] as const) {
      const value = query[field];
      if (value !== undefined) {
        details.push({
          field,
          location: 'query',
          issue: `is only allowed with time_range=custom (got time_range=${timeRange})`,
          value: value.toISOString(),
        });
      }
    }
  }
  if (details.length > 0) throw ApiError.validation(details);
  assertDateOrder(query.start_date, query.end_date);
  return timeRange;
}
