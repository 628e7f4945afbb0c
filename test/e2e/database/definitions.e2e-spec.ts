import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dumpSchema } from '../../../scripts/schema-dump';
import { backfills } from '../../../src/database/backfills';
import type { Backfill } from '../../../src/database/backfills/backfill';
import { migrations } from '../../../migrations';
import { dataSourceOptions } from '../../../src/database/data-source-options';
import { assertSchemaCurrent, migrate, openDataSource } from '../../../src/database/database-target';
import { definitions } from '../../../src/database/definitions';
import { applyDefinitions } from '../../../src/database/definitions/apply-definitions';
import { defineFunction, defineTrigger, type Definition } from '../../../src/database/definitions/definition';
import { insertSamples, insertWorkloads, seedOrganization } from '../../support/factories';
import { rollupResidue } from '../../support/rollup-residue';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import {
  createDatabase,
  dropDatabase,
  TEST_DATABASE_PREFIX,
  withDatabaseName,
} from '../../support/test-database';

const COMMITTED = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'sql', 'schema.sql'), 'utf8');

/** Today's definitions with one changed: `idle` gets a marker comment in its body. */
function withMarkedIdleHours(marker: string): Definition[] {
  return definitions.map((definition) =>
    definition.key === 'gpucap_idle_gpu_hours'
      ? defineFunction(definition.sql.replace(/\$\$\n/, `$$$$\n    -- ${marker}\n`))
      : definition,
  );
}

async function functionText(dataSource: DataSource, name: string): Promise<string> {
  const [row] = await dataSource.query<{ text: string }[]>(
    'SELECT pg_get_functiondef(to_regproc($1)) AS text',
    [name],
  );
  return row.text;
}

async function recorded(dataSource: DataSource): Promise<unknown[]> {
  return dataSource.query('SELECT kind, key, digest, applied_at FROM schema_definitions ORDER BY kind, key');
}

/**
 * Functions and triggers are written once (src/rollups/, src/database/definitions/) and applied by
 * `gpucap migrate` after the frozen migrations: the tests below pin what that runner promises.
 */
describe('definitions', () => {
  let database: OwnDatabase;

  beforeAll(async () => {
    database = await createOwnDatabase('definitions', 4);
  });

  afterAll(async () => {
    await database?.drop();
  });

  afterEach(async () => {
    await migrate(database.url);
  });

  it('applying them twice changes nothing: no statement, the same record, the same schema', async () => {
    const before = await recorded(database.dataSource);
    expect(before).toHaveLength(definitions.length);
    expect(await applyDefinitions(database.dataSource, definitions)).toEqual([]);
    expect(await migrate(database.url)).toEqual([]);
    expect(await recorded(database.dataSource)).toEqual(before);
    expect(await dumpSchema((sql) => database.dataSource.query(sql))).toBe(COMMITTED);
  });

  it('a changed body is applied alone, and commands refuse the database until migrate has run', async () => {
    expect(await applyDefinitions(database.dataSource, withMarkedIdleHours('changed here'))).toEqual([
      'function gpucap_idle_gpu_hours',
    ]);
    expect(await functionText(database.dataSource, 'gpucap_idle_gpu_hours')).toContain('-- changed here');
    await expect(assertSchemaCurrent(database.dataSource)).rejects.toThrow(
      'the database schema is not up to date (1 stale definition): run `gpucap migrate`',
    );
    expect(await migrate(database.url)).toEqual(['definitions (1 changed)']);
    expect(await functionText(database.dataSource, 'gpucap_idle_gpu_hours')).not.toContain('changed here');
    await expect(assertSchemaCurrent(database.dataSource)).resolves.toBeUndefined();
  });

  it('a definition removed from the code is dropped from the database', async () => {
    const extra = [
      defineFunction(
        'CREATE OR REPLACE FUNCTION gpucap_test_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$',
      ),
      defineTrigger(
        'CREATE OR REPLACE TRIGGER sample_retention_test_noop AFTER INSERT ON sample_retention FOR EACH STATEMENT EXECUTE FUNCTION gpucap_test_noop()',
      ),
    ];
    expect(await applyDefinitions(database.dataSource, [...definitions, ...extra])).toEqual([
      'function gpucap_test_noop',
      'trigger sample_retention.sample_retention_test_noop',
    ]);
    await expect(assertSchemaCurrent(database.dataSource)).rejects.toThrow('(2 stale definitions)');
    expect(await applyDefinitions(database.dataSource, definitions)).toEqual([
      'trigger sample_retention.sample_retention_test_noop (dropped)',
      'function gpucap_test_noop (dropped)',
    ]);
    const [row] = await database.dataSource.query<{ fn: string | null; triggers: number }[]>(
      `SELECT to_regproc('gpucap_test_noop')::text AS fn,
              (SELECT count(*)::int FROM pg_trigger WHERE tgname = 'sample_retention_test_noop') AS triggers`,
    );
    expect(row).toEqual({ fn: null, triggers: 0 });
    expect(await dumpSchema((sql) => database.dataSource.query(sql))).toBe(COMMITTED);
  });

  it('a backfill runs after the definitions it needs, once, and is recorded like a migration', async () => {
    const seen: string[] = [];
    const backfill: Backfill = {
      name: '1763800099000-test-backfill',
      up: async (runner) => {
        const [row] = await runner.query(
          "SELECT pg_get_functiondef(to_regproc('gpucap_idle_gpu_hours')) AS text",
        );
        seen.push(row.text);
      },
    };
    const steps = { definitions: withMarkedIdleHours('needed by the backfill'), backfills: [backfill] };
    expect(await migrate(database.url, steps)).toEqual(['1763800099000-test-backfill']);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('-- needed by the backfill');
    expect(await migrate(database.url, steps)).toEqual([]);
    expect(seen).toHaveLength(1);
    const names = await database.dataSource.query('SELECT name FROM schema_backfills ORDER BY name');
    expect(names).toEqual([...backfills, backfill].map(({ name }) => ({ name })));
    await database.dataSource.query('DELETE FROM schema_backfills WHERE name = $1', [backfill.name]);
  });

  it('waits for writers without ever holding a lock they wait for, so neither side deadlocks', async () => {
    const changedTriggers = definitions.map((definition) =>
      definition.key === 'workloads.workloads_period_insert' ||
      definition.key === 'metric_samples.metric_samples_aggregates_insert'
        ? defineTrigger(definition.sql.replace(' AFTER INSERT ', ' AFTER  INSERT '))
        : definition,
    );
    const writer = new Client({ connectionString: database.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('LOCK TABLE workloads IN ROW EXCLUSIVE MODE');
      let settled = false;
      const applying = applyDefinitions(database.dataSource, changedTriggers).finally(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(settled).toBe(false);
      // The writer now wants the other table: it gets it, as the applier holds nothing while it waits.
      await writer.query('LOCK TABLE metric_samples IN ROW EXCLUSIVE MODE');
      await writer.query('COMMIT');
      expect((await applying).sort()).toEqual([
        'trigger metric_samples.metric_samples_aggregates_insert',
        'trigger workloads.workloads_period_insert',
      ]);
    } finally {
      await writer.end();
    }
  });
});

/** Whether a migration came with the release before definitions (HourlySeal was its newest). */
const isBeforeDefinitions = (migration: { name: string }) =>
  Number(/\d+$/.exec(migration.name)![0]) <= 1763800029000;

describe('an upgrade from a database migrated before definitions existed', () => {
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL as string;
  const name = `${TEST_DATABASE_PREFIX}upgrade_${process.pid}_${Date.now().toString(36)}`;
  const url = withDatabaseName(serverUrl, name);

  afterAll(async () => {
    await dropDatabase(serverUrl, name);
  });

  it('ends with the same schema and rollups that equal their recomputation', async () => {
    await createDatabase(serverUrl, name);
    // What the release before definitions did: its versioned migrations and nothing more. Later
    // migrations reshape tables for today's trigger bodies, not for the ones those migrations wrote.
    const previous = await new DataSource({
      ...dataSourceOptions(url, { poolSize: 2 }),
      migrations: migrations.filter(isBeforeDefinitions),
    }).initialize();
    try {
      await previous.runMigrations({ transaction: 'each' });
      await expect(assertSchemaCurrent(previous)).rejects.toThrow(
        `(${definitions.length} stale definitions)`,
      );
      const organizationId = await seedOrganization(previous, {
        pools: [{ poolId: 'p', instanceTypes: ['a100'] }],
      });
      await insertWorkloads(previous, organizationId, [
        {
          workloadId: 'w1',
          instanceType: 'a100',
          gpuCount: 2,
          status: 'completed',
          submittedAt: '2026-10-02T00:00:00Z',
          startedAt: '2026-10-02T01:00:00Z',
          completedAt: '2026-10-03T05:30:00Z',
        },
        {
          workloadId: 'w2',
          instanceType: 'a100',
          gpuCount: 1,
          status: 'running',
          submittedAt: '2026-10-04T00:00:00Z',
          startedAt: '2026-10-04T00:10:00Z',
        },
      ]);
      await insertSamples(previous, organizationId, [
        { workloadId: 'w1', at: '2026-10-02T02:00:00Z', gpuUtilization: 20 },
        { workloadId: 'w1', at: '2026-10-02T02:01:00Z', gpuUtilization: 80 },
        { workloadId: 'w2', at: '2026-10-04T01:00:00Z', gpuUtilization: 10 },
      ]);

      // The later migrations, then the backfills after the definitions; with something versioned
      // run, the definitions go unnamed.
      expect(await migrate(url)).toEqual([
        ...migrations.filter((migration) => !isBeforeDefinitions(migration)).map(({ name }) => name),
        ...backfills.map(({ name }) => name),
      ]);

      const upgraded = await openDataSource(url, 2);
      try {
        await expect(assertSchemaCurrent(upgraded)).resolves.toBeUndefined();
        expect(await dumpSchema((sql) => upgraded.query(sql))).toBe(COMMITTED);
        expect(await rollupResidue(upgraded, organizationId)).toEqual({});
        const [{ count }] = await upgraded.query<{ count: number }[]>(
          'SELECT count(*)::int AS count FROM metric_aggregates WHERE organization_id = $1',
          [organizationId],
        );
        expect(count).toBe(2);
      } finally {
        await upgraded.destroy();
      }
    } finally {
      if (previous.isInitialized) await previous.destroy();
    }
  });
});
