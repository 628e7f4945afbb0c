import type { DataSource, QueryRunner } from 'typeorm';
import { settleWorkloadsSql } from '../../rollups/workload-costs/workload-costs.definitions';
import type { Backfill } from './backfill';
import {
  IN_MONTH_PART,
  MONTH_PART_FROM,
  type MonthPart,
  submissionMonths,
} from './1763800032000-queue-wait-histograms';

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
  parts: (dataSource: DataSource) =>
    submissionMonths(
      dataSource,
      'instance_type IN (SELECT instance_type FROM gpu_prices p WHERE p.organization_id = workloads.organization_id)',
    ),
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from } = part as MonthPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await runner.query(settleWorkloadsSql(MONTH_PART_FROM, IN_MONTH_PART), [organizationId, from]);
  },
};
