import type { DataSource } from 'typeorm';
import { migrate, openDataSource } from '../../src/database/database-target';
import { createDatabase, dropDatabase, TEST_DATABASE_PREFIX, withDatabaseName } from './test-database';

export interface OwnDatabase {
  url: string;
  dataSource: DataSource;
  drop(): Promise<void>;
}

/**
 * A migrated database of the test file's own, for tests whose writes reach every organization
 * (prune drops shared weekly partitions, TRUNCATE empties whole tables).
 */
export async function createOwnDatabase(label: string, poolSize = 4): Promise<OwnDatabase> {
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL as string;
  const name = `${TEST_DATABASE_PREFIX}${label}_${process.pid}_${Date.now().toString(36)}`;
  const url = withDatabaseName(serverUrl, name);
  await createDatabase(serverUrl, name);
  await migrate(url);
  const dataSource = await openDataSource(url, poolSize);
  return {
    url,
    dataSource,
    drop: async () => {
      await dataSource.destroy();
      await dropDatabase(serverUrl, name);
    },
  };
}
