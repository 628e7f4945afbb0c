import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Queue-wait histograms per block of 16 UTC days (src/rollups/queue-waits/): a statistics range of a
 * month merges a block's rows instead of a row per day and bucket. The rows live in
 * workload_period_waits beside the days and hours; the triggers that keep them come with the
 * definitions, and the backfill 1763800044000-wait-blocks writes them from the day rows under each
 * organization's writer lock.
 */
export class WaitBlocks1763800044000 implements MigrationInterface {
  name = 'WaitBlocks1763800044000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE workload_period_waits DROP CONSTRAINT workload_period_waits_period_check;
      ALTER TABLE workload_period_waits ADD CONSTRAINT workload_period_waits_period_check
        CHECK (period IN ('day', 'hour', 'days16'));
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DELETE FROM workload_period_waits WHERE period NOT IN ('day', 'hour');
      ALTER TABLE workload_period_waits DROP CONSTRAINT workload_period_waits_period_check;
      ALTER TABLE workload_period_waits ADD CONSTRAINT workload_period_waits_period_check
        CHECK (period IN ('day', 'hour'));
    `);
  }
}
