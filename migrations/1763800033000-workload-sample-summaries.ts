import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * What the right-sizing rule needs of a finished workload's samples over its whole run, settled by
 * the triggers of src/rollups/workload-summaries/: a request whose range holds the whole run reads
 * this row instead of the samples. Filled here for the stored finished workloads (no writer runs
 * while migrations are pending), those started before the retention boundary left out.
 */
export class WorkloadSampleSummaries1763800033000 implements MigrationInterface {
  name = 'WorkloadSampleSummaries1763800033000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE workload_sample_summaries (
        organization_id         text NOT NULL,
        workload_id             text NOT NULL,
        sample_count            integer NOT NULL CHECK (sample_count >= 0),
        sampled_seconds         double precision,
        p95_gpu_utilization     double precision,
        p99_memory_utilization  double precision,
        top_memory_utilization  double precision[],
        PRIMARY KEY (organization_id, workload_id)
      );
      INSERT INTO workload_sample_summaries
      SELECT w.organization_id, w.workload_id, e.*
      FROM workloads w
      LEFT JOIN sample_retention r ON r.organization_id = w.organization_id
      CROSS JOIN LATERAL (
        SELECT count(*)::int,
               date_part('epoch', max(s.sampled_at) - min(s.sampled_at))::float8,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY s.gpu_utilization),
               percentile_cont(0.99) WITHIN GROUP (ORDER BY s.memory_utilization),
               (array_agg(s.memory_utilization ORDER BY s.memory_utilization DESC))[1:(count(*) / 100 + 1)::int]
        FROM gpucap_workload_samples(w.organization_id, w.workload_id, w.started_at, w.completed_at) s
      ) e
      WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
        AND (r.samples_before IS NULL OR w.started_at >= r.samples_before);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE workload_sample_summaries');
  }
}
