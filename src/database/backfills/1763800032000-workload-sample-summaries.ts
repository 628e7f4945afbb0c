import type { QueryRunner } from 'typeorm';
import type { Backfill } from './backfill';

/**
 * The sample summaries of the finished workloads stored before their table existed, settled under
 * every organization's writer lock like any writer, so no import adds a sample meanwhile.
 */
export const workloadSampleSummaries: Backfill = {
  name: '1763800032000-workload-sample-summaries',
  async up(runner: QueryRunner): Promise<void> {
    const organizations: { organization_id: string }[] = await runner.query(
      'SELECT organization_id FROM organizations ORDER BY organization_id',
    );
    const ids = organizations.map((row) => row.organization_id);
    if (ids.length === 0) return;
    await runner.query('SELECT gpucap_lock_organizations($1::text[])', [ids]);
    await runner.query('SELECT gpucap_workload_summaries_settle($1::text[])', [ids]);
  },
};
