import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A data version per organization: any change to the rows an answer is computed
 * from gives the organization a new version in the same transaction, so a cached answer is valid
 * exactly while its organization's version is unchanged (src/common/http/response-cache).
 *
 * - Statement-level triggers on every table the read API reads bump the organizations their rows
 *   name (old and new), and TRUNCATE bumps every organization. Writers need no code of their own,
 *   and cannot forget it. Dropping a sample partition fires no trigger: `gpucap prune` calls
 *   gpucap_bump_data_versions itself.
 * - Versions come from one sequence, so a version number is never reused, not even by an
 *   organization deleted and created again.
 * - Each bump locks the organization's version row until commit. Writers of workloads and samples
 *   already hold the organization's writer lock (migration 9000), taken in one sorted call, so two
 *   writers never wait on each other's version rows in a cycle; the rows of one statement are
 *   locked in ascending order.
 */
const TABLES = [
  'organizations',
  'initiatives',
  'capacity_pools',
  'pool_instance_types',
  'allocations',
  'members',
  'workloads',
  'metric_samples',
];

const EVENTS = [
  { event: 'INSERT', referencing: 'NEW TABLE AS new_rows', sources: ['new_rows'] },
  {
    event: 'UPDATE',
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
    sources: ['old_rows', 'new_rows'],
  },
  { event: 'DELETE', referencing: 'OLD TABLE AS old_rows', sources: ['old_rows'] },
];

function bumpFunctionSql(event: string, sources: string[]): string {
  const organizations = sources.map((table) => `SELECT organization_id FROM ${table}`).join(' UNION ');
  return `
    CREATE FUNCTION gpucap_data_changed_${event.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      PERFORM gpucap_bump_data_versions(ARRAY(${organizations}));
      RETURN NULL;
    END
    $fn$;`;
}

export class DataVersions1763800016000 implements MigrationInterface {
  name = 'DataVersions1763800016000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE SEQUENCE gpucap_data_version;
      CREATE TABLE organization_data_versions (
        organization_id  text PRIMARY KEY REFERENCES organizations (organization_id) ON DELETE CASCADE,
        version          bigint NOT NULL,
        changed_at       timestamptz NOT NULL
      );

      -- Organizations that no longer exist (a statement deleting one) have nothing left to version.
      CREATE FUNCTION gpucap_bump_data_versions(organization_ids text[]) RETURNS void
      LANGUAGE sql SET jit = off AS $fn$
        INSERT INTO organization_data_versions AS v (organization_id, version, changed_at)
        SELECT o.organization_id, nextval('gpucap_data_version'), clock_timestamp()
        FROM organizations o
        WHERE o.organization_id = ANY (organization_ids)
        ORDER BY o.organization_id
        ON CONFLICT (organization_id) DO UPDATE
          SET version = excluded.version, changed_at = excluded.changed_at
      $fn$;

      CREATE FUNCTION gpucap_data_changed_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM organizations));
        RETURN NULL;
      END
      $fn$;
    `);
    for (const { event, sources } of EVENTS) await queryRunner.query(bumpFunctionSql(event, sources));
    for (const table of TABLES) {
      for (const { event, referencing } of EVENTS) {
        await queryRunner.query(`
          CREATE TRIGGER ${table}_data_version_${event.toLowerCase()} AFTER ${event} ON ${table}
            REFERENCING ${referencing}
            FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_${event.toLowerCase()}();`);
      }
      await queryRunner.query(`
        CREATE TRIGGER ${table}_data_version_truncate AFTER TRUNCATE ON ${table}
          FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_truncate();`);
    }
    await queryRunner.query(
      'SELECT gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM organizations))',
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES) {
      for (const event of [...EVENTS.map((e) => e.event), 'TRUNCATE']) {
        await queryRunner.query(`DROP TRIGGER ${table}_data_version_${event.toLowerCase()} ON ${table}`);
      }
    }
    for (const event of [...EVENTS.map((e) => e.event), 'TRUNCATE']) {
      await queryRunner.query(`DROP FUNCTION gpucap_data_changed_${event.toLowerCase()}()`);
    }
    await queryRunner.query(`
      DROP FUNCTION gpucap_bump_data_versions(text[]);
      DROP TABLE organization_data_versions;
      DROP SEQUENCE gpucap_data_version;
    `);
  }
}
