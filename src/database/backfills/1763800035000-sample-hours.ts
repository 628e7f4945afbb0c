import type { QueryRunner } from 'typeorm';
import { SAMPLE_HOUR_COLUMNS } from '../../rollups/metric-aggregates/sample-hours.definitions';
import type { Backfill } from './backfill';

/**
 * The hour summaries of the day blocks stored before metric_sample_hours existed, under every
 * organization's writer lock so that no writer rewrites a block (and its hours) meanwhile. Blocks
 * written after the migration already have theirs; those are left as they are.
 */
export const sampleHoursBackfill: Backfill = {
  name: '1763800035000-sample-hours',
  async up(runner: QueryRunner): Promise<void> {
    await runner.query(
      'SELECT gpucap_lock_organizations(coalesce(array_agg(organization_id ORDER BY organization_id), ARRAY[]::text[])) FROM organizations',
    );
    await runner.query(`
      INSERT INTO metric_sample_hours (organization_id, workload_id, day_start, ${SAMPLE_HOUR_COLUMNS.join(', ')})
      SELECT d.organization_id, d.workload_id, d.day_start, s.*
      FROM metric_sample_days d
      CROSS JOIN LATERAL gpucap_sample_hour_rows(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s
      WHERE NOT EXISTS (
        SELECT 1 FROM metric_sample_hours h
        WHERE h.organization_id = d.organization_id AND h.workload_id = d.workload_id AND h.day_start = d.day_start)
      ORDER BY 1, 2, 3, 4`);
  },
};
