import { Client } from 'pg';

/** The cleanup refuses any database whose name does not say it is a throwaway test database. */
export const TEST_DATABASE_PREFIX = 'gpucap_test_';

export function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export async function createDatabase(serverUrl: string, name: string): Promise<void> {
  assertTestName(name);
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    // Byte-order collation whatever the server's default, as the embedded and compose clusters use.
    await admin.query(
      `CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`,
    );
  } finally {
    await admin.end();
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  assertTestName(name);
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

function assertTestName(name: string): void {
  if (!name.startsWith(TEST_DATABASE_PREFIX) || !/^[a-z0-9_]+$/.test(name)) {
    throw new Error(`Refusing to create or drop '${name}': not a test database name`);
  }
}
