import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A sync config may hold several clusters (`clusters[]`), each with its own Kubernetes, Slurm and
 * Prometheus read on its own schedule: their watermarks are kept per cluster. The config's top-level
 * sources are the cluster `''`, so the rows written before keep meaning what they meant.
 */
export class SyncWatermarksPerCluster1763800023000 implements MigrationInterface {
  name = 'SyncWatermarksPerCluster1763800023000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE sync_watermarks ADD COLUMN cluster_id text NOT NULL DEFAULT '';
      ALTER TABLE sync_watermarks DROP CONSTRAINT sync_watermarks_pkey;
      ALTER TABLE sync_watermarks ADD CONSTRAINT sync_watermarks_pkey
        PRIMARY KEY (organization_id, cluster_id, source);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // The clusters' own watermarks have no place in the old key: their next run reads from the backfill.
    await queryRunner.query(`
      DELETE FROM sync_watermarks WHERE cluster_id <> '';
      ALTER TABLE sync_watermarks DROP CONSTRAINT sync_watermarks_pkey;
      ALTER TABLE sync_watermarks ADD CONSTRAINT sync_watermarks_pkey PRIMARY KEY (organization_id, source);
      ALTER TABLE sync_watermarks DROP COLUMN cluster_id;
    `);
  }
}
