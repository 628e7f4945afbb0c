import { Logger, StreamableFile } from '@nestjs/common';
import accepts from 'accepts';
import { stringify } from 'csv-stringify';
import type { Request, Response } from 'express';
import { AsyncResource } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { loggableError } from '../../logging/loggable-error';
import { failureAnswer } from '../api-exception.filter';
import { requestIdOf } from '../request-id';
import { writeError } from '../write-error';

const logger = new Logger('CsvExport');

export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

type Cell = string | number | boolean | null;
export type CsvRow = Record<string, Cell>;

/**
 * Whether the caller prefers CSV to JSON, by the Accept header's own order and q-values (Express'
 * negotiation): `*\/*` and no Accept at all stay JSON, and so does an Accept that allows neither.
 * Media-range parameters other than q are set aside first: `text/csv; charset=utf-8` or
 * `text/csv; header=present` ask for the CSV this service writes (UTF-8, with a header row), and
 * matched literally they would not match the bare `text/csv` offered, and would get JSON.
 */
export function prefersCsv(request: Request): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  // accepts() reads nothing of a request but its headers.
  const negotiated = accepts({ headers: { accept: withoutParameters(accept) } } as IncomingMessage);
  return negotiated.type(['application/json', 'text/csv']) === 'text/csv';
}

function withoutParameters(accept: string): string {
  return accept
    .split(',')
    .map((range) => {
      const [type, ...parameters] = range.split(';');
      const quality = parameters.find((parameter) => /^\s*q\s*=/i.test(parameter));
      return quality === undefined ? type.trim() : `${type.trim()};${quality.trim()}`;
    })
    .join(', ');
}

/**
 * Nested objects become `parent_child` columns (`gpu_utilization_avg`); arrays are left to the
 * caller, which makes them rows.
 */
export function flattenRow(value: Record<string, unknown>, prefix = ''): CsvRow {
  const row: CsvRow = {};
  for (const [key, cell] of Object.entries(value)) {
    const column = prefix ? `${prefix}_${key}` : key;
    if (cell !== null && typeof cell === 'object' && !Array.isArray(cell)) {
      Object.assign(row, flattenRow(cell as Record<string, unknown>, column));
    } else if (!Array.isArray(cell) && cell !== undefined) {
      row[column] = cell as Cell;
    }
  }
  return row;
}

/**
 * A spreadsheet runs a cell that starts with = + - @ (or a tab or carriage return) as a formula, so a
 * workload named `=HYPERLINK(…)` could act on whoever opens the export: such text cells get a leading
 * apostrophe (OWASP's advice). Some spreadsheets skip leading spaces (also no-break and ideographic
 * ones) and read the full-width ＝ ＋ － ＠ as the ASCII signs, so those count too. Numbers stay numbers.
 */
const FORMULA_START = /^[\s\u00a0\u3000]*[=+\-@\uff1d\uff0b\uff0d\uff20]|^[\t\r]/;

function defuseFormula(cell: Cell): Cell {
  return typeof cell === 'string' && FORMULA_START.test(cell) ? `'${cell}` : cell;
}

/** The header is the union of the rows' columns, in first-seen order; a missing cell is empty. */
function columnsOf(rows: CsvRow[]): string[] {
  const columns = new Set<string>();
  for (const row of rows) for (const column of Object.keys(row)) columns.add(column);
  return [...columns];
}

/** RFC 4180: CRLF line ends, a header row, quotes doubled inside quoted cells; no byte order mark. */
function csvStringifier(columns: string[]) {
  return stringify({
    header: true,
    columns,
    record_delimiter: 'windows',
    cast: { boolean: (value) => String(value) },
  });
}

/**
 * Nest's default handler would log the whole error (a driver error can carry SQL) and answer a bare
 * 400: log what is safe, with the request's id. Before the first byte (the first page failed) the
 * answer is still the contract's error, 503 or 500 as for JSON; after it, the connection is cut, so
 * a client never takes a truncated file as whole.
 */
function csvFile(body: Readable, filename: string): StreamableFile {
  const file = new StreamableFile(body, {
    type: CSV_CONTENT_TYPE,
    disposition: `attachment; filename="${filename}"`,
  });
  file.setErrorHandler((error, raw) => {
    const response = raw as Response;
    const requestId = requestIdOf(response.req);
    if (response.headersSent) {
      logger.error({ request_id: requestId, error: loggableError(error, false) }, 'CSV export cut short');
      response.destroy();
      return;
    }
    const answer = failureAnswer(error, requestId, logger);
    for (const header of ['Content-Type', 'Content-Disposition', 'Content-Length'])
      response.removeHeader(header);
    writeError(response, answer, requestId);
  });
  return file;
}

/** A table known in full (stats, ranked, capacity): a few hundred rows at most. */
export function csvTable(rows: CsvRow[], filename: string): StreamableFile {
  const columns = columnsOf(rows);
  const stringifier = csvStringifier(columns);
  Readable.from(rows.map((row) => sanitize(row, columns))).pipe(stringifier);
  return csvFile(stringifier, filename);
}

/**
 * Rows produced page by page (the list): written as they come, with back-pressure, so memory stays
 * one page whatever the size. A failure after the first byte cannot change the status any more:
 * the stream is destroyed, the connection closes early, and the truncated file is visibly incomplete.
 */
export function csvStream(columns: string[], rows: AsyncIterable<CsvRow>, filename: string): StreamableFile {
  const stringifier = csvStringifier(columns);
  const pages = (async function* () {
    for await (const row of rows) yield sanitize(row, columns);
  })();
  // Every page is read in the request's async context (its database server), whatever resumes the stream.
  const next = AsyncResource.bind(() => pages.next());
  const source = Readable.from({
    [Symbol.asyncIterator]: () => ({ next, return: () => pages.return(undefined) }),
  });
  source.on('error', (error) => stringifier.destroy(error));
  source.pipe(stringifier);
  return csvFile(stringifier, filename);
}

function sanitize(row: CsvRow, columns: string[]): CsvRow {
  const safe: CsvRow = {};
  for (const column of columns) safe[column] = defuseFormula(row[column] ?? null);
  return safe;
}
