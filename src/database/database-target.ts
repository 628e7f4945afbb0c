import { DataSource, MigrationExecutor } from 'typeorm';
import type { AppConfig } from '../core/config/app-config';
import { dataSourceOptions, MIGRATION_BOUNDS } from './data-source-options';
import { defaultEmbeddedDirectory, EmbeddedDatabase } from './embedded-database';
import { projectRoot } from '../core/project-root';
import { ensureUpcomingSamplePartitions } from './sample-partitions';
import { definitions } from './definitions';
import { applyDefinitions, definitionChanges } from './definitions/apply-definitions';
import { backfills } from './backfills';
import { type Backfill, pendingBackfills, runBackfills } from './backfills/backfill';
import type { Definition } from './definitions/definition';

export interface DatabaseTarget {
  url: string;
  /** The project's own embedded database, which every command may migrate; DATABASE_URL's is not. */
  embedded: boolean;
  /** Stops the embedded PostgreSQL if this process started it. */
  release(): Promise<void>;
}

export interface TargetOptions {
  /** Use the embedded server another gpucap (a running `serve`) has started, instead of refusing. */
  shareRunning?: boolean;
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL, started here unless already running. */
export async function openDatabaseTarget(
  config: AppConfig,
  { shareRunning = false }: TargetOptions = {},
): Promise<DatabaseTarget> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, embedded: false, release: async () => {} };
  const database = new EmbeddedDatabase({
    directory: config.EMBEDDED_PG_DIR ?? defaultEmbeddedDirectory(projectRoot()),
    port: config.EMBEDDED_PG_PORT,
  });
  const running = shareRunning ? database.runningUrl() : undefined;
  if (running) return { url: running, embedded: true, release: async () => {} };
  const url = await database.start();
  return { url, embedded: true, release: () => database.stop() };
}

/** A DataSource for the command line and tests (the HTTP service gets its own through TypeOrmModule). */
export async function openDataSource(url: string, poolSize = 10): Promise<DataSource> {
  return new DataSource(dataSourceOptions(url, { poolSize })).initialize();
}

/** Any fixed number: every gpucap that migrates takes this PostgreSQL session advisory lock first. */
const MIGRATION_LOCK = 7_160_420_511;

/**
 * Brings a database to this version of gpucap, in a fixed order: the pending versioned migrations
 * (each in its own transaction), then the function and trigger definitions that changed (one
 * transaction), then the pending backfills, which may rely on those definitions; then the coming
 * weeks' sample partitions. Returns the migrations and backfills applied, or the definitions alone.
 * Concurrent starters (replicas, a `migrate` job) queue on an advisory lock, so the second one finds
 * nothing pending instead of racing the first. `steps` is for tests of the order.
 */
export async function migrate(
  url: string,
  steps: { definitions: readonly Definition[]; backfills: readonly Backfill[] } = { definitions, backfills },
): Promise<string[]> {
  const dataSource = await new DataSource(dataSourceOptions(url, MIGRATION_BOUNDS)).initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    const defined = await applyDefinitions(dataSource, steps.definitions);
    const backfilled = await runBackfills(dataSource, steps.backfills);
    await ensureUpcomingSamplePartitions(dataSource);
    const versioned = [...applied.map((migration) => migration.name), ...backfilled];
    // A fresh install replaces every definition as a matter of course: named only when it is the news.
    return versioned.length === 0 && defined.length > 0
      ? [`definitions (${defined.length} changed)`]
      : versioned;
  } finally {
    await lock.release();
    // Closing the connections ends the lock's session, which releases it, whatever failed above.
    await dataSource.destroy();
  }
}

/** Thrown by commands that must not change the schema of a database they do not own. */
export class SchemaNotCurrentError extends Error {}

/**
 * Reads (never creates) the migrations, definitions and backfills records: fails when the schema is
 * behind this version of gpucap in any of the three. Named by the first step `gpucap migrate` would
 * take: while migrations are pending, every definition after them is stale as a matter of course.
 */
export async function assertSchemaCurrent(dataSource: DataSource): Promise<void> {
  const behind = await firstStepBehind(dataSource);
  if (behind) {
    throw new SchemaNotCurrentError(
      `the database schema is not up to date (${behind}): run \`gpucap migrate\``,
    );
  }
}

async function firstStepBehind(dataSource: DataSource): Promise<string> {
  const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
  if (pending.length > 0) return counted(pending.length, 'pending migration');
  const { changed, removed } = await definitionChanges(dataSource, definitions);
  if (changed.length + removed.length > 0)
    return counted(changed.length + removed.length, 'stale definition');
  return counted((await pendingBackfills(dataSource, backfills)).length, 'pending backfill');
}

function counted(count: number, what: string): string {
  return count === 0 ? '' : `${count} ${what}${count === 1 ? '' : 's'}`;
}
