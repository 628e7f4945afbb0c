import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Queue wait (started_at − submitted_at) of the workloads submitted in a range, read as a set: the
 * statistics' percentiles (percentile_cont) need every wait of the range, which no sum in the period
 * rollups can stand for, so the statement reads them from this index alone (index-only: the key is the
 * range, the INCLUDE columns are every group key and the start). Partial: a workload that never started
 * has no wait, and pending ones are read through workloads_org_status_submitted (the queue is short).
 * Write cost: one entry per workload that starts, and a new entry when it starts (its row changes).
 */
export class QueueWaitIndex1763800024000 implements MigrationInterface {
  name = 'QueueWaitIndex1763800024000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX workloads_org_submitted_waits ON workloads (organization_id, submitted_at)
         INCLUDE (started_at, initiative_id, instance_type, submitted_by, cluster_id)
         WHERE started_at IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX workloads_org_submitted_waits');
  }
}
