import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import { currentReadTarget } from '../../database/read-target';
import { isIssued, type ScopedStatement } from './scoped-statement';

/**
 * The only database access of the tenant modules (workloads, metrics, capacity): it runs scoped
 * statements and nothing else, the way Vendure's getRepository(ctx) wants a RequestContext.
 */
@Injectable()
export class ScopedDatabase {
  constructor(
    private readonly dataSource: DataSource,
    private readonly stallWatch: DatabaseStallWatch,
  ) {}

  async run<T>(statement: ScopedStatement): Promise<T[]> {
    if (!isIssued(statement)) throw new Error('Only statements made by scopedStatement can run');
    return this.stallWatch.watch(() => this.query<T>(statement));
  }

  private async query<T>(statement: ScopedStatement): Promise<T[]> {
    // A request routed to a replica runs every statement there (server/read-routing/).
    const replica = currentReadTarget()?.pool;
    const { name, text, values } = statement;
    if (replica) return (await replica.query({ name, text, values })).rows as T[];
    if (statement.name === undefined) return this.dataSource.query<T[]>(statement.text, statement.values);
    // TypeORM's query() has no named statements: the same pool (its settings, its errors), by pg itself.
    const { rows } = await this.pool().query({
      name: statement.name,
      text: statement.text,
      values: statement.values,
    });
    return rows as T[];
  }

  private pool(): Pool {
    return (this.dataSource.driver as unknown as { master: Pool }).master;
  }
}
