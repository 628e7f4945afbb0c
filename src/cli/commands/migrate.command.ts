import { migrate, openDatabaseTarget } from '../../database/database-target';
import type { Command } from '../cli-context';
import { helpText, parseFor } from '../command-line';

export const migrateCommand: Command = async (args, context) => {
  const { values, spec } = parseFor('migrate', args);
  if (values.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  const target = await openDatabaseTarget(context.config, { shareRunning: true });
  try {
    const applied = await migrate(target.url);
    context.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date\n');
    return 0;
  } finally {
    await target.release();
  }
};
