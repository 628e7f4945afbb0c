import type { PoolClient } from 'pg';
import type { DataSource } from 'typeorm';

/** One pooled pg connection taken from the DataSource, for what TypeORM cannot do (COPY). */
export interface DedicatedConnection {
  client: PoolClient;
  release(): Promise<void>;
}

/** TypeORM's postgres query runner resolves `connect()` with the underlying pg client. */
export async function takeConnection(dataSource: DataSource): Promise<DedicatedConnection> {
  const runner = dataSource.createQueryRunner();
  const client = (await runner.connect()) as PoolClient;
  return { client, release: () => runner.release() };
}
