import type { DataSource } from 'typeorm';
import {
  assertSchemaCurrent,
  migrate,
  openDatabaseTarget,
  openDataSource,
} from '../database/database-target';
import type { CliContext } from './cli-context';

/**
 * Runs a command's work against the configured database and always releases connections (and the
 * embedded server, if this command started it) afterwards. The embedded database is the project's
 * own: it is migrated here, and shared with a `gpucap serve` that is running on it. A DATABASE_URL
 * database is never changed: a schema that is behind stops the command (`gpucap migrate` is for that).
 */
export async function withDatabase<T>(
  context: CliContext,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const target = await openDatabaseTarget(context.config, { shareRunning: true });
  try {
    if (target.embedded) await migrate(target.url);
    const dataSource = await openDataSource(target.url);
    try {
      if (!target.embedded) await assertSchemaCurrent(dataSource);
      return await work(dataSource);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await target.release();
  }
}
