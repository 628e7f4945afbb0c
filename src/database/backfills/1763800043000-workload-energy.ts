import type { DataSource, QueryRunner } from 'typeorm';
import { settleWorkloadEnergySql } from '../../rollups/workload-energy/workload-energy.definitions';
import type { Backfill } from './backfill';
import {
  IN_MONTH_PART,
  MONTH_PART_FROM,
  type MonthPart,
  submissionMonths,
} from './1763800032000-queue-wait-histograms';

/**
 * Settles the energy of the stored workloads that are not running and have samples
 * (src/rollups/workload-energy/), one organization's UTC month per transaction under that
 * organization's writer lock (rule 1). Like the settled costs, it is an UPDATE of the workloads rows,
 * so their own triggers carry each change into the period rollups and status totals; a part that
 * runs again finds nothing different and writes nothing.
 */
export const workloadEnergyBackfill: Backfill = {
  name: '1763800043000-workload-energy',
  parts: (dataSource: DataSource) =>
    submissionMonths(
      dataSource,
      `EXISTS (SELECT 1 FROM metric_aggregates a
               WHERE a.organization_id = workloads.organization_id AND a.workload_id = workloads.workload_id)`,
    ),
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from } = part as MonthPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await runner.query(settleWorkloadEnergySql(MONTH_PART_FROM, IN_MONTH_PART), [organizationId, from]);
  },
};
