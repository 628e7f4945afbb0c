import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The cluster is part of every period rollup's key (workload_period_rollups and the wait histograms),
 * so a cluster filter or a grouping by cluster reads rollup rows as any other read does instead of
 * the range's raw workloads. Rows kept before carry the empty cluster; a backfill rebuilds them with
 * their clusters once the trigger bodies that key by cluster are in place.
 */
export class ClusterKeys1763800042000 implements MigrationInterface {
  name = 'ClusterKeys1763800042000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE workload_period_rollups ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE workload_period_rollups DROP CONSTRAINT workload_period_rollups_pkey,
        ADD CONSTRAINT workload_period_rollups_pkey
          PRIMARY KEY (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id);
      ALTER TABLE workload_period_waits ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE workload_period_waits DROP CONSTRAINT workload_period_waits_pkey,
        ADD CONSTRAINT workload_period_waits_pkey
          PRIMARY KEY (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket)
          INCLUDE (started_count, wait_seconds_sum, wait_seconds_max);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Rows of one key in several clusters merge back into one.
    await queryRunner.query(`
      CREATE TEMPORARY TABLE merged_waits AS
        SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, wait_bucket,
               sum(started_count)::bigint AS started_count, sum(wait_seconds_sum)::bigint AS wait_seconds_sum,
               max(wait_seconds_max) AS wait_seconds_max
        FROM workload_period_waits GROUP BY 1, 2, 3, 4, 5, 6, 7;
      DELETE FROM workload_period_waits;
      ALTER TABLE workload_period_waits DROP CONSTRAINT workload_period_waits_pkey, DROP COLUMN cluster_id,
        ADD CONSTRAINT workload_period_waits_pkey
          PRIMARY KEY (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, wait_bucket)
          INCLUDE (started_count, wait_seconds_sum, wait_seconds_max);
      INSERT INTO workload_period_waits (organization_id, period, dimension, bucket_start, initiative_id, dimension_value,
          wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
        SELECT * FROM merged_waits;
      CREATE TEMPORARY TABLE merged_periods AS
        SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value,
               ${SUMS.map((column) => `sum(${column})${column.endsWith('_count') ? '::bigint' : ''} AS ${column}`).join(', ')}
        FROM workload_period_rollups GROUP BY 1, 2, 3, 4, 5, 6;
      DELETE FROM workload_period_rollups;
      ALTER TABLE workload_period_rollups DROP CONSTRAINT workload_period_rollups_pkey, DROP COLUMN cluster_id,
        ADD CONSTRAINT workload_period_rollups_pkey
          PRIMARY KEY (organization_id, period, dimension, bucket_start, initiative_id, dimension_value);
      INSERT INTO workload_period_rollups (organization_id, period, dimension, bucket_start, initiative_id, dimension_value,
          ${SUMS.join(', ')})
        SELECT * FROM merged_periods;
      DROP TABLE merged_periods, merged_waits;
    `);
  }
}

const SUMS = [
  'pending_count',
  'running_count',
  'completed_count',
  'failed_count',
  'cancelled_count',
  'finished_count',
  'duration_seconds_sum',
  'gpu_seconds_sum',
  'sampled_gpu_seconds_sum',
  'busy_gpu_seconds_sum',
  'cost_unit_us_sum',
  'priced_whole_unit_us_sum',
  'idle_cost_unit_us_sum',
];
