import { loadConfig } from '../../../src/core/config/app-config';
import { dataSourceOptions, MIGRATION_BOUNDS } from '../../../src/database/data-source-options';

const URL = 'postgres://gpucap@127.0.0.1:5432/gpucap';

function extra(options: ReturnType<typeof dataSourceOptions>): Record<string, unknown> {
  return (options as { extra: Record<string, unknown> }).extra;
}

describe('dataSourceOptions', () => {
  it('bounds the service client-side a little above the server statement timeout, with TCP keepalive', () => {
    expect(
      extra(dataSourceOptions(URL, { poolSize: 7, statementTimeoutMs: 5000, clientSideTimeout: true })),
    ).toEqual({
      max: 7,
      connectionTimeoutMillis: 3000,
      statement_timeout: 5000,
      query_timeout: 7000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'gpucap',
    });
  });

  it('runs migrations without a statement timeout, server or client side', () => {
    const bounds = extra(dataSourceOptions(URL, MIGRATION_BOUNDS));
    expect(bounds).toMatchObject({ max: 2, statement_timeout: 0 });
    expect(bounds).not.toHaveProperty('query_timeout');
  });

  it('leaves CLI work (imports stream for minutes) without a client-side timeout', () => {
    const bounds = extra(dataSourceOptions(URL, { poolSize: 4 }));
    expect(bounds).toMatchObject({ max: 4, statement_timeout: 30_000 });
    expect(bounds).not.toHaveProperty('query_timeout');
  });
});

describe('lifecycle configuration', () => {
  it('reads MIGRATE_ON_START as true or false only, default true', () => {
    expect(loadConfig({}).MIGRATE_ON_START).toBe(true);
    expect(loadConfig({ MIGRATE_ON_START: 'false' }).MIGRATE_ON_START).toBe(false);
    expect(loadConfig({ MIGRATE_ON_START: 'true' }).MIGRATE_ON_START).toBe(true);
    expect(() => loadConfig({ MIGRATE_ON_START: 'no' })).toThrow(
      'Invalid configuration:\n  MIGRATE_ON_START: MIGRATE_ON_START must be true or false',
    );
  });

  it('reads DATABASE_STATEMENT_TIMEOUT_MS, default 10 s', () => {
    expect(loadConfig({}).DATABASE_STATEMENT_TIMEOUT_MS).toBe(10_000);
    expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '2500' }).DATABASE_STATEMENT_TIMEOUT_MS).toBe(2500);
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '10' })).toThrow(
      'DATABASE_STATEMENT_TIMEOUT_MS',
    );
  });
});
