import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `gpucap sync` keeps, per organization and source (`kubernetes`, `slurm`, `prometheus`), the instant
 * up to which that source has been read. The row is written in the same transaction as the data it
 * covers (under the organization's writer lock), so a watermark never runs ahead of what is visible:
 * after a crash the next run starts from the last committed one and re-reads an overlap, which the
 * loader's upserts turn into no writes.
 */
export class SyncWatermarks1763800013000 implements MigrationInterface {
  name = 'SyncWatermarks1763800013000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE sync_watermarks (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        source           text NOT NULL CHECK (source IN ('kubernetes', 'slurm', 'prometheus')),
        read_until       timestamptz NOT NULL,
        updated_at       timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (organization_id, source)
      );
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS sync_watermarks;`);
  }
}
