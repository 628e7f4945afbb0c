import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Money settled with the rollups (src/rollups/workload-costs/): each workload that is not running
 * carries its amounts, priced by its trigger from the price periods and re-priced by the price
 * triggers, and the period rollups and the status totals carry their sums, so statistics read cost as
 * they read GPU-hours and `sort_by=cost` reads an index. Every amount is share units × microseconds ×
 * price (numeric, exact), divided by one GPU-hour's unit-microseconds and rounded once where answered.
 * A backfill fills the stored rows once the trigger bodies are in place.
 */
export class SettledCosts1763800036000 implements MigrationInterface {
  name = 'SettledCosts1763800036000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE workloads
        ADD COLUMN cost_unit_us numeric,
        ADD COLUMN priced_cost_unit_us numeric,
        ADD COLUMN priced_whole_unit_us numeric,
        ADD COLUMN whole_cost_unit_us numeric;
      ALTER TABLE workload_period_rollups
        ADD COLUMN cost_unit_us_sum numeric NOT NULL DEFAULT 0,
        ADD COLUMN priced_whole_unit_us_sum numeric NOT NULL DEFAULT 0,
        ADD COLUMN idle_cost_unit_us_sum numeric NOT NULL DEFAULT 0;
      ALTER TABLE workload_status_totals
        ADD COLUMN costed_count bigint NOT NULL DEFAULT 0,
        ADD COLUMN cost_unit_us_sum numeric NOT NULL DEFAULT 0;
      CREATE INDEX workloads_org_status_cost ON workloads
        (organization_id, status, cost_unit_us, workload_id COLLATE "C") WHERE cost_unit_us IS NOT NULL;
      CREATE INDEX workloads_org_initiative_status_cost ON workloads
        (organization_id, initiative_id, status, cost_unit_us, workload_id COLLATE "C") WHERE cost_unit_us IS NOT NULL;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX workloads_org_initiative_status_cost;
      DROP INDEX workloads_org_status_cost;
      ALTER TABLE workload_status_totals DROP COLUMN cost_unit_us_sum, DROP COLUMN costed_count;
      ALTER TABLE workload_period_rollups
        DROP COLUMN idle_cost_unit_us_sum, DROP COLUMN priced_whole_unit_us_sum, DROP COLUMN cost_unit_us_sum;
      ALTER TABLE workloads
        DROP COLUMN whole_cost_unit_us, DROP COLUMN priced_whole_unit_us, DROP COLUMN priced_cost_unit_us,
        DROP COLUMN cost_unit_us;
    `);
  }
}
