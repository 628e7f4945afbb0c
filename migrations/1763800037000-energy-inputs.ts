import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * What energy and carbon per workload are computed from, beside the samples' power:
 *
 * - `carbon_intensities`: per cluster, periods [effective_from, effective_to) (effective_to null:
 *   open-ended) of the grid's grams of CO2e per kWh and the site's power usage effectiveness (PUE, 1.0
 *   when the GPUs' own draw is all there is). Periods may be as short as an hour. The import refuses
 *   overlapping periods of one cluster before it writes; a trigger (src/database/definitions) refuses
 *   them for every other writer, and the data-version triggers make cached answers expire.
 * - `organizations.max_sample_gap_seconds`: how long a sample's power holds until the next one at
 *   most, so a gap in the samples counts no more than this (default 120 s).
 */
export class EnergyInputs1763800037000 implements MigrationInterface {
  name = 'EnergyInputs1763800037000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE carbon_intensities (
        organization_id     text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        cluster_id          text NOT NULL,
        effective_from      timestamptz NOT NULL,
        effective_to        timestamptz,
        grams_co2e_per_kwh  numeric NOT NULL CHECK (grams_co2e_per_kwh >= 0),
        pue                 numeric NOT NULL DEFAULT 1.0 CHECK (pue >= 1.0),
        PRIMARY KEY (organization_id, cluster_id, effective_from),
        CHECK (effective_to IS NULL OR effective_to > effective_from)
      );
      ALTER TABLE organizations
        ADD COLUMN max_sample_gap_seconds integer NOT NULL DEFAULT 120
          CONSTRAINT organizations_max_sample_gap_seconds_check
          CHECK (max_sample_gap_seconds BETWEEN 1 AND 86400);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE organizations DROP COLUMN max_sample_gap_seconds;
      DROP TABLE carbon_intensities;
    `);
  }
}
