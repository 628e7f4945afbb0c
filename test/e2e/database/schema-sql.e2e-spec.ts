import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpSchema, SCHEMA_COMMAND } from '../../../scripts/schema-dump';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';

const COMMITTED = join(__dirname, '..', '..', '..', 'docs', 'sql', 'schema.sql');
const HINT = `docs/sql/schema.sql is out of date: run \`${SCHEMA_COMMAND}\` and commit the result`;

/** docs/sql/schema.sql is what the migrations build today, read back from a freshly migrated database. */
describe('docs/sql/schema.sql', () => {
  let database: OwnDatabase;

  beforeAll(async () => {
    database = await createOwnDatabase('schema_sql', 1);
  });

  afterAll(async () => {
    await database?.drop();
  });

  it('matches the schema the migrations build', async () => {
    const dumped = await dumpSchema((sql) => database.dataSource.query(sql));
    const committed = readFileSync(COMMITTED, 'utf8');
    if (dumped === committed) return;
    const dumpedLines = dumped.split('\n');
    const committedLines = committed.split('\n');
    const line = dumpedLines.findIndex((text, index) => text !== committedLines[index]);
    throw new Error(
      `${HINT}\nfirst difference at line ${line + 1}:\n` +
        `  committed: ${committedLines[line] ?? '(end of file)'}\n` +
        `  migrated:  ${dumpedLines[line] ?? '(end of file)'}`,
    );
  });

  it('lists the tables, functions and triggers the rollups depend on, without run-time partitions', async () => {
    const committed = readFileSync(COMMITTED, 'utf8');
    expect(committed).toContain('CREATE TABLE capacity_usage_daily (');
    expect(committed).toContain(') PARTITION BY RANGE (sampled_at);');
    expect(committed).toContain('CREATE OR REPLACE FUNCTION public.gpucap_capacity_rollup_trigger()');
    expect(committed).toContain('EXECUTE FUNCTION gpucap_capacity_rollup_trigger();');
    // A weekly partition listed would make the file stale each Monday.
    expect(committed).not.toMatch(/CREATE TABLE \w+_w\d{4}_\d{2} /);
    expect(committed).not.toContain('schema_migrations');
  });
});
