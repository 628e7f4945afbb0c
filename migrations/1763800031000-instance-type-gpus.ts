import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * GPU facts per instance type that an organization imports (`instance_types`): they add to the
 * built-in catalogue of the advice (src/common/gpu-catalogue.ts) and override its entries by name.
 * `mig_profiles` is the GPU's MIG profiles, `[{"profile", "memory_gib", "compute_slices"}]`, empty
 * unless the GPU can be sliced; the importer checks each entry before it writes.
 */
export class InstanceTypeGpus1763800031000 implements MigrationInterface {
  name = 'InstanceTypeGpus1763800031000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE instance_type_gpus (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        instance_type    text NOT NULL,
        gpu_model        text NOT NULL,
        gpu_memory_gib   double precision NOT NULL CHECK (gpu_memory_gib > 0),
        mig_capable      boolean NOT NULL,
        mig_profiles     jsonb NOT NULL DEFAULT '[]',
        PRIMARY KEY (organization_id, instance_type),
        CHECK (jsonb_typeof(mig_profiles) = 'array' AND mig_capable = (jsonb_array_length(mig_profiles) > 0))
      );
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE instance_type_gpus');
  }
}
