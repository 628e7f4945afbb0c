import { MigrationInterface, QueryRunner } from 'typeorm';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];

/*
 * Per-hour summaries of the sealed day blocks (`metric_sample_hours`), one row per workload and UTC
 * hour that a block holds readings of, kept by the blocks' own statement triggers
 * (src/rollups/metric-aggregates/sample-hours.definitions.ts): a window reads its whole hours from
 * here and decodes only the readings of its edge hours, a slice of the day's arrays located by
 * `first_index` (1-based) and `steps_before` (microseconds from the day's start to the reading before
 * the slice). Sums are float8 in any order: a reader bounds the time-ordered sum from them and falls
 * back to the readings when the bound leaves an answer open (src/metrics/window-averages.ts).
 *
 * Partitioned by `day_start` in the blocks' weeks, so prune drops a week of both together. The
 * partitions of blocks already stored are made here; a backfill fills them once the trigger
 * bodies are in place.
 */
export class SampleHours1763800035000 implements MigrationInterface {
  name = 'SampleHours1763800035000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE metric_sample_hours (
        organization_id   text NOT NULL,
        workload_id       text NOT NULL,
        day_start         timestamptz NOT NULL,
        hour_start        timestamptz NOT NULL,
        first_index       integer NOT NULL CHECK (first_index >= 1),
        sample_count      integer NOT NULL CHECK (sample_count >= 1),
        steps_before      bigint NOT NULL CHECK (steps_before >= 0),
        first_sampled_at  timestamptz NOT NULL,
        last_sampled_at   timestamptz NOT NULL,
        ${METRICS.map((m) => `${m}_sum float8 NOT NULL, ${m}_min float8 NOT NULL, ${m}_max float8 NOT NULL, ${m}_last float8 NOT NULL`).join(',\n        ')},
        PRIMARY KEY (organization_id, workload_id, day_start, hour_start),
        CHECK (hour_start >= day_start AND hour_start < day_start + interval '1 day'),
        CHECK (first_sampled_at >= hour_start AND last_sampled_at < hour_start + interval '1 hour'
               AND last_sampled_at >= first_sampled_at)
      ) PARTITION BY RANGE (day_start);

      DO $do$
      DECLARE
        week record;
      BEGIN
        FOR week IN
          SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)')::timestamptz AS range_start
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'metric_sample_days'::regclass
        LOOP
          EXECUTE format('CREATE TABLE %I PARTITION OF metric_sample_hours FOR VALUES FROM (%L) TO (%L)',
            'metric_sample_hours_w' || to_char(week.range_start AT TIME ZONE 'UTC', 'IYYY_IW'),
            week.range_start, week.range_start + interval '7 days');
        END LOOP;
      END
      $do$;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE metric_sample_hours');
  }
}
