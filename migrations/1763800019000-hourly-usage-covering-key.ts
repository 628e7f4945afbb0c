import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * A burn-down reads G at one cut per local day (src/capacity/capacity.queries.ts): each cut is a
 * range of a day's capacity_usage_hourly buckets, and fetching each row from the heap was most of the
 * statement. The primary key now carries the three amounts those reads take, so they are index-only
 * scans (figures in docs/benchmarks.md). The idle variants (sampled_, busy_) are read only at the two
 * cuts of the plain report and stay in the heap.
 *
 * Still one index: the key is unchanged, so ON CONFLICT infers it as before. Updates of the amounts
 * are no longer HOT (an INCLUDE column is indexed); a bucket upsert now writes one index entry,
 * which an import pays once per changed bucket, not per row.
 */
const KEY = 'organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type';

export class HourlyUsageCoveringKey1763800019000 implements MigrationInterface {
  name = 'HourlyUsageCoveringKey1763800019000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await this.replaceKey(queryRunner, 'INCLUDE (gpus, gpu_start_offset, gpu_microseconds)');
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await this.replaceKey(queryRunner, '');
  }

  private async replaceKey(queryRunner: QueryRunner, include: string): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE capacity_usage_hourly
        DROP CONSTRAINT capacity_usage_hourly_pkey,
        ADD CONSTRAINT capacity_usage_hourly_pkey PRIMARY KEY (${KEY}) ${include}`);
  }
}
