import type { DataSource, QueryRunner } from 'typeorm';
import { ENERGY_COLUMNS } from '../../rollups/metric-aggregates/energy.definitions';
import type { Backfill } from './backfill';

/** One part: an organization's aggregates whose latest reading is in one UTC month. */
interface MonthPart {
  organizationId: string;
  from: Date;
}

/**
 * The energy, carbon and uncovered energy of the aggregates stored before they were kept
 * (src/rollups/metric-aggregates/energy.definitions.ts), recomputed from the stored readings by
 * gpucap_held_energy, the parts the triggers add; readings pruned before then are not counted. One
 * organization's month per transaction under its writer lock, so no writer changes a reading
 * meanwhile and a part written again finds nothing different.
 */
export const energyBackfill: Backfill = {
  name: '1763800040000-energy',
  async parts(dataSource: DataSource): Promise<MonthPart[]> {
    const rows = await dataSource.query<{ organization_id: string; month: Date }[]>(
      `SELECT DISTINCT organization_id, date_trunc('month', latest_sampled_at, 'UTC') AS month
       FROM metric_aggregates WHERE sample_count > 0 ORDER BY 1, 2`,
    );
    return rows.map((row) => ({ organizationId: row.organization_id, from: row.month }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId, from } = part as MonthPart;
    const stored = ENERGY_COLUMNS.map((column) => `a.${column}`).join(', ');
    const settled = ENERGY_COLUMNS.map((column) => `e.${column}`).join(', ');
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await runner.query(
      `UPDATE metric_aggregates a SET (${ENERGY_COLUMNS.join(', ')}) = (${settled})
       FROM organizations o
       CROSS JOIN LATERAL (
         SELECT m.workload_id, w.cluster_id, m.first_sampled_at, m.latest_sampled_at
         FROM metric_aggregates m
         LEFT JOIN workloads w ON w.organization_id = m.organization_id AND w.workload_id = m.workload_id
         WHERE m.organization_id = o.organization_id AND m.sample_count > 0
           AND m.latest_sampled_at >= $2
           AND m.latest_sampled_at < (($2::timestamptz AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
       ) AS k
       CROSS JOIN LATERAL gpucap_held_energy(o.organization_id, k.workload_id, k.cluster_id, o.max_sample_gap_seconds,
                                             k.first_sampled_at, k.latest_sampled_at) e
       WHERE o.organization_id = $1 AND a.organization_id = o.organization_id AND a.workload_id = k.workload_id
         AND (${stored}) IS DISTINCT FROM (${settled})`,
      [organizationId, from],
    );
  },
};
