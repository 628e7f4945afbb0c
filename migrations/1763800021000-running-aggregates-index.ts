import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * The aggregates of running workloads, as a set, for cold reads. Capacity, statistics
 * and the ranked idle page each join every running workload of the scope to its metric aggregate:
 * one primary-key lookup per running workload, a large part of those statements' time. A running
 * workload's aggregate carries status 'running' (the aggregate's insert trigger and the workloads
 * triggers of …5000 and …18000 copy it in the writer's transaction, as the ranked page already relies
 * on; test/support/rollup-residue.ts checks it after every concurrency run), so the readers take both
 * sides as sets and hash-join them.
 * Write cost: one entry per update of a running workload's aggregate, which already writes an entry
 * into each ranked index (their keys hold the averages, so those updates are never HOT).
 */
export class RunningAggregatesIndex1763800021000 implements MigrationInterface {
  name = 'RunningAggregatesIndex1763800021000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX metric_aggregates_org_running ON metric_aggregates (organization_id) WHERE status = 'running'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX metric_aggregates_org_running');
  }
}
