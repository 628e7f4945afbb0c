import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Each sealed hour's largest readings of the two metrics the right-sizing rule ranks
 * (src/rollups/metric-aggregates/sample-hours.definitions.ts): a window's top 5 % and 1 % are taken
 * from them instead of from every reading. Nullable and without a default, so adding them rewrites
 * nothing; an hour without them is read whole, so readers stay exact while the backfill
 * 1763800045000-hour-tails fills the stored hours, a week of an organization at a time.
 */
export class HourTails1763800045000 implements MigrationInterface {
  name = 'HourTails1763800045000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE metric_sample_hours
        ADD COLUMN gpu_utilization_top float8[],
        ADD COLUMN memory_utilization_top float8[]
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE metric_sample_hours DROP COLUMN gpu_utilization_top, DROP COLUMN memory_utilization_top
    `);
  }
}
