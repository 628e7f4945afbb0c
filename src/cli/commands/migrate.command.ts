import { migrate, openDatabaseTarget, openDataSource } from '../../database/database-target';
import { sealSamples } from '../../import/sample-seal';
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
    // Stored history moves into day blocks in batches; run again, a stopped move resumes.
    const dataSource = await openDataSource(target.url);
    const sealed = await sealSamples(dataSource, {
      progress: (line) => context.stdout.write(`${line}\n`),
    }).finally(() => dataSource.destroy());
    if (sealed.readings > 0) {
      context.stdout.write(
        `Sealed ${sealed.readings} samples before ${sealed.sealedBefore?.toISOString()} into day blocks\n`,
      );
    }
    return 0;
  } finally {
    await target.release();
  }
};
