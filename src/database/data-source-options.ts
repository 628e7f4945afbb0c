import { DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations';
import { ENTITIES } from './entities';

/** How long one statement may take on the server; 0 for none. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
/** The client gives up this long after the server would have: only when the server cannot answer at all. */
const CLIENT_SIDE_MARGIN_MS = 2_000;
/** How long a request waits for a connection (or, for an aggregate read, its turn) before its 503. */
export const CONNECTION_WAIT_MS = 3_000;

export interface ConnectionBounds {
  poolSize: number;
  statementTimeoutMs: number;
  /**
   * Also bound every query client-side, so a frozen or cut-off server turns into an error instead of
   * a wait as long as the outage. Only for the HTTP service: a CLI import streams far longer.
   */
  clientSideTimeout: boolean;
  /**
   * Turn PostgreSQL's JIT off for the session. The request statements are estimated expensive
   * (joins over rollups and edge rows) but run in milliseconds; compiling them costs far more.
   */
  noJit?: boolean;
}

const CLI_BOUNDS: ConnectionBounds = {
  poolSize: 10,
  statementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS,
  clientSideTimeout: false,
};

/** Migrations may rewrite large tables: no statement limit, and a pool of two (a lock and the work). */
export const MIGRATION_BOUNDS: ConnectionBounds = {
  poolSize: 2,
  statementTimeoutMs: 0,
  clientSideTimeout: false,
};

/** One definition of the database connection, shared by the HTTP service, the CLI and the tests. */
export function dataSourceOptions(url: string, bounds: Partial<ConnectionBounds> = {}): DataSourceOptions {
  const { poolSize, statementTimeoutMs, clientSideTimeout, noJit } = { ...CLI_BOUNDS, ...bounds };
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations,
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: poolSize,
      // A pool that cannot get a connection answers quickly (503) instead of queueing the request.
      connectionTimeoutMillis: CONNECTION_WAIT_MS,
      statement_timeout: statementTimeoutMs,
      ...(clientSideTimeout && statementTimeoutMs > 0
        ? { query_timeout: statementTimeoutMs + CLIENT_SIDE_MARGIN_MS }
        : {}),
      // Notices a peer that vanished (cut cable, dead host) on an idle connection.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'gpucap',
      ...(noJit ? { options: '-c jit=off' } : {}),
    },
  };
}
