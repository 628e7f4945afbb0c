import { Pool, type PoolConfig } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';

/**
 * A small pool of its own beside the request pool, so its reads never queue behind slow requests:
 * the service's connection settings (timeouts, keep-alive, session options) with `bounds` on top.
 */
export function sidePool(dataSource: DataSource, bounds: PoolConfig): Pool {
  const options = dataSource.options as PostgresConnectionOptions;
  const pool = new Pool({ ...(options.extra as PoolConfig), connectionString: options.url, ...bounds });
  // A connection that dies while idle is replaced on the next query; the query itself reports errors.
  pool.on('error', () => undefined);
  return pool;
}

/** Two connections and a tight statement bound: a data version read is one primary-key lookup per organization. */
export const VERSION_READ_BOUNDS: PoolConfig = {
  max: 2,
  statement_timeout: 2000,
  query_timeout: 3000,
  application_name: 'gpucap-versions',
};
