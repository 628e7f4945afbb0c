import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Energy and carbon per workload, kept with its metric aggregate by the samples' triggers
 * (src/rollups/metric-aggregates/energy.definitions.ts). Each reading's power holds until the next
 * reading, for at most the organization's max_sample_gap_seconds; these hold the parts of every
 * reading but a workload's last (its tail, until completed_at, is added where read):
 *
 * - energy_microjoules: Σ watts × held microseconds (µJ), exact;
 * - carbon_microjoule_grams_per_kwh: Σ µJ × pue × grams CO2e per kWh of the carbon intensity period
 *   covering the reading's time (÷ 3.6e12 gives grams), exact;
 * - uncovered_microjoules: the parts no intensity period covers.
 *
 * A backfill fills the stored aggregates once the trigger bodies are in place.
 */
export class EnergyAggregates1763800040000 implements MigrationInterface {
  name = 'EnergyAggregates1763800040000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE metric_aggregates
        ADD COLUMN energy_microjoules numeric NOT NULL DEFAULT 0,
        ADD COLUMN carbon_microjoule_grams_per_kwh numeric NOT NULL DEFAULT 0,
        ADD COLUMN uncovered_microjoules numeric NOT NULL DEFAULT 0;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE metric_aggregates
        DROP COLUMN uncovered_microjoules,
        DROP COLUMN carbon_microjoule_grams_per_kwh,
        DROP COLUMN energy_microjoules;
    `);
  }
}
