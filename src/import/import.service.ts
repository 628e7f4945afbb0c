import type { Readable } from 'node:stream';
import type { DataSource } from 'typeorm';
import { BulkLoader, LoadSummary } from './bulk-loader';
import { ImportDatabaseError, ImportFormatError, ImportRejectedError } from './import-errors';
import { ImportRecord, LocationStyle, SECTIONS } from './import-sections';
import { ImportSource, openImportSource } from './import-source';
import { RecordIssue, ReferenceTracker } from './reference-tracker';
import { validateRecord } from './record-validator';

/** Reading stops after this many bad records: enough to fix a file, not a wall of text. */
export const MAX_REPORTED_RECORDS = 20;
const PROGRESS_EVERY = 100_000;

export interface ImportOptions {
  onProgress?: (records: number, seconds: number) => void;
  /** Each statement's time on stderr (GPUCAP_IMPORT_TRACE). */
  trace?: boolean;
  /** Samples per staging chunk (default a million): tests cross chunks with a few. */
  sampleChunkRows?: number;
}

export interface ImportSummary extends LoadSummary {
  format: ImportSource['format'];
  seconds: number;
}

/**
 * Validates every record, stages the valid ones with the bulk loader and commits only when the
 * whole input is valid: all or nothing, in one transaction.
 */
export async function importDataset(
  dataSource: DataSource,
  input: Readable,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const started = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
  const source = await openImportSource(input);
  const tracker = new ReferenceTracker();
  const loader = await BulkLoader.open(dataSource, {
    trace: options.trace,
    sampleChunkRows: options.sampleChunkRows,
  });
  const issues = new IssueList();
  try {
    let seen = 0;
    for await (const entry of source.entries) {
      seen += 1;
      if (seen % PROGRESS_EVERY === 0) options.onProgress?.(seen, elapsed());
      const result = entry.problem
        ? { issues: [entry.problem] }
        : validateRecord(entry.section, entry.value, source.ignoredKeys);
      if (result.issues) {
        for (const message of result.issues)
          issues.add({ section: entry.section, location: entry.location, message });
      } else {
        const record = { section: entry.section, location: entry.location, row: result.row } as ImportRecord;
        const duplicate = tracker.track(record);
        if (duplicate) issues.add({ ...duplicate, section: record.section, location: record.location });
        else if (issues.empty) await loader.add(record);
      }
      if (issues.full) break;
    }
    if (issues.empty) {
      await loader.lockOrganizations();
      for (const issue of await tracker.check(loader.query)) issues.add(issue);
    }
    if (!issues.empty) throw new ImportRejectedError(issues.sorted(source.style), issues.full);
    const summary = await loader.finish();
    return { ...summary, format: source.format, seconds: elapsed() };
  } catch (error) {
    await loader.abort();
    if (error instanceof ImportRejectedError) error.style = source.style;
    throw asImportError(error);
  }
}

/** Collects issues of at most MAX_REPORTED_RECORDS distinct records. */
class IssueList {
  private readonly issues: RecordIssue[] = [];
  private readonly records = new Set<string>();

  add(issue: RecordIssue): void {
    const key = `${issue.section}:${issue.location}`;
    if (!this.records.has(key) && this.full) return;
    this.records.add(key);
    this.issues.push(issue);
  }

  get empty(): boolean {
    return this.issues.length === 0;
  }

  get full(): boolean {
    return this.records.size >= MAX_REPORTED_RECORDS;
  }

  sorted(style: LocationStyle): RecordIssue[] {
    const rank = (issue: RecordIssue) => (style === 'line' ? 0 : SECTIONS.indexOf(issue.section));
    return [...this.issues].sort((a, b) => rank(a) - rank(b) || a.location - b.location);
  }
}

function asImportError(error: unknown): unknown {
  if (error instanceof ImportRejectedError || error instanceof ImportFormatError) return error;
  const database = error as { code?: string; message?: string; detail?: string };
  if (typeof database.code === 'string' && /^[0-9A-Z]{5}$/.test(database.code)) {
    const detail = database.detail ? ` (${database.detail})` : '';
    return new ImportDatabaseError(
      `the database rejected the import, nothing was written: ${database.message}${detail}`,
    );
  }
  return error;
}
