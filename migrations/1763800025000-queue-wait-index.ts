import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Queue wait and pending demand of the workloads submitted in a range, read as a set: the statistics'
 * percentiles (percentile_cont) need every wait of the range, which no sum in the period rollups can
 * stand for (docs/architecture.md, "Queue wait"), so the statement reads the range from this index
 * alone, in one pass: the key is the range, the INCLUDE columns are every group key, the start, the
 * status and the GPUs a pending workload asks for (index-only: the heap is never read).
 *
 * Not partial: a partial index created on an empty table records zero tuples, and until the table is
 * analyzed the planner takes it as free for any statement whose conditions imply its predicate; the
 * first import into a new database then joined its metric aggregates to workloads through it, one
 * scan of the organization per aggregate.
 * Write cost: one entry per workload, and a new one whenever its status or start changes (those
 * updates are never HOT already: other indexes hold the status).
 */
export class QueueWaitIndex1763800025000 implements MigrationInterface {
  name = 'QueueWaitIndex1763800025000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX workloads_org_submitted_queue ON workloads (organization_id, submitted_at)
         INCLUDE (started_at, status, gpu_count, gpu_share_units, initiative_id, instance_type, submitted_by, cluster_id)`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX workloads_org_submitted_queue');
  }
}
