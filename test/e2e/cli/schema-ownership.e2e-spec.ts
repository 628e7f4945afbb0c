import { Client } from 'pg';
import { migrations } from '../../../migrations';
import { backfills } from '../../../src/database/backfills';
import { migrate } from '../../../src/database/database-target';
import { runGpucap, startServe } from '../../support/serve-process';
import {
  createDatabase,
  dropDatabase,
  TEST_DATABASE_PREFIX,
  withDatabaseName,
} from '../../support/test-database';

/**
 * Who changes the schema of a DATABASE_URL database: `gpucap migrate`, and `serve` unless told not
 * to. Each test gets an empty database of its own.
 */
describe('schema changes on a DATABASE_URL database', () => {
  /** What `migrate` applies to an empty database: every migration, then every backfill. */
  const everything = [...migrations.map((migration) => migration.name), ...backfills.map(({ name }) => name)];
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL as string;
  const created: string[] = [];

  async function emptyDatabase(label: string): Promise<string> {
    const name = `${TEST_DATABASE_PREFIX}${label}_${process.pid}_${Date.now().toString(36)}`;
    await createDatabase(serverUrl, name);
    created.push(name);
    return withDatabaseName(serverUrl, name);
  }

  afterAll(async () => {
    for (const name of created) await dropDatabase(serverUrl, name);
  });

  it('a command other than migrate refuses a schema that is behind, and changes nothing', async () => {
    const url = await emptyDatabase('behind');
    const run = await runGpucap(['tokens', 'list', '--org', 'org-a'], { DATABASE_URL: url });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `gpucap tokens list failed: the database schema is not up to date (${migrations.length} pending migrations): run \`gpucap migrate\`\n`,
    );
    expect(await tableNames(url)).toEqual([]);

    const migrated = await runGpucap(['migrate'], { DATABASE_URL: url });
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toBe(`Applied: ${everything.join(', ')}\n`);
    const listed = await runGpucap(['tokens', 'list', '--org', 'org-a'], { DATABASE_URL: url });
    expect(listed).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });

  it('two migrations started at once both succeed: one applies everything, the other finds nothing', async () => {
    const url = await emptyDatabase('race');
    const results = await Promise.all([migrate(url), migrate(url)]);
    expect(results.map((applied) => applied.length).sort()).toEqual([0, everything.length]);
    expect(results.flat()).toEqual(everything);
    expect(await tableNames(url)).toContain('schema_migrations');
  });

  it.each([
    ['serve --no-migrate', ['--no-migrate'], {}],
    ['MIGRATE_ON_START=false', [], { MIGRATE_ON_START: 'false' }],
  ])('%s serves without touching the schema', async (_label, flags, env) => {
    const url = await emptyDatabase('nomigrate');
    const serve = await startServe({ DATABASE_URL: url, ...env }, 45_000, flags);
    try {
      const health = await fetch(`http://127.0.0.1:${serve.port}/v1/health`);
      expect(health.status).toBe(200);
      expect(await tableNames(url)).toEqual([]);
    } finally {
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    }
  });

  it('serve applies the migrations by default', async () => {
    const url = await emptyDatabase('serve');
    const serve = await startServe({ DATABASE_URL: url });
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(await tableNames(url)).toContain('schema_migrations');
  });
});

async function tableNames(url: string): Promise<string[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    return rows.map((row) => row.table_name);
  } finally {
    await client.end();
  }
}
