import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import streamJson from 'stream-json';
import Assembler from 'stream-json/assembler.js';
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

type Chunk = Buffer | string;

// Own names only: a kind or section such as 'constructor' must not find Object.prototype's.
const SECTION_OF_KIND = new Map(Object.entries(SECTION_BY_KIND));
const SECTION_NAMES: ReadonlySet<string> = new Set(SECTIONS);
const KINDS = [...SECTION_OF_KIND.keys()].join(', ');
const LINE_BREAK = /\r\n|\n|\r/;
/**
 * A first line longer than this is no NDJSON record (the largest valid one, a pool with 10,000
 * instance types, is under 3 MB), so detection never holds more of a one-line document.
 */
const PROBE_LIMIT_CHARS = 8 * 1024 * 1024;
const PIECE_SIZE = 8 * 1024;

/**
 * Detects the format from the first non-empty line: a JSON object with a string `kind` means NDJSON,
 * read line by line; anything else is one JSON document, parsed as a stream of tokens, each record
 * yielded as soon as it is complete (sections in the order the file has them). Memory stays flat
 * whatever the size of the file.
 */
export async function openImportSource(input: Readable): Promise<ImportSource> {
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Chunk>;
  const { head, firstLine } = await probe(chunks);
  if (firstLine === undefined) throw new ImportFormatError('the input is empty');
  const text = replay(head, chunks);
  if (firstLine !== null && isNdjsonRecord(firstLine)) {
    return { format: 'ndjson', style: 'line', ignoredKeys: ['kind'], entries: ndjsonEntries(text) };
  }
  return { format: 'json', style: 'index', ignoredKeys: [], entries: documentEntries(text) };
}

/**
 * Reads until the first non-empty line is complete. `firstLine` is undefined for an input with
 * nothing but white space, null when that line is too long to be an NDJSON record. Only new text is
 * scanned, so a long first line costs one pass.
 */
async function probe(chunks: AsyncIterator<Chunk>) {
  const head: Chunk[] = [];
  const decoder = new StringDecoder('utf8');
  let line: string[] = [];
  let length = 0;
  let blank = true;
  for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
    head.push(next.value);
    const parts = (typeof next.value === 'string' ? next.value : decoder.write(next.value)).split(LINE_BREAK);
    for (let index = 0; index < parts.length; index += 1) {
      line.push(parts[index]);
      length += parts[index].length;
      blank &&= parts[index].trim() === '';
      if (index === parts.length - 1) break;
      if (!blank) return { head, firstLine: line.join('') };
      line = [];
      length = 0;
      blank = true;
    }
    if (!blank && length > PROBE_LIMIT_CHARS) return { head, firstLine: null };
  }
  line.push(decoder.end());
  const firstLine = line.join('');
  return { head, firstLine: firstLine.trim() === '' ? undefined : firstLine };
}

/**
 * The whole input again (what detection read, then the rest), in 8 kB pieces: the tokens of one
 * piece live until its records are handled, and fewer of them then outlive a young-generation
 * collection (with larger reads, the old generation fills with dead tokens and the peak RSS grows).
 */
function replay(head: Chunk[], rest: AsyncIterator<Chunk>): Readable {
  async function* all() {
    for (let chunk = head.shift(); chunk !== undefined; chunk = head.shift()) yield* pieces(chunk);
    for (let next = await rest.next(); !next.done; next = await rest.next()) yield* pieces(next.value);
  }
  return Readable.from(all(), { objectMode: false, highWaterMark: PIECE_SIZE });
}

function* pieces(chunk: Chunk): Generator<Chunk> {
  for (let start = 0; start < chunk.length; start += PIECE_SIZE) {
    yield typeof chunk === 'string'
      ? chunk.slice(start, start + PIECE_SIZE)
      : chunk.subarray(start, start + PIECE_SIZE);
  }
}

function isNdjsonRecord(line: string): boolean {
  try {
    const value = JSON.parse(line);
    return typeof value === 'object' && value !== null && typeof value.kind === 'string';
  } catch {
    return false;
  }
}

async function* ndjsonEntries(text: Readable): AsyncGenerator<RawEntry> {
  let lineNumber = 0;
  for await (const line of createInterface({ input: text, crlfDelay: Infinity })) {
    lineNumber += 1;
    if (line.trim() !== '') yield ndjsonEntry(line, lineNumber);
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
  const section = typeof kind === 'string' ? SECTION_OF_KIND.get(kind) : undefined;
  if (!section) {
    return { section: 'organizations', location, value, problem: `"kind" must be one of ${KINDS}` };
  }
  return { section, location, value };
}

async function* documentEntries(text: Readable): AsyncGenerator<RawEntry> {
  const tokens = streamJson.parser.asStream({ packValues: true, streamValues: false });
  let inputFailure: unknown;
  text.once('error', (error) => {
    inputFailure = error;
    tokens.destroy(error);
  });
  text.pipe(tokens);
  const walker = new DocumentWalker();
  try {
    for await (const batch of buffered<streamJson.parser.Token>(tokens)) {
      for (const token of batch) {
        const entry = walker.take(token);
        if (entry) yield entry;
      }
    }
  } catch (error) {
    if (error instanceof ImportFormatError || error === inputFailure) throw error;
    throw new ImportFormatError(
      `the input is neither a JSON document nor NDJSON with a "kind" on every line: ${(error as Error).message}`,
    );
  } finally {
    text.destroy();
    tokens.destroy();
  }
}

/**
 * What a stream holds at each turn, in one array: one await per chunk of input rather than one per
 * token keeps parsing fast.
 */
async function* buffered<T>(stream: Readable): AsyncGenerator<T[]> {
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: Error | undefined;
  stream.on('readable', () => wake?.());
  stream.once('end', () => {
    ended = true;
    wake?.();
  });
  stream.once('error', (error: Error) => {
    failure = error;
    wake?.();
  });
  for (;;) {
    const batch: T[] = [];
    for (let item = stream.read(); item !== null; item = stream.read()) batch.push(item as T);
    if (batch.length > 0) yield batch;
    else if (failure !== undefined) throw failure;
    else if (ended) return;
    else await new Promise<void>((resolve) => (wake = resolve));
  }
}

/**
 * Follows the document's outline (an object of section arrays) token by token and assembles each
 * record with stream-json's Assembler; only the record being read is in memory.
 */
class DocumentWalker {
  private state: 'start' | 'key' | 'array' | 'records' | 'end' = 'start';
  private section: SectionName = 'organizations';
  private index = 0;
  private readonly seen = new Set<string>();
  private readonly record = new Assembler();
  private recordProblem: string | undefined;

  take(token: streamJson.parser.Token): RawEntry | undefined {
    switch (this.state) {
      case 'start':
        if (token.name !== 'startObject') {
          throw new ImportFormatError(
            `the document must be a JSON object with the sections ${SECTIONS.join(', ')}`,
          );
        }
        this.state = 'key';
        return undefined;
      case 'key':
        if (token.name === 'endObject') this.state = 'end';
        else this.startSection(token.value as string);
        return undefined;
      case 'array':
        if (token.name !== 'startArray')
          throw new ImportFormatError(`section '${this.section}' must be an array`);
        this.state = 'records';
        return undefined;
      case 'records':
        return this.takeRecordToken(token);
      case 'end':
        return undefined;
    }
  }

  private startSection(key: string): void {
    if (!SECTION_NAMES.has(key)) {
      throw new ImportFormatError(`unknown section '${key}' (sections: ${SECTIONS.join(', ')})`);
    }
    if (this.seen.has(key)) throw new ImportFormatError(`section '${key}' appears more than once`);
    this.seen.add(key);
    this.section = key as SectionName;
    this.index = 0;
    this.state = 'array';
  }

  private takeRecordToken(token: streamJson.parser.Token): RawEntry | undefined {
    if (token.name === 'endArray' && this.record.done) {
      this.state = 'key';
      return undefined;
    }
    // The Assembler would set the object's prototype; JSON.parse made it a field, which the validator refuses.
    if (token.name === 'keyValue' && token.value === '__proto__')
      this.recordProblem = "unknown field '__proto__'";
    this.record.consume(token);
    if (!this.record.done) return undefined;
    const entry: RawEntry = { section: this.section, location: this.index, value: this.record.current };
    if (this.recordProblem) entry.problem = this.recordProblem;
    this.recordProblem = undefined;
    this.index += 1;
    return entry;
  }
}
