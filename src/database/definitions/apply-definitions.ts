import type { DataSource, QueryRunner } from 'typeorm';
import type { Definition } from './definition';

/**
 * What `gpucap migrate` last applied: one row per definition with the digest of its text. Bookkeeping
 * like the migrations table, created here rather than by a migration, and not part of the schema.
 */
export const DEFINITIONS_TABLE = 'schema_definitions';

/** How long to wait before trying the tables' locks again, and how many times in all. */
const LOCK_RETRY_MS = 200;
const LOCK_ATTEMPTS = 300;
const LOCK_NOT_AVAILABLE = '55P03';

interface Recorded {
  kind: Definition['kind'];
  key: string;
  digest: string;
}

export interface DefinitionChanges {
  changed: Definition[];
  removed: Recorded[];
}

/** Definitions whose text differs from (or is missing in) the record, and recorded ones no longer defined. */
export async function definitionChanges(
  dataSource: DataSource | QueryRunner,
  definitions: readonly Definition[],
): Promise<DefinitionChanges> {
  const [{ present }] = await dataSource.query<{ present: boolean }[]>(
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [DEFINITIONS_TABLE],
  );
  const recorded: Recorded[] = present
    ? await dataSource.query<Recorded[]>(`SELECT kind, key, digest FROM ${DEFINITIONS_TABLE}`)
    : [];
  const byKey = new Map(recorded.map((row) => [`${row.kind}:${row.key}`, row.digest]));
  const defined = new Set(definitions.map((definition) => `${definition.kind}:${definition.key}`));
  return {
    changed: definitions.filter((d) => byKey.get(`${d.kind}:${d.key}`) !== d.digest),
    removed: recorded.filter((row) => !defined.has(`${row.kind}:${row.key}`)),
  };
}

/**
 * Applies the definitions that changed since the last run, and drops the ones removed, in one
 * transaction; returns the keys it touched. With nothing changed it runs no DDL at all, so applying
 * twice changes nothing and a restart takes no lock.
 *
 * Replacing a trigger takes SHARE ROW EXCLUSIVE on its table, which conflicts with every writer. The
 * tables are taken first, all at once and NOWAIT, and the attempt is retried after a pause: this
 * transaction never waits while holding a lock, so it cannot close a deadlock cycle with a writer,
 * and writers only wait for it to commit.
 */
export async function applyDefinitions(
  dataSource: DataSource,
  definitions: readonly Definition[],
): Promise<string[]> {
  assertUniqueKeys(definitions);
  for (let attempt = 1; ; attempt += 1) {
    const runner = dataSource.createQueryRunner();
    try {
      await runner.query(
        `CREATE TABLE IF NOT EXISTS ${DEFINITIONS_TABLE} (
           kind text NOT NULL, key text NOT NULL, digest text NOT NULL, applied_at timestamptz NOT NULL,
           PRIMARY KEY (kind, key))`,
      );
      await runner.startTransaction();
      const { changed, removed } = await definitionChanges(runner, definitions);
      if (changed.length === 0 && removed.length === 0) {
        await runner.commitTransaction();
        return [];
      }
      if (!(await lockTables(runner, changed, removed))) {
        await runner.rollbackTransaction();
        if (attempt >= LOCK_ATTEMPTS)
          throw new Error('could not take the tables whose triggers change: writers held them');
        await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
        continue;
      }
      // As pg_dump does: a body may call a function defined later in the list.
      await runner.query('SET LOCAL check_function_bodies = off');
      // Triggers first on the way out, functions first on the way in: neither is ever left dangling.
      const dropped = [
        ...removed.filter((r) => r.kind === 'trigger'),
        ...removed.filter((r) => r.kind === 'function'),
      ];
      for (const row of dropped) await runner.query(dropStatement(row));
      const ordered = [
        ...changed.filter((d) => d.kind === 'function'),
        ...changed.filter((d) => d.kind === 'trigger'),
      ];
      for (const definition of ordered) await runner.query(definition.sql);
      await runner.query(
        `DELETE FROM ${DEFINITIONS_TABLE} WHERE (kind, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [removed.map((row) => row.kind), removed.map((row) => row.key)],
      );
      await runner.query(
        `INSERT INTO ${DEFINITIONS_TABLE} (kind, key, digest, applied_at)
         SELECT kind, key, digest, now() FROM unnest($1::text[], $2::text[], $3::text[]) AS d(kind, key, digest)
         ON CONFLICT (kind, key) DO UPDATE SET digest = excluded.digest, applied_at = excluded.applied_at`,
        [ordered.map((d) => d.kind), ordered.map((d) => d.key), ordered.map((d) => d.digest)],
      );
      await runner.commitTransaction();
      return [
        ...dropped.map((row) => `${row.kind} ${row.key} (dropped)`),
        ...ordered.map((d) => `${d.kind} ${d.key}`),
      ];
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      throw error;
    } finally {
      await runner.release();
    }
  }
}

/** Takes every table whose triggers change, or false when a writer holds one. */
async function lockTables(runner: QueryRunner, changed: Definition[], removed: Recorded[]): Promise<boolean> {
  const tables = [
    ...new Set(
      [...changed, ...removed]
        .filter((item) => item.kind === 'trigger')
        .map((item) => item.key.split('.')[0]),
    ),
  ].sort();
  if (tables.length === 0) return true;
  try {
    await runner.query(`LOCK TABLE ${tables.join(', ')} IN SHARE ROW EXCLUSIVE MODE NOWAIT`);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return false;
    throw error;
  }
}

function dropStatement({ kind, key }: Recorded): string {
  if (kind === 'function') return `DROP FUNCTION IF EXISTS ${key}`;
  const [table, trigger] = key.split('.');
  return `DROP TRIGGER IF EXISTS ${trigger} ON ${table}`;
}

function assertUniqueKeys(definitions: readonly Definition[]): void {
  const seen = new Set<string>();
  for (const { kind, key } of definitions) {
    if (seen.has(`${kind}:${key}`)) throw new Error(`${kind} ${key} is defined twice`);
    seen.add(`${kind}:${key}`);
  }
}
