import type { DataSource, QueryRunner } from 'typeorm';
import { settleWorkloadsSql } from '../../rollups/workload-costs/workload-costs.definitions';
import type { Backfill } from './backfill';

/** One part: an organization's workloads submitted in one UTC month. */
interface MonthPart {
  organizationId: string;
  from: Date;
}

/**
 * Settles the amounts of the stored workloads that are not running (src/rollups/workload-costs/),
 * one organization's UTC month per transaction under that organization's writer lock (rule 1). It is
 * an UPDATE of the workloads rows, so their own triggers carry each change into the period rollups and
 * status totals as they carry any other; a part that runs again finds nothing different and writes
 * nothing. The service of the previous release reads none of this; this release's serves once
 * `gpucap migrate` has finished (docs/architecture.md, "Schema").
 */
export const settledCostsBackfill: Backfill = {
  name: '1763800036000-settled-costs',
  async parts(dataSource: DataSource): Promise<MonthPart[]> {
    const rows = await dataSource.query<{ organization_id: string; month: Date }[]>(
      `SELECT DISTINCT organization_id, date_trunc('month', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month
       FROM workloads WHERE instance_type IN (SELECT instance_type FROM gpu_prices p WHERE p.organization_id = workloads.organization_id)
       ORDER BY 1, 2`,
    );
    return rows.map((row) => ({ organizationId: row.organization_id, from: row.month }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from } = part as MonthPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await runner.query(
      settleWorkloadsSql('(SELECT $1::text AS organization_id, $2::timestamptz AS month_start) AS part', [
        'o.organization_id = part.organization_id AND o.submitted_at >= part.month_start',
        "o.submitted_at < ((part.month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'",
      ]),
      [organizationId, from],
    );
  },
};
