import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { projectRoot } from '../src/core/project-root';
import { migrate } from '../src/database/database-target';
import { EmbeddedDatabase } from '../src/database/embedded-database';
import {
  createDatabase,
  dropDatabase,
  TEST_DATABASE_PREFIX,
  withDatabaseName,
} from '../test/support/test-database';
import { freePort } from '../test/support/serve-process';
import { dumpSchema } from './schema-dump';

/**
 * Rewrites docs/sql/schema.sql: `npm run schema:generate`. Migrates a throwaway database on the
 * server DATABASE_URL names, or else on the tests' embedded PostgreSQL, dumps it and drops it.
 */
async function main(): Promise<void> {
  let serverUrl = process.env.DATABASE_URL;
  let embedded: EmbeddedDatabase | undefined;
  if (!serverUrl) {
    const database = new EmbeddedDatabase({
      directory: join(projectRoot(), '.gpucap', 'test-pgdata'),
      port: process.env.TEST_EMBEDDED_PG_PORT ? Number(process.env.TEST_EMBEDDED_PG_PORT) : await freePort(),
    });
    serverUrl = database.runningUrl();
    if (!serverUrl) {
      serverUrl = await database.start();
      embedded = database;
    }
  }
  const name = `${TEST_DATABASE_PREFIX}schema_${process.pid}_${Date.now().toString(36)}`;
  const url = withDatabaseName(serverUrl, name);
  try {
    await createDatabase(serverUrl, name);
    await migrate(url);
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const schema = await dumpSchema(async (sql) => (await client.query(sql)).rows);
      writeFileSync(join(projectRoot(), 'docs', 'sql', 'schema.sql'), schema);
    } finally {
      await client.end();
    }
  } finally {
    await dropDatabase(serverUrl, name);
    await embedded?.stop();
  }
  console.log('docs/sql: schema.sql');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
