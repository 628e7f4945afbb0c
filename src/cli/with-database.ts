import type { DataSource } from 'typeorm';
import { migrate, openDatabaseTarget, openDataSource } from '../database/database-target';
import type { CliContext } from './cli-context';

/**
 * Runs a command's work against the configured database (the embedded one when DATABASE_URL is
 * unset), migrated first, and always releases connections and the embedded server afterwards.
 */
export async function withDatabase<T>(
  context: CliContext,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const target = await openDatabaseTarget(context.config);
  try {
    await migrate(target.url);
    const dataSource = await openDataSource(target.url);
    try {
      return await work(dataSource);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await target.embedded?.stop();
  }
}
