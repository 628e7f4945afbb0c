import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Queue-wait histograms beside the period rollups (src/rollups/queue-waits/): per period rollup key,
 * one row per non-empty log-spaced wait bucket (each at most 2 % wide), with the started count, the
 * exact sum of its waits and its largest wait. Statistics and capacity merge them for p50 and p95
 * within 1 % of percentile_cont, and read started, average and maximum exactly. The key INCLUDEs the
 * amounts, so a range reads index-only (a row's update is then never HOT: rows change as workloads
 * start, not as they run).
 *
 * The table starts empty; the triggers that keep it come with the definitions, and the backfill
 * 1763800032000-queue-wait-histograms fills it from the workloads under every organization's lock.
 */
export class QueueWaitHistograms1763800032000 implements MigrationInterface {
  name = 'QueueWaitHistograms1763800032000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE workload_period_waits (
        organization_id   text NOT NULL,
        period            text NOT NULL CHECK (period IN ('day', 'hour')),
        dimension         text NOT NULL CHECK (dimension IN ('none', 'instance_type')),
        bucket_start      timestamptz NOT NULL,
        initiative_id     text NOT NULL,
        dimension_value   text NOT NULL,
        wait_bucket       smallint NOT NULL,
        started_count     bigint NOT NULL,
        wait_seconds_sum  bigint NOT NULL,
        wait_seconds_max  bigint NOT NULL,
        PRIMARY KEY (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, wait_bucket)
          INCLUDE (started_count, wait_seconds_sum, wait_seconds_max)
      )
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE workload_period_waits');
  }
}
