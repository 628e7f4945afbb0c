import type { DataSource, QueryRunner } from 'typeorm';

/**
 * A versioned step that rewrites stored amounts with today's definitions: it runs once, after the
 * migrations and the definitions, in its own transaction, and is recorded in BACKFILLS_TABLE the way
 * a migration is. A migration that adds a column can leave filling it to a backfill, which then finds
 * the trigger bodies that maintain it already in place. Name it `<timestamp>-<what>` like a migration.
 */
export interface Backfill {
  readonly name: string;
  /**
   * The parts it runs in, each in its own transaction (one part when absent), so a long rewrite
   * holds its locks a part at a time; every part must be safe to run again, as all of them run again
   * when a stopped backfill resumes (the record is written with the last).
   */
  parts?(dataSource: DataSource): Promise<unknown[]>;
  up(runner: QueryRunner, part?: unknown): Promise<void>;
}

export const BACKFILLS_TABLE = 'schema_backfills';

/** The backfills not yet recorded, in the order given. */
export async function pendingBackfills(
  dataSource: DataSource | QueryRunner,
  backfills: readonly Backfill[],
): Promise<Backfill[]> {
  const [{ present }] = await dataSource.query<{ present: boolean }[]>(
    'SELECT to_regclass($1) IS NOT NULL AS present',
    [BACKFILLS_TABLE],
  );
  if (!present) return [...backfills];
  const done = new Set(
    (await dataSource.query<{ name: string }[]>(`SELECT name FROM ${BACKFILLS_TABLE}`)).map(
      (row: { name: string }) => row.name,
    ),
  );
  return backfills.filter((backfill) => !done.has(backfill.name));
}

async function inTransaction(dataSource: DataSource, work: (runner: QueryRunner) => Promise<void>) {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.startTransaction();
    await work(runner);
    await runner.commitTransaction();
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw error;
  } finally {
    await runner.release();
  }
}

/** Runs the pending backfills, each part in its own transaction, the record with the last; returns their names. */
export async function runBackfills(
  dataSource: DataSource,
  backfills: readonly Backfill[],
): Promise<string[]> {
  await dataSource.query(
    `CREATE TABLE IF NOT EXISTS ${BACKFILLS_TABLE} (name text PRIMARY KEY, applied_at timestamptz NOT NULL)`,
  );
  const ran: string[] = [];
  for (const backfill of await pendingBackfills(dataSource, backfills)) {
    const parts = backfill.parts ? await backfill.parts(dataSource) : [undefined];
    for (let index = 0; index < Math.max(parts.length, 1); index++) {
      await inTransaction(dataSource, async (runner) => {
        if (index < parts.length) await backfill.up(runner, parts[index]);
        if (index >= parts.length - 1) {
          await runner.query(`INSERT INTO ${BACKFILLS_TABLE} (name, applied_at) VALUES ($1, now())`, [
            backfill.name,
          ]);
        }
      });
    }
    ran.push(backfill.name);
  }
  return ran;
}
