import { migrate, openDatabaseTarget } from '../../database/database-target';
import type { Command } from '../cli-context';

export const migrateCommand: Command = async (_args, context) => {
  const target = await openDatabaseTarget(context.config, { shareRunning: true });
  try {
    const applied = await migrate(target.url);
    context.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date\n');
    return 0;
  } finally {
    await target.release();
  }
};
