import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../core/config/app-config';
import { CONNECTION_WAIT_MS } from '../../../database/data-source-options';
import { ApiError } from '../api-error';

interface Waiter {
  admit: () => void;
}

/**
 * Admission for the reads that aggregate (statistics and capacity): at most
 * AGGREGATE_READ_CONCURRENCY of them compute at once per replica; the others wait their turn in
 * arrival order. Their statements are CPU-bound in PostgreSQL, so running 20 at once on a server
 * with a few cores does not finish more of them per second: it shares the cores out, every one of
 * them takes 20 turns longer, and a request with two statements queues twice. In arrival order each
 * waits for the ones before it and then runs at full speed, so the slowest answers come back sooner at
 * the same throughput (docs/benchmarks.md, "Aggregate read gate"). Cache
 * hits and coalesced requests never take a turn: the response cache answers them before this gate.
 *
 * A request that waits longer than a connection may be waited for gets the same 503 as a pool with
 * no connection to give.
 */
@Injectable()
export class AggregateReadGate {
  private readonly limit: number;
  private running = 0;
  private readonly waiting: Waiter[] = [];

  constructor(config: AppConfig) {
    this.limit = config.AGGREGATE_READ_CONCURRENCY;
  }

  get runningCount(): number {
    return this.running;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.turn();
    try {
      return await work();
    } finally {
      this.handOver();
    }
  }

  private turn(): Promise<void> {
    if (this.running < this.limit) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(ApiError.databaseUnavailable());
      }, CONNECTION_WAIT_MS);
      this.waiting.push(waiter);
    });
  }

  /** The finished request's turn goes to the longest waiting one, if any. */
  private handOver(): void {
    const next = this.waiting.shift();
    if (next) next.admit();
    else this.running -= 1;
  }
}
