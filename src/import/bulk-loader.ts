import { RECOSTED_TABLE } from '../rollups/workload-costs/workload-costs.definitions';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PoolClient, QueryResult } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { DataSource } from 'typeorm';
import { ImportRejectedError } from './import-errors';
import { ImportRecord, SectionName, SECTIONS } from './import-sections';
import { DedicatedConnection, takeConnection } from './pg-connection';
import type { QueryFn } from './reference-tracker';
import { sealSamples } from './sample-seal';
import {
  APPLY_SQL,
  openChunkTable,
  SAMPLE_SQL,
  sampleChunkTable,
  SEALED_STAGE_SQL,
  sealedStagePartition,
  STAGING,
} from './staging-tables';
import { LOCK_ORGANIZATIONS_SQL } from './writer-lock';

const PARENT_SECTIONS = SECTIONS.filter(
  (section): section is Exclude<SectionName, 'metric_samples'> => section !== 'metric_samples',
);
/** COPY batches: big enough that a round trip is noise, small enough to keep memory flat. */
const COPY_BATCH_BYTES = 1024 * 1024;
/** Records staged between two turns of the event loop (COPY data only moves while Node waits). */
const YIELD_EVERY_RECORDS = 2000;
/** Encoded text waiting for the connection; the producer waits above this (bounds the importer's memory). */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/**
 * Samples per staging table, and so per INSERT ... SELECT: large set-based statements suit the
 * statement-level rollup triggers, while each statement's transition tables stay in memory.
 */
const SAMPLE_CHUNK_ROWS = 1_000_000;
/** Workloads written by one load from which stale planner statistics of the table are refreshed before its samples. */
const ANALYZE_AFTER_WORKLOADS = 10_000;

export interface LoadSummary {
  /** Records received per section. */
  records: Record<SectionName, number>;
  /** Rows inserted or changed per section (identical rows are left alone and not counted). */
  written: Record<SectionName, number>;
  /** Samples older than their organization's retention boundary (already pruned), left out. */
  skippedPrunedSamples: number;
  /** Stored workloads whose money changed with the prices written (src/rollups/workload-costs/). */
  recostedWorkloads: number;
}

interface SectionBuffer {
  parts: string[];
  bytes: number;
}

function perSection(): Record<SectionName, number> {
  return Object.fromEntries(SECTIONS.map((section) => [section, 0])) as Record<SectionName, number>;
}

/**
 * Writes records in one transaction: COPY into temporary staging tables while the input is read,
 * then, once it has all been read, the writer locks of its organizations (docs/architecture.md,
 * "Writers") and one set-based upsert per table. Nothing reaches the real tables before the locks,
 * so the order in which a file names organizations can never make two writers wait on each other.
 * All or nothing: `finish()` commits, anything else (`abort()`, an error) rolls back.
 */
export class BulkLoader {
  private readonly buffers = new Map<SectionName, SectionBuffer>();
  private readonly records = perSection();
  private readonly written = perSection();
  private skippedPrunedSamples = 0;
  private readonly organizations = new Set<string>();
  private queue: Promise<void> = Promise.resolve();
  private queuedBytes = 0;
  private failure: Error | null = null;
  /** Readings staged in each sample chunk, in chunk order. */
  private readonly chunkRows: number[] = [];
  private earliestSample = Infinity;
  private latestSample = -Infinity;
  private locked = false;
  private done = false;
  private sinceYield = 0;

  private constructor(
    private readonly dataSource: DataSource,
    private readonly connection: DedicatedConnection,
    private readonly trace: boolean,
    private readonly sampleChunkRows: number,
  ) {}

  /**
   * `trace`: each statement's time on stderr (GPUCAP_IMPORT_TRACE), to see where a slow load spends
   * it; `sampleChunkRows`: samples per staging chunk.
   */
  static async open(
    dataSource: DataSource,
    {
      trace = false,
      sampleChunkRows = SAMPLE_CHUNK_ROWS,
    }: { trace?: boolean; sampleChunkRows?: number } = {},
  ): Promise<BulkLoader> {
    const connection = await takeConnection(dataSource);
    const loader = new BulkLoader(dataSource, connection, trace, sampleChunkRows);
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

  /** `counted`: the rows the trace reports, where the statement answers a count rather than rows. */
  private async run(sql: string, params?: unknown[], counted?: (result: QueryResult) => number) {
    const started = Date.now();
    const result = await this.client.query(sql, params);
    if (this.trace) {
      const rows = counted ? counted(result) : (result.rowCount ?? '');
      process.stderr.write(
        `[import] ${Date.now() - started} ms  ${rows}  ${sql.replace(/\s+/g, ' ').slice(0, 70)}\n`,
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
    for (const section of PARENT_SECTIONS) {
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
    if (this.locked) throw new Error('BulkLoader.add after lockOrganizations');
    const { section } = record;
    if (section === 'metric_samples') this.noteSample(record.row.timestamp.getTime());
    const text = (STAGING[section].encode as (row: unknown, location: number) => string)(
      record.row,
      record.location,
    );
    const buffer = this.buffers.get(section) ?? { parts: [], bytes: 0 };
    buffer.parts.push(text);
    buffer.bytes += text.length;
    this.buffers.set(section, buffer);
    this.records[section] += 1;
    this.organizations.add(record.row.organization_id);
    if (buffer.bytes >= COPY_BATCH_BYTES) this.copyBuffer(section);
    // A producer that never waits would starve the socket: give pending I/O a turn now and then.
    if (++this.sinceYield >= YIELD_EVERY_RECORDS) {
      this.sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (this.queuedBytes > MAX_QUEUED_BYTES) await this.drain();
  }

  /**
   * Takes the writer lock of every organization the staged records name. Call once the whole input
   * has been staged, before reading the database to check references, so that check and the writes
   * see the same settled state. `finish()` calls it when the caller has not.
   */
  async lockOrganizations(): Promise<void> {
    this.throwIfFailed();
    if (this.locked) return;
    this.locked = true;
    for (const section of SECTIONS) this.copyBuffer(section);
    await this.drain();
    await this.ensureSamplePartitions();
    await this.query(LOCK_ORGANIZATIONS_SQL, [[...this.organizations]]);
  }

  /** Writes everything staged and commits. */
  async finish(): Promise<LoadSummary> {
    await this.lockOrganizations();
    void this.enqueue(() => this.applyParents());
    // A load of several chunks merges its sealed readings at the end, in as many partitions as
    // chunks (each about a chunk's size); a load of one merges them with its split.
    const partitions = this.chunkRows.length > 1 ? this.chunkRows.length : 0;
    if (partitions > 0) void this.enqueue(() => this.createSealedStage(partitions));
    for (const [chunk, rows] of this.chunkRows.entries()) {
      void this.enqueue(() => this.applySampleChunk(sampleChunkTable(chunk), rows, partitions === 0));
    }
    if (partitions > 0) void this.enqueue(() => this.applySealedStage(partitions));
    let recostedWorkloads = 0;
    void this.enqueue(async () => {
      // The price triggers list, per transaction, the workloads they re-cost.
      const { rows } = await this.client.query<{ listed: boolean }>(
        `SELECT to_regclass('pg_temp.${RECOSTED_TABLE}') IS NOT NULL AS listed`,
      );
      if (rows[0].listed) {
        const counted = await this.client.query<{ count: number }>(
          `SELECT count(*)::int AS count FROM pg_temp.${RECOSTED_TABLE}`,
        );
        recostedWorkloads = counted.rows[0].count;
      }
      await this.client.query('COMMIT');
      this.done = true;
    });
    await this.drain();
    await this.connection.release();
    // Days that ended since the last seal leave the rows; nothing to do on most calls.
    await sealSamples(this.dataSource, { organizationIds: [...this.organizations] });
    return {
      records: { ...this.records },
      written: { ...this.written },
      skippedPrunedSamples: this.skippedPrunedSamples,
      recostedWorkloads,
    };
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

  /** Samples go to a new staging table every SAMPLE_CHUNK_ROWS, each applied by its own statement. */
  private noteSample(time: number): void {
    if (time < this.earliestSample) this.earliestSample = time;
    if (time > this.latestSample) this.latestSample = time;
    const last = this.chunkRows.length - 1;
    if (last >= 0 && this.chunkRows[last] < this.sampleChunkRows) {
      this.chunkRows[last] += 1;
      return;
    }
    this.copyBuffer('metric_samples');
    const table = sampleChunkTable(this.chunkRows.length);
    this.chunkRows.push(1);
    void this.enqueue(async () => {
      await this.client.query(SAMPLE_SQL.create(table));
    });
  }

  /**
   * The weeks the samples fall in (rows and day blocks), created on another connection before the locks: creating a
   * partition locks the samples table for readers until its transaction ends, which here is a
   * moment, not the whole import. Weeks wholly before every organization's retention boundary are
   * not recreated (their samples are skipped).
   */
  private async ensureSamplePartitions(): Promise<void> {
    if (this.earliestSample > this.latestSample) return;
    const organizations = [...this.organizations];
    // Rows, day blocks and their hours each in a statement of their own (sample-store.definitions.ts says why).
    for (const ensure of [
      'gpucap_ensure_sample_partitions',
      'gpucap_ensure_sample_day_partitions',
      'gpucap_ensure_sample_hour_partitions',
    ]) {
      await this.dataSource.query(
        `SELECT ${ensure}(
           greatest($1::timestamptz, (SELECT min(samples_before) FROM sample_retention
                                      WHERE organization_id = ANY ($3::text[])
                                      HAVING count(*) = cardinality($3::text[]))),
           $2::timestamptz)`,
        [new Date(this.earliestSample), new Date(this.latestSample), organizations],
      );
    }
  }

  private copyBuffer(section: SectionName): void {
    const buffer = this.buffers.get(section);
    if (!buffer || buffer.bytes === 0) return;
    const payload = buffer.parts.join('');
    const table =
      section === 'metric_samples' ? sampleChunkTable(this.chunkRows.length - 1) : STAGING[section].table;
    this.buffers.set(section, { parts: [], bytes: 0 });
    this.queuedBytes += payload.length;
    void this.enqueue(async () => {
      const started = Date.now();
      const stream = this.client.query(copyFrom(`COPY ${table} FROM STDIN`));
      await pipeline(Readable.from([payload]), stream);
      if (this.trace) {
        process.stderr.write(
          `[import] ${Date.now() - started} ms  COPY ${payload.length} bytes into ${table}\n`,
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
    }
    // The samples' rollup triggers join workloads. Where the table's statistics describe far fewer
    // rows than this load wrote (a first load into a new database), the planner walks a whole index
    // once per changed workload; this transaction's own rows count in ANALYZE. Its lock, held to
    // commit, only stops another ANALYZE or VACUUM of workloads, so it is taken only then.
    if (this.written.workloads >= ANALYZE_AFTER_WORKLOADS) {
      const [{ stale }] = (
        await this.run(`SELECT reltuples < $1 AS stale FROM pg_class WHERE oid = 'workloads'::regclass`, [
          this.written.workloads / 2,
        ])
      ).rows as { stale: boolean }[];
      if (stale) await this.run('ANALYZE workloads');
    }
  }

  private async createSealedStage(partitions: number): Promise<void> {
    for (const sql of SEALED_STAGE_SQL.create(partitions)) await this.client.query(sql);
  }

  /**
   * A chunk's readings before their watermark go to the sealed stage (`mergeNow`: straight into
   * their day blocks), the others to the rows. While a seal is under way, a reading it has not
   * moved yet leaves the rows when the chunk sends one of the same time to the blocks.
   */
  private async applySampleChunk(table: string, staged: number, mergeNow: boolean): Promise<void> {
    const skipped = (await this.run(SAMPLE_SQL.skipPruned(table))).rowCount ?? 0;
    this.skippedPrunedSamples += skipped;
    const [{ sealing }] = (await this.run(SAMPLE_SQL.sealing(table))).rows as { sealing: boolean }[];
    if (sealing) await this.run(SAMPLE_SQL.unsealRows(table));
    await this.run(SAMPLE_SQL.createOpen(table));
    const sealed = mergeNow
      ? await this.mergeIntoDays(SAMPLE_SQL.splitAndMerge(table), table)
      : // Traced as 0 rows: its readings are written, and counted, by the stage's merges.
        ((await this.run(SAMPLE_SQL.split(table), [], () => 0)).rowCount ?? 0);
    if (staged - skipped - sealed > 0) await this.applyOpenRows(openChunkTable(table));
    await this.run(`DROP TABLE ${table}, ${openChunkTable(table)}`);
  }

  /** The chunk's readings from the watermark on (its open table): rows of metric_samples. */
  private async applyOpenRows(table: string): Promise<void> {
    const [{ overlapping }] = (await this.run(SAMPLE_SQL.overlapping(table))).rows as {
      overlapping: boolean;
    }[];
    // 21000 (upsert) / 23505 (insert): the chunk repeats a sample (same workload and timestamp).
    const result = await this.rejectingRepeatedSamples(
      () => this.run(overlapping ? SAMPLE_SQL.upsert(table) : SAMPLE_SQL.insert(table)),
      ({ code }) => code === '21000' || code === '23505',
      table,
    );
    this.written.metric_samples += result.rowCount ?? 0;
  }

  /** Each partition of the sealed stage merged into its day blocks by one statement. */
  private async applySealedStage(partitions: number): Promise<void> {
    for (let partition = 0; partition < partitions; partition += 1) {
      await this.mergeIntoDays(SEALED_STAGE_SQL.merge(partition), sealedStagePartition(partition));
    }
    await this.run(SEALED_STAGE_SQL.drop);
  }

  /**
   * Runs a merge into day blocks (sample-days.ts) over readings staged in `staged`; answers how
   * many readings it merged.
   */
  private async mergeIntoDays(sql: string, staged: string): Promise<number> {
    // The day's times must strictly increase: the load repeats a sample.
    const merged = await this.rejectingRepeatedSamples(
      () => this.run(sql, [], (result) => result.rows[0].readings),
      ({ code, constraint }) => code === '23514' && constraint === 'metric_sample_days_increasing',
      staged,
    );
    const [{ readings, changed }] = merged.rows as { readings: number; changed: number }[];
    this.written.metric_samples += changed;
    return readings;
  }

  /**
   * Runs `statement` in a savepoint; an error that `repeated` recognizes as a sample given twice
   * becomes the import's rejection naming the records in `staged`, read after rolling back to it.
   */
  private async rejectingRepeatedSamples(
    statement: () => Promise<QueryResult>,
    repeated: (error: { code?: string; constraint?: string }) => boolean,
    staged: string,
  ): Promise<QueryResult> {
    await this.client.query('SAVEPOINT samples');
    let result: QueryResult;
    try {
      result = await statement();
    } catch (error) {
      if (!repeated(error as { code?: string; constraint?: string })) throw error;
      await this.client.query('ROLLBACK TO SAVEPOINT samples');
      throw await this.duplicateSamplesError(staged);
    }
    await this.client.query('RELEASE SAVEPOINT samples');
    return result;
  }

  private async duplicateSamplesError(table: string): Promise<ImportRejectedError> {
    const rows = (await this.client.query(SAMPLE_SQL.duplicates(table))).rows as {
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
