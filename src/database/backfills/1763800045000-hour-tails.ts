import type { DataSource, QueryRunner } from 'typeorm';
import { hourTailsSql } from '../../rollups/metric-aggregates/sample-hours.definitions';
import type { Backfill } from './backfill';

/** One part: an organization's hours of one week of blocks (a partition of each table). */
interface WeekPart {
  organizationId: string;
  weekStart: string;
}

/**
 * The largest readings of the hours stored before metric_sample_hours kept them, a week of an
 * organization per transaction under its writer lock (rule 1), so no writer rewrites those blocks
 * and their hours meanwhile, and a writer waits for one week's update at most. Until its part runs an
 * hour has none, and readers read it whole. A part only fills hours still without them: it repeats
 * safely.
 */
export const hourTailsBackfill: Backfill = {
  name: '1763800045000-hour-tails',
  async parts(dataSource: DataSource): Promise<WeekPart[]> {
    const rows = await dataSource.query<{ organization_id: string; week_start: Date }[]>(
      `SELECT DISTINCT organization_id, date_trunc('week', day_start, 'UTC') AS week_start
       FROM metric_sample_hours WHERE gpu_utilization_top IS NULL OR memory_utilization_top IS NULL
       ORDER BY 1, 2`,
    );
    return rows.map((row) => ({
      organizationId: row.organization_id,
      weekStart: row.week_start.toISOString(),
    }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, weekStart } = part as WeekPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await runner.query(
      `UPDATE metric_sample_hours h SET (gpu_utilization_top, memory_utilization_top) = (SELECT ${hourTailsSql('d', 'h')})
       FROM metric_sample_days d
       WHERE h.organization_id = $1 AND h.day_start >= $2::timestamptz AND h.day_start < $2::timestamptz + interval '7 days'
         AND (h.gpu_utilization_top IS NULL OR h.memory_utilization_top IS NULL)
         AND d.organization_id = h.organization_id AND d.workload_id = h.workload_id AND d.day_start = h.day_start
         AND d.day_start >= $2::timestamptz AND d.day_start < $2::timestamptz + interval '7 days'`,
      [organizationId, weekStart],
    );
  },
};
