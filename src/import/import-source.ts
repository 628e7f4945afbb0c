import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { ImportFormatError } from './import-errors';
import { LocationStyle, SECTION_BY_KIND, SectionName, SECTIONS } from './import-sections';

/** One record as read, not yet validated; `problem` is set when it could not even be read. */
export interface RawEntry {
  section: SectionName;
  location: number;
  value: unknown;
  problem?: string;
}

export interface ImportSource {
  format: 'json' | 'ndjson';
  style: LocationStyle;
  /** Envelope fields a record may carry besides its own (NDJSON's `kind`). */
  ignoredKeys: string[];
  entries: AsyncIterable<RawEntry>;
}

const KINDS = Object.keys(SECTION_BY_KIND).join(', ');

/**
 * Detects the format from the first non-empty line: a JSON object with a string `kind` means NDJSON,
 * read line by line; anything else is one JSON document, read whole (fine up to a few hundred MB;
 * use NDJSON beyond that) and walked section by section in dependency order.
 */
export async function openImportSource(input: Readable): Promise<ImportSource> {
  const lines = createInterface({ input, crlfDelay: Infinity })[Symbol.asyncIterator]();
  let lineNumber = 0;
  let first: string | undefined;
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    lineNumber += 1;
    if (next.value.trim() !== '') {
      first = next.value;
      break;
    }
  }
  if (first === undefined) throw new ImportFormatError('the input is empty');
  if (isNdjsonRecord(first)) {
    return {
      format: 'ndjson',
      style: 'line',
      ignoredKeys: ['kind'],
      entries: ndjsonEntries(first, lineNumber, lines),
    };
  }
  const parts = [first];
  for (let next = await lines.next(); !next.done; next = await lines.next()) parts.push(next.value);
  return { format: 'json', style: 'index', ignoredKeys: [], entries: documentEntries(parts.join('\n')) };
}

function isNdjsonRecord(line: string): boolean {
  try {
    const value = JSON.parse(line);
    return typeof value === 'object' && value !== null && typeof value.kind === 'string';
  } catch {
    return false;
  }
}

async function* ndjsonEntries(
  first: string,
  firstLineNumber: number,
  lines: AsyncIterator<string>,
): AsyncGenerator<RawEntry> {
  yield ndjsonEntry(first, firstLineNumber);
  let lineNumber = firstLineNumber;
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    lineNumber += 1;
    if (next.value.trim() !== '') yield ndjsonEntry(next.value, lineNumber);
  }
}

function ndjsonEntry(line: string, location: number): RawEntry {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return {
      section: 'organizations',
      location,
      value: null,
      problem: `is not valid JSON (${(error as Error).message})`,
    };
  }
  const kind = (value as { kind?: unknown } | null)?.kind;
  const section = typeof kind === 'string' ? SECTION_BY_KIND[kind] : undefined;
  if (!section) {
    return { section: 'organizations', location, value, problem: `"kind" must be one of ${KINDS}` };
  }
  return { section, location, value };
}

async function* documentEntries(text: string): AsyncGenerator<RawEntry> {
  const document = parseDocument(text);
  for (const section of SECTIONS) {
    const records = document[section] ?? [];
    for (let index = 0; index < records.length; index += 1) {
      yield { section, location: index, value: records[index] };
    }
  }
}

function parseDocument(text: string): Partial<Record<SectionName, unknown[]>> {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new ImportFormatError(
      `the input is neither a JSON document nor NDJSON with a "kind" on every line: ${(error as Error).message}`,
    );
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new ImportFormatError(
      `the document must be a JSON object with the sections ${SECTIONS.join(', ')}`,
    );
  }
  for (const [key, value] of Object.entries(document)) {
    if (!(SECTIONS as readonly string[]).includes(key)) {
      throw new ImportFormatError(`unknown section '${key}' (sections: ${SECTIONS.join(', ')})`);
    }
    if (!Array.isArray(value)) throw new ImportFormatError(`section '${key}' must be an array`);
  }
  return document;
}
