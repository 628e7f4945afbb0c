import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What `gpucap alerts` last found firing, per organization and alert identity (a hash of its label
 * set). The evaluation itself is redone from the data every cycle; this table only remembers what
 * was sent, so a condition that stopped holding is sent once as resolved even across a restart or
 * an Alertmanager outage, and `GET /v1/alerts` lists what is firing. A row with `ends_at` set is a
 * resolution not yet delivered; it is deleted once Alertmanager took it.
 *
 * `initiative_id` is the team an alert concerns (a team's budget, a team's idle workload), null for
 * a pool or a sync source: readers limited to some initiatives see only their rows.
 */
export class AlertStates1763800024000 implements MigrationInterface {
  name = 'AlertStates1763800024000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE alert_states (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        fingerprint      text NOT NULL,
        alertname        text NOT NULL,
        initiative_id    text,
        labels           jsonb NOT NULL,
        annotations      jsonb NOT NULL,
        starts_at        timestamptz NOT NULL,
        ends_at          timestamptz,
        PRIMARY KEY (organization_id, fingerprint)
      );
      CREATE INDEX alert_states_initiative ON alert_states (organization_id, initiative_id, starts_at);
    `);
    // A firing or resolved alert changes what GET /v1/alerts answers: the response cache must see it.
    for (const [event, referencing] of [
      ['insert', 'NEW TABLE AS new_rows'],
      ['update', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['delete', 'OLD TABLE AS old_rows'],
    ]) {
      await queryRunner.query(`
        CREATE TRIGGER alert_states_data_version_${event} AFTER ${event.toUpperCase()} ON alert_states
          REFERENCING ${referencing}
          FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_${event}();`);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE IF EXISTS alert_states;');
  }
}
