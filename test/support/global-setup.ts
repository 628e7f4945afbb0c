import { migrate } from '../../src/database/database-target';
import { EmbeddedDatabase } from '../../src/database/embedded-database';
import { projectRoot } from '../../src/core/project-root';
import { createDatabase, TEST_DATABASE_PREFIX, withDatabaseName } from './test-database';
import { join } from 'node:path';
import { freePort } from './serve-process';

/**
 * Creates one throwaway database for the whole e2e run and applies the real migrations to it.
 * DATABASE_URL names the server to use (CI: the machine's PostgreSQL); without it the tests run on
 * their own embedded PostgreSQL, separate from the one `gpucap serve` uses.
 */
export default async function globalSetup(): Promise<void> {
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = new EmbeddedDatabase({
      directory: join(projectRoot(), '.gpucap', 'test-pgdata'),
      // A free port unless one is asked for: two checkouts' test runs never meet on one.
      port: process.env.TEST_EMBEDDED_PG_PORT ? Number(process.env.TEST_EMBEDDED_PG_PORT) : await freePort(),
    });
    serverUrl = await embedded.start();
    (globalThis as { __GPUCAP_EMBEDDED__?: EmbeddedDatabase }).__GPUCAP_EMBEDDED__ = embedded;
  }
  const name = `${TEST_DATABASE_PREFIX}${process.pid}_${Date.now().toString(36)}`;
  await createDatabase(serverUrl, name);
  const url = withDatabaseName(serverUrl, name);
  await migrate(url);
  process.env.GPUCAP_TEST_SERVER_URL = serverUrl;
  process.env.GPUCAP_TEST_DATABASE = name;
  process.env.GPUCAP_TEST_DATABASE_URL = url;
}
