import { DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations';
import { ENTITIES } from './entities';

/** One definition of the database connection, shared by the HTTP service, the CLI and the tests. */
export function dataSourceOptions(url: string, poolSize = 20): DataSourceOptions {
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
      connectionTimeoutMillis: 3000,
      // Every statement is bounded so a stuck query cannot hold a connection forever.
      statement_timeout: 30000,
      application_name: 'gpucap',
    },
  };
}
