import { DataSource } from 'typeorm';
import type { AppConfig } from '../common/config/app-config';
import { dataSourceOptions } from './data-source-options';
import { defaultEmbeddedDirectory, EmbeddedDatabase } from './embedded-database';
import { projectRoot } from './project-root';
import { ensureUpcomingSamplePartitions } from './sample-partitions';

export interface DatabaseTarget {
  url: string;
  /** Present when the service started its own PostgreSQL; stop it on shutdown. */
  embedded?: EmbeddedDatabase;
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL, started here. */
export async function openDatabaseTarget(config: AppConfig): Promise<DatabaseTarget> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL };
  const embedded = new EmbeddedDatabase({
    directory: config.EMBEDDED_PG_DIR ?? defaultEmbeddedDirectory(projectRoot()),
    port: config.EMBEDDED_PG_PORT,
  });
  const url = await embedded.start();
  return { url, embedded };
}

/** A DataSource for the command line and tests (the HTTP service gets its own through TypeOrmModule). */
export async function openDataSource(url: string, poolSize = 10): Promise<DataSource> {
  return new DataSource(dataSourceOptions(url, poolSize)).initialize();
}

/** Applies every pending migration and creates the coming weeks' sample partitions; returns the names applied. */
export async function migrate(url: string): Promise<string[]> {
  const dataSource = await openDataSource(url, 2);
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    await ensureUpcomingSamplePartitions(dataSource);
    return applied.map((migration) => migration.name);
  } finally {
    await dataSource.destroy();
  }
}
