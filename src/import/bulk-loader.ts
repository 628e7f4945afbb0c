import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { DataSource } from 'typeorm';
import { ImportRejectedError } from './import-errors';
import { ImportRecord, SectionName, SECTIONS } from './import-sections';
import { DedicatedConnection, takeConnection } from './pg-connection';
import type { QueryFn } from './reference-tracker';
import { APPLY_SQL, DUPLICATE_SAMPLES_SQL, SAMPLE_SQL, STAGING } from './staging-tables';

const PARENT_SECTIONS = SECTIONS.filter(
  (section): section is Exclude<SectionName, 'metric_samples'> => section !== 'metric_samples',
);
/** COPY batches: big enough that a round trip is noise, small enough to keep memory flat. */
const COPY_BATCH_BYTES = 4 * 1024 * 1024;
/** Records staged between two turns of the event loop (COPY data only moves while Node waits). */
const YIELD_EVERY_RECORDS = 2000;
/** Encoded text waiting for the connection; the producer waits above this. */
const MAX_QUEUED_BYTES = 64 * 1024 * 1024;
/**
 * Samples per INSERT ... SELECT: large set-based statements suit the statement-level rollup
 * triggers, while the staging table stays small.
 */
export const DEFAULT_SAMPLE_CHUNK = 1_000_000;

export interface BulkLoaderOptions {
  sampleChunkRows?: number;
  /**
   * Asked before staged parent rows are written mid-file (to make room for samples): false keeps
   * everything staged until the end, e.g. while an NDJSON file still references records it has not
   * reached yet.
   */
  canApplyParents?: (query: QueryFn) => Promise<boolean>;
}

export interface LoadSummary {
  /** Records received per section. */
  records: Record<SectionName, number>;
  /** Rows inserted or changed per section (identical rows are left alone and not counted). */
  written: Record<SectionName, number>;
}

interface SampleSpan {
  organizationId: string;
  workloadId: string;
  low: number;
  high: number;
}

interface SectionBuffer {
  parts: string[];
  bytes: number;
}

function perSection(): Record<SectionName, number> {
  return Object.fromEntries(SECTIONS.map((section) => [section, 0])) as Record<SectionName, number>;
}

/**
 * Writes records in one transaction: COPY into temporary staging tables, then one set-based upsert
 * per table. All or nothing: `finish()` commits, anything else (`abort()`, an error) rolls back.
 * Statements run one after another on a single connection while the caller keeps producing.
 */
export class BulkLoader {
  private readonly buffers = new Map<SectionName, SectionBuffer>();
  private readonly records = perSection();
  private readonly written = perSection();
  private queue: Promise<void> = Promise.resolve();
  private queuedBytes = 0;
  private failure: Error | null = null;
  private stagedParents = 0;
  private stagedSamples = 0;
  private nextSampleFlushAt: number;
  /** Per staged workload: the span of its staged samples (to tell a fresh load from an overlapping one). */
  private sampleSpans = new Map<string, SampleSpan>();
  private done = false;
  private sinceYield = 0;

  private constructor(
    private readonly connection: DedicatedConnection,
    private readonly options: Required<BulkLoaderOptions>,
  ) {
    this.nextSampleFlushAt = options.sampleChunkRows;
  }

  static async open(dataSource: DataSource, options: BulkLoaderOptions = {}): Promise<BulkLoader> {
    const connection = await takeConnection(dataSource);
    const loader = new BulkLoader(connection, {
      sampleChunkRows: options.sampleChunkRows ?? DEFAULT_SAMPLE_CHUNK,
      canApplyParents: options.canApplyParents ?? (async () => true),
    });
    try {
      await loader.begin();
    } catch (error) {
      await connection.release();
      throw error;
    }
    return loader;
  }

  private get client(): PoolClient {
    return this.connection.client;
  }

  /** Statement timings on stderr with GPUCAP_IMPORT_TRACE=1, to see where a slow load spends its time. */
  private async run(sql: string, params?: unknown[]) {
    const started = Date.now();
    const result = await this.client.query(sql, params);
    if (process.env.GPUCAP_IMPORT_TRACE) {
      process.stderr.write(
        `[import] ${Date.now() - started} ms  ${result.rowCount ?? ''}  ${sql.replace(/\s+/g, ' ').slice(0, 70)}\n`,
      );
    }
    return result;
  }

  private async begin(): Promise<void> {
    await this.client.query('BEGIN');
    // A large load is one long transaction; the service's per-statement bound does not apply here.
    await this.client.query('SET LOCAL statement_timeout = 0');
    // The rollup triggers group and sort a whole statement's rows; let them do it in memory.
    await this.client.query("SET LOCAL work_mem = '256MB'");
    for (const section of SECTIONS) {
      const { table, columns } = STAGING[section];
      await this.client.query(`CREATE TEMPORARY TABLE ${table} (loc integer, ${columns}) ON COMMIT DROP`);
    }
  }

  /** Runs a statement on the loader's connection, after everything queued before it. */
  readonly query: QueryFn = async <T>(sql: string, params: unknown[]) => {
    let rows: T[] = [];
    await this.enqueue(async () => {
      rows = (await this.client.query(sql, params)).rows as T[];
    });
    this.throwIfFailed();
    return rows;
  };

  /** Stages one record; resolves at once unless the connection is too far behind. */
  async add(record: ImportRecord): Promise<void> {
    this.throwIfFailed();
    const { section } = record;
    const text = (STAGING[section].encode as (row: unknown, location: number) => string)(
      record.row,
      record.location,
    );
    const buffer = this.buffers.get(section) ?? { parts: [], bytes: 0 };
    buffer.parts.push(text);
    buffer.bytes += text.length;
    this.buffers.set(section, buffer);
    this.records[section] += 1;
    if (section === 'metric_samples') {
      this.noteSample(record.row.organization_id, record.row.workload_id, record.row.timestamp.getTime());
      this.stagedSamples += 1;
    } else {
      this.stagedParents += 1;
    }
    if (buffer.bytes >= COPY_BATCH_BYTES) this.copyBuffer(section);
    // A producer that never waits would starve the socket: give pending I/O a turn now and then.
    if (++this.sinceYield >= YIELD_EVERY_RECORDS) {
      this.sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (this.stagedSamples >= this.nextSampleFlushAt) await this.flushSamplesIfPossible();
    if (this.queuedBytes > MAX_QUEUED_BYTES) await this.drain();
  }

  /** Writes everything still staged and commits. */
  async finish(): Promise<LoadSummary> {
    this.throwIfFailed();
    for (const section of SECTIONS) this.copyBuffer(section);
    this.enqueueApplyParents();
    this.enqueueApplySamples();
    void this.enqueue(async () => {
      await this.client.query('COMMIT');
      this.done = true;
    });
    await this.drain();
    await this.connection.release();
    return { records: { ...this.records }, written: { ...this.written } };
  }

  /** Rolls back (nothing written) and returns the connection; safe to call after a failure. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.queue.catch(() => undefined);
    try {
      await this.client.query('ROLLBACK');
      await this.connection.release();
    } catch {
      // A broken connection is rolled back by the server when it goes; let the pool drop it.
      await this.connection.release().catch(() => undefined);
    }
  }

  get progress(): { records: number; samples: number } {
    const total = Object.values(this.records).reduce((sum, count) => sum + count, 0);
    return { records: total, samples: this.records.metric_samples };
  }

  private noteSample(organizationId: string, workloadId: string, time: number): void {
    const key = `${organizationId}\u0000${workloadId}`;
    const span = this.sampleSpans.get(key);
    if (!span) this.sampleSpans.set(key, { organizationId, workloadId, low: time, high: time });
    else if (time < span.low) span.low = time;
    else if (time > span.high) span.high = time;
  }

  private async flushSamplesIfPossible(): Promise<void> {
    for (const section of SECTIONS) this.copyBuffer(section);
    await this.drain();
    if (this.stagedParents > 0 && !(await this.options.canApplyParents(this.query))) {
      // Keep staging; try again after another chunk.
      this.nextSampleFlushAt = this.stagedSamples + this.options.sampleChunkRows;
      return;
    }
    this.enqueueApplyParents();
    this.enqueueApplySamples();
    this.nextSampleFlushAt = this.options.sampleChunkRows;
  }

  /** Counters are reset when the work is queued: the producer keeps staging rows meanwhile. */
  private enqueueApplyParents(): void {
    if (this.stagedParents === 0) return;
    this.stagedParents = 0;
    void this.enqueue(() => this.applyParents());
  }

  private enqueueApplySamples(): void {
    const spans = [...this.sampleSpans.values()];
    if (this.stagedSamples === 0 || spans.length === 0) return;
    this.stagedSamples = 0;
    this.sampleSpans = new Map();
    void this.enqueue(() => this.applySamples(spans));
  }

  private copyBuffer(section: SectionName): void {
    const buffer = this.buffers.get(section);
    if (!buffer || buffer.bytes === 0) return;
    const payload = buffer.parts.join('');
    this.buffers.set(section, { parts: [], bytes: 0 });
    this.queuedBytes += payload.length;
    void this.enqueue(async () => {
      const started = Date.now();
      const stream = this.client.query(copyFrom(`COPY ${STAGING[section].table} FROM STDIN`));
      await pipeline(Readable.from([payload]), stream);
      if (process.env.GPUCAP_IMPORT_TRACE) {
        process.stderr.write(
          `[import] ${Date.now() - started} ms  COPY ${payload.length} bytes into ${STAGING[section].table}\n`,
        );
      }
      this.queuedBytes -= payload.length;
    });
  }

  private async applyParents(): Promise<void> {
    for (const section of PARENT_SECTIONS) {
      for (const sql of APPLY_SQL[section]) {
        this.written[section] += (await this.run(sql)).rowCount ?? 0;
      }
      await this.run(`TRUNCATE ${STAGING[section].table}`);
    }
  }

  private async applySamples(spans: SampleSpan[]): Promise<void> {
    const min = Math.min(...spans.map((span) => span.low));
    const max = Math.max(...spans.map((span) => span.high));
    await this.run('SELECT gpucap_ensure_sample_partitions($1, $2)', [new Date(min), new Date(max)]);
    const [{ overlapping }] = (
      await this.run(SAMPLE_SQL.overlapping, [
        spans.map((span) => span.organizationId),
        spans.map((span) => span.workloadId),
        spans.map((span) => new Date(span.low)),
        spans.map((span) => new Date(span.high)),
      ])
    ).rows as { overlapping: number }[];
    await this.client.query('SAVEPOINT samples');
    try {
      const result = await this.run(overlapping > 0 ? SAMPLE_SQL.upsert : SAMPLE_SQL.insert);
      this.written.metric_samples += result.rowCount ?? 0;
    } catch (error) {
      // 21000 (upsert) / 23505 (insert): the chunk repeats a sample (same workload and timestamp).
      const code = (error as { code?: string }).code;
      if (code !== '21000' && code !== '23505') throw error;
      await this.client.query('ROLLBACK TO SAVEPOINT samples');
      throw await this.duplicateSamplesError();
    }
    await this.client.query('RELEASE SAVEPOINT samples');
    await this.run(`TRUNCATE ${STAGING.metric_samples.table}`);
  }

  private async duplicateSamplesError(): Promise<ImportRejectedError> {
    const rows = (await this.client.query(DUPLICATE_SAMPLES_SQL)).rows as {
      first: number;
      second: number;
      workload_id: string;
      sampled_at: Date;
    }[];
    return new ImportRejectedError(
      rows.map((row) => ({
        section: 'metric_samples',
        location: row.second,
        seeAlso: row.first,
        message: `repeats the sample of workload '${row.workload_id}' at ${row.sampled_at.toISOString()}; a workload has one sample per timestamp`,
      })),
    );
  }

  /** Queues work on the connection; the returned promise never rejects (failures are kept and rethrown). */
  private enqueue(operation: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(async () => {
      if (this.failure) return;
      try {
        await operation();
      } catch (error) {
        this.failure = error instanceof Error ? error : new Error(String(error));
      }
    });
    return this.queue;
  }

  private async drain(): Promise<void> {
    await this.queue;
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }
}
