import { Global, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { sidePool } from './side-pool';

/** A request statement unanswered this long makes the watch ask whether the server answers at all. */
const STALL_MS = 1500;
/** How long `SELECT 1` may take before the server counts as gone (generous: a busy server is not a dead one). */
const PROBE_TIMEOUT_MS = 2000;
/** While the server is gone, how often the watch asks again. */
const REPROBE_MS = 1000;

/** Raised instead of waiting on a database the watch has found unresponsive (answered 503). */
export class DatabaseUnresponsiveError extends Error {
  constructor() {
    super('The database does not answer');
  }
}

/**
 * Turns a frozen database (connections open, nothing answers) into fast 503s instead of requests
 * that wait out the client-side query timeout. A statement unanswered after STALL_MS makes the
 * watch run `SELECT 1` on a connection of its own: a server that answers is only slow, and the
 * statement keeps its own bounds; one that does not is marked unresponsive, every watched wait is
 * released with DatabaseUnresponsiveError, new requests are refused at once (DatabaseReadyGuard),
 * and the probe repeats every REPROBE_MS until the server answers again.
 */
@Injectable()
export class DatabaseStallWatch implements OnModuleDestroy {
  private readonly pool: Pool;
  private unresponsive = false;
  private probing: Promise<boolean> | null = null;
  private readonly waiting = new Set<(error: Error) => void>();
  private reprobe: NodeJS.Timeout | null = null;

  constructor(dataSource: DataSource) {
    this.pool = sidePool(dataSource, {
      max: 1,
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
      query_timeout: PROBE_TIMEOUT_MS,
      statement_timeout: PROBE_TIMEOUT_MS,
      application_name: 'gpucap-watch',
    });
  }

  get isUnresponsive(): boolean {
    return this.unresponsive;
  }

  async onModuleDestroy(): Promise<void> {
    if (this.reprobe) clearTimeout(this.reprobe);
    await this.pool.end();
  }

  /**
   * The outcome of `work` (started here, not at all while the server is known to be gone), or
   * DatabaseUnresponsiveError as soon as the watch finds the server gone.
   */
  watch<T>(work: () => Promise<T>): Promise<T> {
    if (this.unresponsive) return Promise.reject(new DatabaseUnresponsiveError());
    return new Promise<T>((resolve, reject) => {
      const release = (error: Error) => reject(error);
      const stalled = setTimeout(() => void this.probe(), STALL_MS);
      this.waiting.add(release);
      work()
        .then(resolve, reject)
        .finally(() => {
          clearTimeout(stalled);
          this.waiting.delete(release);
        });
    });
  }

  private probe(): Promise<boolean> {
    this.probing ??= this.pool
      .query('SELECT 1')
      .then(
        () => true,
        () => false,
      )
      .then((answers) => {
        this.probing = null;
        if (answers) this.recovered();
        else this.lost();
        return answers;
      });
    return this.probing;
  }

  private lost(): void {
    this.unresponsive = true;
    for (const release of this.waiting) release(new DatabaseUnresponsiveError());
    this.waiting.clear();
    this.reprobe ??= setTimeout(() => {
      this.reprobe = null;
      void this.probe();
    }, REPROBE_MS);
  }

  private recovered(): void {
    this.unresponsive = false;
  }
}

/** One watch per process, for every module that reads the database. */
@Global()
@Module({ providers: [DatabaseStallWatch], exports: [DatabaseStallWatch] })
export class DatabaseStallWatchModule {}
