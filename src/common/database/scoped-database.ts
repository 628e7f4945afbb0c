import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isIssued, type ScopedStatement } from './scoped-statement';

/**
 * The only database access of the tenant modules (workloads, metrics, capacity): it runs scoped
 * statements and nothing else, the way Vendure's getRepository(ctx) wants a RequestContext.
 */
@Injectable()
export class ScopedDatabase {
  constructor(private readonly dataSource: DataSource) {}

  async run<T>(statement: ScopedStatement): Promise<T[]> {
    if (!isIssued(statement)) throw new Error('Only statements made by scopedStatement can run');
    return this.dataSource.query<T[]>(statement.text, statement.values);
  }
}
