import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { DataSource } from 'typeorm';

export interface DatabaseConnectOptions {
  /** Runs before each attempt to connect, e.g. the migrations; a failure counts as the database being away. */
  prepare?: () => Promise<unknown>;
}

const FIRST_RETRY_MS = 500;
const LONGEST_RETRY_MS = 5_000;

/**
 * Connects the service's DataSource at boot, and when the database is away then, keeps trying in
 * the background instead of exiting: the service answers 503 until the first connection succeeds.
 */
export class DatabaseConnector implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private retry?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly options: DatabaseConnectOptions = {}) {}

  async connect(dataSource: DataSource): Promise<DataSource> {
    if (!(await this.attempt(dataSource))) this.scheduleRetry(dataSource, FIRST_RETRY_MS);
    return dataSource;
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private async attempt(dataSource: DataSource): Promise<boolean> {
    try {
      await this.options.prepare?.();
      await dataSource.initialize();
    } catch (error) {
      // The code only (ECONNREFUSED, 28P01, ...): driver messages name hosts.
      const reason = (error as { code?: string }).code ?? (error as Error).name;
      this.logger.warn(`database not reachable (${reason}); answering 503 and retrying`);
      return false;
    }
    if (this.stopped) await dataSource.destroy();
    else this.logger.log('database connected');
    return true;
  }

  private scheduleRetry(dataSource: DataSource, delayMs: number): void {
    if (this.stopped) return;
    this.retry = setTimeout(() => {
      void this.attempt(dataSource).then((connected) => {
        if (!connected) this.scheduleRetry(dataSource, Math.min(delayMs * 2, LONGEST_RETRY_MS));
      });
    }, delayMs);
    this.retry.unref();
  }
}
