import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * What the right-sizing rule needs of a finished workload's samples over its whole run, settled by
 * the triggers of src/rollups/workload-summaries/ (filled for stored workloads by a backfill): a
 * request whose range holds the whole run reads this row instead of the samples.
 */
export class WorkloadSampleSummaries1763800032000 implements MigrationInterface {
  name = 'WorkloadSampleSummaries1763800032000';

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
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE workload_sample_summaries');
  }
}
