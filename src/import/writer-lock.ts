import type { DataSource, EntityManager } from 'typeorm';

/** Takes the writer locks of the organizations in `$1` (text[]): the first statement of every writer. */
export const LOCK_ORGANIZATIONS_SQL = 'SELECT gpucap_lock_organizations($1::text[])';

/**
 * Runs `work` in a transaction that first holds the writer lock of every organization it will write
 * (docs/architecture.md, "Writers"). Writes to workloads or metric samples outside one are refused by
 * the database's triggers, so this is the only way in for a writer that is not the bulk loader.
 */
export async function withWriterLock<T>(
  dataSource: DataSource,
  organizationIds: readonly string[],
  work: (manager: EntityManager) => Promise<T>,
): Promise<T> {
  return dataSource.transaction(async (manager) => {
    await manager.query(LOCK_ORGANIZATIONS_SQL, [organizationIds]);
    return work(manager);
  });
}
