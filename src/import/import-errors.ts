import { describeLocation, LocationStyle } from './import-sections';
import type { RecordIssue } from './reference-tracker';

/** The file breaks the rules: nothing was written. Carries every issue found (up to a limit). */
export class ImportRejectedError extends Error {
  /** How records are named (JSON index or NDJSON line); set by whoever knows the input. */
  style: LocationStyle = 'index';

  constructor(
    readonly issues: RecordIssue[],
    readonly truncated = false,
  ) {
    super(`import rejected: ${issues.length} issue(s) found; nothing was written`);
  }

  /** One line per issue: `workloads[3]: started_at is required for a running workload`. */
  lines(): string[] {
    return this.issues.map((issue) => {
      const where = describeLocation(this.style, issue.section, issue.location);
      const also =
        issue.seeAlso === undefined
          ? ''
          : ` (see ${describeLocation(this.style, issue.section, issue.seeAlso)})`;
      return `${where}: ${issue.message}${also}`;
    });
  }
}

/** The input cannot be read as an import document at all (not JSON, an unknown section). */
export class ImportFormatError extends Error {}

/** The database refused a statement (a constraint); the message is PostgreSQL's, without internals. */
export class ImportDatabaseError extends Error {}
