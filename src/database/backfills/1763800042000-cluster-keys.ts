import type { DataSource, QueryRunner } from 'typeorm';
import { periodUpsertSql } from '../../rollups/workload-periods/workload-periods.definitions';
import type { Backfill } from './backfill';
import { type MonthPart, rebuildWaitHistograms } from './1763800032000-queue-wait-histograms';

/**
 * Rebuilds the period rollups and the wait histograms with the cluster in their keys, one
 * organization's UTC month per transaction under its writer lock, as the histograms' own backfill
 * does (its comment says why a part is safe to repeat and what readers see meanwhile).
 */
export const clusterKeysBackfill: Backfill = {
  name: '1763800042000-cluster-keys',
  async parts(dataSource: DataSource): Promise<MonthPart[]> {
    const rows = await dataSource.query<{ organization_id: string; month: Date }[]>(
      `SELECT DISTINCT organization_id, date_trunc('month', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month
       FROM workloads ORDER BY 1, 2`,
    );
    return rows.map((row) => ({ organizationId: row.organization_id, from: row.month }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from } = part as MonthPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
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
  },
};
