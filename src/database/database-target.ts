import { DataSource, MigrationExecutor } from 'typeorm';
import type { AppConfig } from '../core/config/app-config';
import { dataSourceOptions, MIGRATION_BOUNDS } from './data-source-options';
import { defaultEmbeddedDirectory, EmbeddedDatabase } from './embedded-database';
import { projectRoot } from '../core/project-root';
import { ensureUpcomingSamplePartitions } from './sample-partitions';
import { definitions } from './definitions';
import { applyDefinitions, definitionChanges } from './definitions/apply-definitions';
import { backfills } from './backfills';
import { pendingBackfills, runBackfills } from './backfills/backfill';

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
 * weeks' sample partitions. Returns what it applied. Concurrent starters (replicas, a `migrate` job)
 * queue on an advisory lock, so the second one finds nothing pending instead of racing the first.
 */
export async function migrate(url: string): Promise<string[]> {
  const dataSource = await new DataSource(dataSourceOptions(url, MIGRATION_BOUNDS)).initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    const defined = await applyDefinitions(dataSource, definitions);
    const backfilled = await runBackfills(dataSource, backfills);
    await ensureUpcomingSamplePartitions(dataSource);
    return [
      ...applied.map((migration) => migration.name),
      ...(defined.length > 0 ? [`definitions (${defined.length} changed)`] : []),
      ...backfilled,
    ];
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
 * behind this version of gpucap in any of the three.
 */
export async function assertSchemaCurrent(dataSource: DataSource): Promise<void> {
  const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
  const { changed, removed } = await definitionChanges(dataSource, definitions);
  const stale = changed.length + removed.length;
  const unfilled = await pendingBackfills(dataSource, backfills);
  const behind = [
    counted(pending.length, 'pending migration'),
    counted(stale, 'stale definition'),
    counted(unfilled.length, 'pending backfill'),
  ].filter((part) => part !== '');
  if (behind.length > 0) {
    throw new SchemaNotCurrentError(
      `the database schema is not up to date (${behind.join(', ')}): run \`gpucap migrate\``,
    );
  }
}

function counted(count: number, what: string): string {
  return count === 0 ? '' : `${count} ${what}${count === 1 ? '' : 's'}`;
}
