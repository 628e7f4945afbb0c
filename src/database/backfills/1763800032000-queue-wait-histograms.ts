import type { DataSource, QueryRunner } from 'typeorm';
import {
  blocksFromDaysSql,
  changedBucketsSql,
  periodLengthSql,
} from '../../rollups/queue-waits/queue-waits.definitions';
import type { Backfill } from './backfill';

/** One part: an organization's workloads submitted in one UTC month, whose histogram rows it rebuilds. */
export interface MonthPart {
  organizationId: string;
  from: Date;
}

/**
 * Fills workload_period_waits from the workloads, grouped as its triggers group a statement's rows,
 * one organization's UTC month per transaction under that organization's writer lock (rule 1): a
 * writer waits for at most one month's rebuild, never for the whole table. A part deletes and
 * recomputes exactly the rows keyed in its month (every day and hour lies in one month), so rows the
 * triggers kept meanwhile, in that month or any other, are never counted twice, and a stopped run
 * repeats its parts safely. The service of the previous release reads none of this; this release's
 * serves once `gpucap migrate` has finished (docs/architecture.md, "Schema").
 */
/** The UTC months in which each organization submitted workloads that `condition` keeps, in order. */
export async function submissionMonths(dataSource: DataSource, condition: string): Promise<MonthPart[]> {
  const rows = await dataSource.query<{ organization_id: string; month: Date }[]>(
    `SELECT DISTINCT organization_id, date_trunc('month', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month
     FROM workloads WHERE ${condition} ORDER BY 1, 2`,
  );
  return rows.map((row) => ({ organizationId: row.organization_id, from: row.month }));
}

/**
 * A month part as a FROM item (`part`, its placeholders $1 organization and $2 month start), and the
 * conditions that pick its workloads `o`: for settling UPDATEs that take one part at a time.
 */
export const MONTH_PART_FROM = '(SELECT $1::text AS organization_id, $2::timestamptz AS month_start) AS part';
export const IN_MONTH_PART = [
  'o.organization_id = part.organization_id AND o.submitted_at >= part.month_start',
  "o.submitted_at < ((part.month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'",
];

export const queueWaitHistogramsBackfill: Backfill = {
  name: '1763800032000-queue-wait-histograms',
  parts: (dataSource: DataSource) => submissionMonths(dataSource, 'started_at IS NOT NULL'),
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [(part as MonthPart).organizationId]);
    await rebuildWaitHistograms(runner, part as MonthPart);
  },
};

/**
 * Deletes and recomputes the day and hour histogram rows keyed in one organization's UTC month, then
 * the blocks that overlap it from the days; its writer lock held. A block reaching into a month not
 * yet rebuilt is rebuilt again with that month.
 */
export async function rebuildWaitHistograms(
  runner: QueryRunner,
  { organizationId, from }: MonthPart,
): Promise<void> {
  const month = `$2::timestamptz AND bucket_start < (($2::timestamptz AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'`;
  await runner.query(
    `DELETE FROM workload_period_waits WHERE organization_id = $1 AND period IN ('day', 'hour') AND bucket_start >= ${month}`,
    [organizationId, from],
  );
  const rows = `(SELECT * FROM workloads WHERE organization_id = $1 AND submitted_at >= $2::timestamptz
        AND submitted_at < (($2::timestamptz AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC') AS part`;
  await runner.query(
    `INSERT INTO workload_period_waits (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
     SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket,
            started_count, wait_seconds_sum, added_max
     FROM (${changedBucketsSql([{ rows, sign: 1 }], ['day', 'hour'])}) AS c`,
    [organizationId, from],
  );
  // The month's end as PostgreSQL computes it: a month part may start at 'infinity'.
  const [{ end }]: { end: Date }[] = await runner.query(
    `SELECT (($1::timestamptz AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' AS end`,
    [from],
  );
  await rebuildWaitBlocks(runner, organizationId, from, end);
}

/** Deletes and recomputes from the day rows an organization's block rows overlapping [from, to); its writer lock held. */
export async function rebuildWaitBlocks(
  runner: QueryRunner,
  organizationId: string,
  from: Date,
  to: Date,
): Promise<void> {
  await runner.query(
    `DELETE FROM workload_period_waits
     WHERE organization_id = $1 AND period NOT IN ('day', 'hour')
       AND bucket_start < $3 AND bucket_start + ${periodLengthSql('period')} > $2`,
    [organizationId, from, to],
  );
  await runner.query(
    `INSERT INTO workload_period_waits (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
     ${blocksFromDaysSql()}`,
    [organizationId, from, to],
  );
}
