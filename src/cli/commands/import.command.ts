import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { CliContext, Command, UsageError } from '../cli-context';
import { withDatabase } from '../with-database';
import { ImportDatabaseError, ImportFormatError, ImportRejectedError } from '../../import/import-errors';
import { importDataset, ImportSummary } from '../../import/import.service';
import { SECTIONS } from '../../import/import-sections';
import { progressWriter } from '../../import/progress-line';

const USAGE = 'Usage: gpucap import FILE|-   (a JSON document or NDJSON; - reads standard input)';

/** `gpucap import FILE|-`: exit 0 on success, 1 when the input is rejected (nothing written), 2 on misuse. */
export const importCommand: Command = async (args, context) => {
  if (args.length !== 1 || args[0] === '--help') throw new UsageError(USAGE);
  const [file] = args;
  if (file !== '-') {
    await access(file).catch(() => {
      throw new UsageError(`cannot read '${file}'`);
    });
  }
  const input = (file === '-' ? context.stdin : createReadStream(file)) as Readable;
  return withDatabase(context, async (dataSource) => {
    const progress = progressWriter(context.stderr);
    try {
      const summary = await importDataset(dataSource, input, {
        onProgress: (records, seconds) =>
          progress.update(
            `${records.toLocaleString('en-US')} records read (${Math.round(records / seconds).toLocaleString('en-US')}/s)`,
          ),
      });
      progress.done();
      context.stderr.write(summaryText(summary));
      return 0;
    } catch (error) {
      progress.done();
      return reportFailure(error, context);
    }
  });
};

function reportFailure(error: unknown, context: CliContext): number {
  if (error instanceof ImportRejectedError) {
    context.stderr.write(`Import rejected, nothing was written:\n`);
    for (const line of error.lines()) context.stderr.write(`  ${line}\n`);
    if (error.truncated) context.stderr.write(`  (stopped after 20 records with errors)\n`);
    return 1;
  }
  if (error instanceof ImportFormatError || error instanceof ImportDatabaseError) {
    context.stderr.write(`Import rejected, nothing was written: ${error.message}\n`);
    return 1;
  }
  throw error;
}

export function summaryText(
  summary: Pick<ImportSummary, 'records' | 'written' | 'seconds' | 'skippedPrunedSamples'>,
): string {
  const lines = SECTIONS.filter((section) => summary.records[section] > 0).map(
    (section) =>
      `  ${section.padEnd(15)} ${summary.records[section].toLocaleString('en-US').padStart(12)} records, ${summary.written[section].toLocaleString('en-US').padStart(12)} rows written or changed`,
  );
  const total = SECTIONS.reduce((sum, section) => sum + summary.records[section], 0);
  const rate = summary.seconds > 0 ? Math.round(total / summary.seconds) : total;
  const skipped =
    summary.skippedPrunedSamples > 0
      ? `  ${summary.skippedPrunedSamples.toLocaleString('en-US')} samples skipped: older than their organization's retention boundary (pruned; lifetime aggregates already count them)\n`
      : '';
  return `Imported ${total.toLocaleString('en-US')} records in ${summary.seconds.toFixed(1)} s (${rate.toLocaleString('en-US')} records/s):\n${lines.join('\n')}\n${skipped}`;
}
