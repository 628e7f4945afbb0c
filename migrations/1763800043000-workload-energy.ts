import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Energy settled with the rollups (src/rollups/workload-energy/): each workload that is not running
 * carries its energy, carbon and uncovered energy (its aggregate's held parts plus its last reading's
 * hold until completed_at), and the period rollups and status totals carry their sums, so statistics
 * read energy as they read GPU-hours and `sort_by=energy_kwh` reads an index. The capacity rollups
 * carry each run's energy spread over its GPU-time, beside each GPU-time amount they keep, as they
 * carry its sampled and busy parts. Amounts are exact
 * numerics (µJ, µJ·g/kWh), divided and rounded once where answered. A backfill fills the stored rows
 * once the trigger bodies are in place.
 */
export class WorkloadEnergy1763800043000 implements MigrationInterface {
  name = 'WorkloadEnergy1763800043000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE workloads
        ADD COLUMN energy_microjoules numeric,
        ADD COLUMN carbon_microjoule_grams_per_kwh numeric,
        ADD COLUMN uncovered_microjoules numeric;
      ALTER TABLE workload_period_rollups
        ADD COLUMN energy_microjoules_sum numeric NOT NULL DEFAULT 0,
        ADD COLUMN carbon_microjoule_grams_per_kwh_sum numeric NOT NULL DEFAULT 0,
        ADD COLUMN uncovered_microjoules_sum numeric NOT NULL DEFAULT 0;
      ALTER TABLE workload_status_totals
        ADD COLUMN energy_count bigint NOT NULL DEFAULT 0,
        ADD COLUMN energy_microjoules_sum numeric NOT NULL DEFAULT 0;
      ALTER TABLE capacity_usage_daily
        ADD COLUMN energy_gpu_microseconds numeric NOT NULL DEFAULT 0,
        ADD COLUMN energy_spanning_gpus numeric NOT NULL DEFAULT 0;
      ALTER TABLE capacity_usage_hourly
        ADD COLUMN energy_gpus numeric NOT NULL DEFAULT 0,
        ADD COLUMN energy_gpu_start_offset numeric NOT NULL DEFAULT 0,
        ADD COLUMN energy_gpu_microseconds numeric NOT NULL DEFAULT 0;
      CREATE INDEX workloads_org_status_energy ON workloads
        (organization_id, status, energy_microjoules, workload_id COLLATE "C") WHERE energy_microjoules IS NOT NULL;
      CREATE INDEX workloads_org_initiative_status_energy ON workloads
        (organization_id, initiative_id, status, energy_microjoules, workload_id COLLATE "C") WHERE energy_microjoules IS NOT NULL;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX workloads_org_initiative_status_energy;
      DROP INDEX workloads_org_status_energy;
      ALTER TABLE capacity_usage_hourly
        DROP COLUMN energy_gpu_microseconds, DROP COLUMN energy_gpu_start_offset, DROP COLUMN energy_gpus;
      ALTER TABLE capacity_usage_daily DROP COLUMN energy_spanning_gpus, DROP COLUMN energy_gpu_microseconds;
      ALTER TABLE workload_status_totals DROP COLUMN energy_microjoules_sum, DROP COLUMN energy_count;
      ALTER TABLE workload_period_rollups
        DROP COLUMN uncovered_microjoules_sum, DROP COLUMN carbon_microjoule_grams_per_kwh_sum,
        DROP COLUMN energy_microjoules_sum;
      ALTER TABLE workloads
        DROP COLUMN uncovered_microjoules, DROP COLUMN carbon_microjoule_grams_per_kwh, DROP COLUMN energy_microjoules;
    `);
  }
}
