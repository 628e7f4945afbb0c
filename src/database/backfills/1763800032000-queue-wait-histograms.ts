import type { QueryRunner } from 'typeorm';
import { changedBucketsSql } from '../../rollups/queue-waits/queue-waits.definitions';
import type { Backfill } from './backfill';

/**
 * Fills workload_period_waits from the workloads, grouped as its triggers group a statement's rows.
 * It first takes every organization's writer lock (rule 1), so no writer runs meanwhile: rows the
 * triggers added between the definitions and this transaction are replaced by the recomputation, not
 * counted twice. Readers are never blocked; until it commits they see the table as it was (empty on
 * an upgrade: queue-wait figures read as if nothing had started).
 */
export const queueWaitHistogramsBackfill: Backfill = {
  name: '1763800032000-queue-wait-histograms',
  async up(runner: QueryRunner): Promise<void> {
    await runner.query(
      'SELECT gpucap_lock_organizations(coalesce(array_agg(organization_id), ARRAY[]::text[])) FROM organizations',
    );
    await runner.query('DELETE FROM workload_period_waits');
    await runner.query(`
      INSERT INTO workload_period_waits (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
      SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, wait_bucket,
             started_count, wait_seconds_sum, added_max
      FROM (${changedBucketsSql(['workloads'])}) AS c`);
  },
};
