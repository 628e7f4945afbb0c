import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An organization's zone as PostgreSQL can use it. Imports now accept only zones that Node and
 * PostgreSQL read alike, but a zone stored before that check (`US/Pacific-New`, unknown to
 * PostgreSQL) made every "today"/"this_week" statistic of its organization a 500. Such a zone is read
 * as UTC instead (docs/architecture.md); re-importing the organization with a valid zone fixes it.
 * The exception block costs one subtransaction per call: statistics call it once per request.
 */
export class KnownTimeZones1763800009100 implements MigrationInterface {
  name = 'KnownTimeZones1763800009100';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION gpucap_known_time_zone(zone text) RETURNS text LANGUAGE plpgsql STABLE AS $fn$
      BEGIN
        PERFORM now() AT TIME ZONE zone;
        RETURN zone;
      EXCEPTION WHEN invalid_parameter_value THEN
        RETURN 'UTC';
      END
      $fn$;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS gpucap_known_time_zone(text);`);
  }
}
