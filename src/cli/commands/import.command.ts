import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { CliContext, Command, UsageError } from '../cli-context';
import { helpText, parseFor } from '../command-line';
import { withDatabase } from '../with-database';
import { ImportDatabaseError, ImportFormatError, ImportRejectedError } from '../../import/import-errors';
import { importDataset, ImportSummary } from '../../import/import.service';
import { SECTIONS } from '../../import/import-sections';
import { progressWriter } from '../../import/progress-line';

/** Where a person who wrote a file the import refuses finds what it should look like. */
export const IMPORT_FORMAT_DOC = 'docs/import-format.md';

const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory, not a file',
  ENOTDIR: 'a part of the path is not a directory',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
  EMFILE: 'too many open files',
};

/** `gpucap import FILE|-`: exit 0 on success, 1 when the input is rejected (nothing written), 2 on misuse. */
export const importCommand: Command = async (args, context) => {
  const { values, positionals, spec } = parseFor('import', args);
  if (values.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  const [file] = positionals;
  // Checked before the database is opened, so a typo costs no start-up, and the reason is said.
  if (file !== '-') await assertReadableFile(file);
  const input = (file === '-' ? context.stdin : createReadStream(file)) as Readable;
  return withDatabase(context, async (dataSource) => {
    const progress = progressWriter(context.stderr);
    try {
      const summary = await importDataset(dataSource, input, {
        trace: context.config.GPUCAP_IMPORT_TRACE,
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

/** Opens the file for reading (a directory opens, but cannot be read: refused here too). */
async function assertReadableFile(file: string): Promise<void> {
  try {
    const handle = await open(file, 'r');
    try {
      if ((await handle.stat()).isDirectory())
        throw Object.assign(new Error('directory'), { code: 'EISDIR' });
    } finally {
      await handle.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    const reason = FILE_ERRORS[code] ?? ((error as Error).message || 'unreadable').split('\n')[0];
    throw new UsageError(
      `cannot read '${file}': ${reason} (${code}). The import format: ${IMPORT_FORMAT_DOC}`,
    );
  }
}

function reportFailure(error: unknown, context: CliContext): number {
  if (error instanceof ImportRejectedError) {
    context.stderr.write(`Import rejected, nothing was written:\n`);
    for (const line of error.lines()) context.stderr.write(`  ${line}\n`);
    if (error.truncated) context.stderr.write(`  (stopped after 20 records with errors)\n`);
    return 1;
  }
  if (error instanceof ImportFormatError || error instanceof ImportDatabaseError) {
    context.stderr.write(`Import rejected, nothing was written: ${error.message}\n`);
    if (error instanceof ImportFormatError) context.stderr.write(`The import format: ${IMPORT_FORMAT_DOC}\n`);
    return 1;
  }
  throw error;
}

/**
 * `Imported 18 records in 0.42 s:` then a line per section. The rate (from 1 s on) is computed from
 * the count and the seconds as printed, so the line adds up when checked by hand; under a second a
 * rate says nothing and is left out.
 */
export function summaryText(
  summary: Pick<
    ImportSummary,
    'records' | 'written' | 'seconds' | 'skippedPrunedSamples' | 'recostedWorkloads'
  >,
): string {
  const lines = SECTIONS.filter((section) => summary.records[section] > 0).map(
    (section) =>
      `  ${section.padEnd(15)} ${summary.records[section].toLocaleString('en-US').padStart(12)} records, ${summary.written[section].toLocaleString('en-US').padStart(12)} rows written or changed`,
  );
  const total = SECTIONS.reduce((sum, section) => sum + summary.records[section], 0);
  const shown = summary.seconds < 10 ? summary.seconds.toFixed(2) : summary.seconds.toFixed(1);
  const seconds = Number(shown);
  const rate = seconds >= 1 ? ` (${Math.round(total / seconds).toLocaleString('en-US')} records/s)` : '';
  const skipped =
    summary.skippedPrunedSamples > 0
      ? `  ${summary.skippedPrunedSamples.toLocaleString('en-US')} samples skipped: older than their organization's retention boundary (pruned; lifetime aggregates already count them)\n`
      : '';
  const recosted =
    summary.recostedWorkloads > 0
      ? `  ${summary.recostedWorkloads.toLocaleString('en-US')} stored ${summary.recostedWorkloads === 1 ? 'workload' : 'workloads'} re-costed: their runs meet the price periods written\n`
      : '';
  return `Imported ${total.toLocaleString('en-US')} ${total === 1 ? 'record' : 'records'} in ${shown} s${rate}:\n${lines.join('\n')}\n${skipped}${recosted}`;
}
