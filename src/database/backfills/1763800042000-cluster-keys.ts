import type { DataSource, QueryRunner } from 'typeorm';
import { capacityUpsertSql, signedRunsSql } from '../../rollups/capacity-usage/capacity-usage.definitions';
import { periodUpsertSql } from '../../rollups/workload-periods/workload-periods.definitions';
import type { Backfill } from './backfill';
import { type MonthPart, rebuildWaitHistograms } from './1763800032000-queue-wait-histograms';

/**
 * Rebuilds the period rollups, the wait histograms and the capacity rollups with the cluster in their
 * keys, one organization's UTC month per transaction under its writer lock, as the histograms' own
 * backfill does (its comment says why a part is safe to repeat and what readers see meanwhile): the
 * rows of the workloads submitted in the month, and the capacity rows of the month's usage days from
 * the runs that overlap it. The months run from the first submission to the last run's end; the
 * first also rebuilds the organization's ranked status totals, kept per cluster.
 */
/** A month of one organization; its first also rebuilds the organization's status totals. */
interface KeyPart extends MonthPart {
  firstOfOrganization: boolean;
}

export const clusterKeysBackfill: Backfill = {
  name: '1763800042000-cluster-keys',
  async parts(dataSource: DataSource): Promise<KeyPart[]> {
    const rows = await dataSource.query<{ organization_id: string; month: Date }[]>(
      `SELECT organization_id, month AT TIME ZONE 'UTC' AS month
       FROM (SELECT organization_id, date_trunc('month', min(submitted_at) AT TIME ZONE 'UTC') AS first_month,
                    date_trunc('month', greatest(max(submitted_at), max(completed_at)) AT TIME ZONE 'UTC') AS last_month
             -- A time written past the importer ('infinity') would make the months endless.
             FROM workloads WHERE isfinite(submitted_at) AND (completed_at IS NULL OR isfinite(completed_at))
             GROUP BY organization_id) AS span
       CROSS JOIN LATERAL generate_series(first_month, last_month, interval '1 month') AS month
       ORDER BY 1, 2`,
    );
    return rows.map((row, index) => ({
      organizationId: row.organization_id,
      from: row.month,
      firstOfOrganization: index === 0 || rows[index - 1].organization_id !== row.organization_id,
    }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from, firstOfOrganization } = part as KeyPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    if (firstOfOrganization) {
      // The status totals are per organization, not per month: rebuilt with its first month.
      await runner.query('DELETE FROM workload_status_totals WHERE organization_id = $1', [organizationId]);
      await runner.query(
        // Every amount the totals keep: an earlier backfill may already have settled some (energy).
        `INSERT INTO workload_status_totals (organization_id, initiative_id, status, cluster_id, workload_count,
           gpu_seconds_sum, costed_count, cost_unit_us_sum, energy_count, energy_microjoules_sum)
         SELECT organization_id, initiative_id, status, cluster_id, count(*),
                coalesce(sum((gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint), 0),
                count(cost_unit_us), coalesce(sum(cost_unit_us), 0),
                count(energy_microjoules), coalesce(sum(energy_microjoules), 0)
         FROM workloads WHERE organization_id = $1 GROUP BY 1, 2, 3, 4`,
        [organizationId],
      );
    }
    const monthEnd = `(($2::timestamptz AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'`;
    await runner.query(
      `DELETE FROM workload_period_rollups WHERE organization_id = $1 AND bucket_start >= $2::timestamptz
         AND bucket_start < ${monthEnd}`,
      [organizationId, from],
    );
    await runner.query(
      periodUpsertSql([
        {
          rows: `(SELECT * FROM workloads WHERE organization_id = $1 AND submitted_at >= $2::timestamptz
                    AND submitted_at < ${monthEnd}) AS part`,
          sign: 1,
        },
      ]),
      [organizationId, from],
    );
    await rebuildWaitHistograms(runner, { organizationId, from });
    const monthDays = `usage_day >= ($2::timestamptz AT TIME ZONE 'UTC')::date
      AND usage_day < (($2::timestamptz AT TIME ZONE 'UTC') + interval '1 month')::date`;
    for (const table of ['capacity_usage_daily', 'capacity_usage_hourly']) {
      await runner.query(`DELETE FROM ${table} WHERE organization_id = $1 AND ${monthDays}`, [
        organizationId,
        from,
      ]);
    }
    await runner.query(
      capacityUpsertSql(
        signedRunsSql(
          `(SELECT * FROM workloads WHERE organization_id = $1 AND started_at < ${monthEnd}
              AND completed_at > $2::timestamptz) AS part`,
          1,
        ),
        monthDays,
      ),
      [organizationId, from],
    );
  },
};
