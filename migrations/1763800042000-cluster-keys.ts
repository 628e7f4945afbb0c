import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The cluster is part of every period and capacity rollup's key (workload_period_rollups, the wait
 * histograms, capacity_usage_daily and _hourly) and of the ranked status totals, so a cluster filter
 * or a grouping by cluster reads rollup rows as any other read does instead of the raw workloads. Rows kept before carry the empty
 * cluster; a backfill rebuilds them with their clusters once the trigger bodies that key by cluster
 * are in place.
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
      ALTER TABLE capacity_usage_daily ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE capacity_usage_daily DROP CONSTRAINT capacity_usage_daily_pkey,
        ADD CONSTRAINT capacity_usage_daily_pkey
          PRIMARY KEY (organization_id, usage_day, initiative_id, instance_type, cluster_id);
      ALTER TABLE capacity_usage_hourly ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE capacity_usage_hourly DROP CONSTRAINT capacity_usage_hourly_pkey,
        ADD CONSTRAINT capacity_usage_hourly_pkey
          PRIMARY KEY (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id)
          INCLUDE (gpus, gpu_start_offset, gpu_microseconds);
      ALTER TABLE workload_status_totals ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE workload_status_totals DROP CONSTRAINT workload_status_totals_pkey,
        ADD CONSTRAINT workload_status_totals_pkey PRIMARY KEY (organization_id, initiative_id, status, cluster_id);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Rows of one key in several clusters merge back into one.
    for (const { table, key, include } of [...CAPACITY_TABLES, STATUS_TOTALS]) {
      await queryRunner.query(`
        CREATE TEMPORARY TABLE merged AS
          SELECT ${key.join(', ')}, ${CAPACITY_SUMS[table].map((column) => `sum(${column}) AS ${column}`).join(', ')}
          FROM ${table} GROUP BY ${key.map((_, index) => index + 1).join(', ')};
        DELETE FROM ${table};
        ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, DROP COLUMN cluster_id,
          ADD CONSTRAINT ${table}_pkey PRIMARY KEY (${key.join(', ')})${include};
        INSERT INTO ${table} (${key.join(', ')}, ${CAPACITY_SUMS[table].join(', ')}) SELECT * FROM merged;
        DROP TABLE merged;
      `);
    }
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

const CAPACITY_SUMS: Record<string, string[]> = {
  workload_status_totals: ['workload_count', 'gpu_seconds_sum', 'costed_count', 'cost_unit_us_sum'],
  capacity_usage_daily: [
    'gpu_microseconds',
    'spanning_gpus',
    'sampled_gpu_microseconds',
    'busy_gpu_microseconds',
    'sampled_spanning_gpus',
    'busy_spanning_gpus',
  ],
  capacity_usage_hourly: [
    'gpus',
    'sampled_gpus',
    'busy_gpus',
    'gpu_start_offset',
    'sampled_gpu_start_offset',
    'busy_gpu_start_offset',
    'gpu_microseconds',
    'sampled_gpu_microseconds',
    'busy_gpu_microseconds',
  ],
};

const CAPACITY_TABLES = [
  {
    table: 'capacity_usage_daily',
    key: ['organization_id', 'usage_day', 'initiative_id', 'instance_type'],
    include: '',
  },
  {
    table: 'capacity_usage_hourly',
    key: ['organization_id', 'usage_day', 'start_hour', 'end_hour', 'initiative_id', 'instance_type'],
    include: ' INCLUDE (gpus, gpu_start_offset, gpu_microseconds)',
  },
];

const STATUS_TOTALS = {
  table: 'workload_status_totals',
  key: ['organization_id', 'initiative_id', 'status'],
  include: '',
};
