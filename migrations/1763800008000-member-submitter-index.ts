import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A scoped caller's list filtered by submitter reads each of its initiatives in (submitted_at, id)
 * order. With only (organization, initiative, submitted_at) and (organization, submitter,
 * submitted_at) to choose from, a submitter who rarely or never worked in those initiatives made the
 * page scan every row of one of them; this index makes it one short range per initiative. Plans and
 * timings: docs/workloads-query-plans.md.
 */
export class MemberSubmitterIndex1763800008000 implements MigrationInterface {
  name = 'MemberSubmitterIndex1763800008000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS workloads_org_initiative_submitter_submitted
        ON workloads (organization_id, initiative_id, submitted_by, submitted_at DESC, workload_id DESC);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS workloads_org_initiative_submitter_submitted;`);
  }
}
