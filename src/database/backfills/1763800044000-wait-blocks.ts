import type { DataSource, QueryRunner } from 'typeorm';
import type { Backfill } from './backfill';
import { rebuildWaitBlocks } from './1763800032000-queue-wait-histograms';

/** One part: an organization, all of whose block rows it rebuilds. */
interface OrganizationPart {
  organizationId: string;
}

/**
 * Writes the queue-wait block rows (src/rollups/queue-waits/) from the day rows, one organization per
 * transaction under its writer lock (rule 1): sums of a few hundred thousand rows at most, so a
 * writer waits seconds, not the whole table's time. A part deletes and rewrites its organization's
 * blocks, so it repeats safely.
 */
export const waitBlocksBackfill: Backfill = {
  name: '1763800044000-wait-blocks',
  async parts(dataSource: DataSource): Promise<OrganizationPart[]> {
    const rows = await dataSource.query<{ organization_id: string }[]>(
      `SELECT DISTINCT organization_id FROM workload_period_waits WHERE period = 'day' ORDER BY 1`,
    );
    return rows.map((row) => ({ organizationId: row.organization_id }));
  },
  async up(runner: QueryRunner, part: unknown): Promise<void> {
    const { organizationId } = part as OrganizationPart;
    await runner.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [organizationId]);
    await rebuildWaitBlocks(
      runner,
      organizationId,
      new Date(Date.UTC(1970, 0, 1)),
      new Date(Date.UTC(9999, 0, 1)),
    );
  },
};
