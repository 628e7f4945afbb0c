import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Prices per GPU-hour of an organization's instance types, in periods [effective_from, effective_to)
 * (effective_to null: open-ended). Costs are computed when read, from the workloads' runs and these
 * rows (docs/architecture.md, "Cost"): no rollup holds money, so importing a price rewrites nothing
 * and every rollup stays what its raw rows say. The import refuses overlapping periods of one
 * instance type and a second currency in an organization before it writes; the exclusion of overlaps
 * is enforced here too, so no other writer can store one.
 *
 * `minor_units` is the currency's number of decimals (ICU's, written by the importer), so readers
 * round in SQL without knowing currencies.
 *
 * The queue index gains completed_at: the statistics' cost is summed in the same index-only pass
 * over the range's workloads as the queue figures, and a finished run's cost needs its end.
 */
export class GpuPrices1763800027000 implements MigrationInterface {
  name = 'GpuPrices1763800027000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE gpu_prices (
        organization_id     text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        instance_type       text NOT NULL,
        effective_from      timestamptz NOT NULL,
        effective_to        timestamptz,
        price_per_gpu_hour  numeric NOT NULL CHECK (price_per_gpu_hour >= 0),
        currency            text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        minor_units         smallint NOT NULL CHECK (minor_units BETWEEN 0 AND 4),
        pricing_model       text NOT NULL CHECK (pricing_model IN ('on_demand', 'reserved', 'spot', 'internal')),
        PRIMARY KEY (organization_id, instance_type, effective_from),
        CHECK (effective_to IS NULL OR effective_to > effective_from)
      );
      CREATE FUNCTION gpucap_price_overlap_check() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF EXISTS (
          SELECT 1 FROM gpu_prices a JOIN gpu_prices b
            ON a.organization_id = b.organization_id AND a.instance_type = b.instance_type
           AND a.effective_from < b.effective_from
           AND (a.effective_to IS NULL OR a.effective_to > b.effective_from)
          WHERE a.organization_id IN (SELECT organization_id FROM new_rows)
        ) THEN
          RAISE EXCEPTION 'price periods of one instance type overlap' USING ERRCODE = '23P01';
        END IF;
        IF EXISTS (
          SELECT 1 FROM gpu_prices WHERE organization_id IN (SELECT organization_id FROM new_rows)
          GROUP BY organization_id HAVING count(DISTINCT currency) > 1
        ) THEN
          RAISE EXCEPTION 'an organization prices in one currency' USING ERRCODE = '23514';
        END IF;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER gpu_prices_overlap_insert AFTER INSERT ON gpu_prices
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_price_overlap_check();
      CREATE TRIGGER gpu_prices_overlap_update AFTER UPDATE ON gpu_prices
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_price_overlap_check();
      CREATE TRIGGER gpu_prices_data_version_truncate AFTER TRUNCATE ON gpu_prices
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_truncate();
    `);
    // A new price changes every cost answered: the response cache must see it.
    for (const [event, referencing] of [
      ['insert', 'NEW TABLE AS new_rows'],
      ['update', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['delete', 'OLD TABLE AS old_rows'],
    ]) {
      await queryRunner.query(`
        CREATE TRIGGER gpu_prices_data_version_${event} AFTER ${event.toUpperCase()} ON gpu_prices
          REFERENCING ${referencing}
          FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_${event}();`);
    }
    await queryRunner.query(`
      DROP INDEX workloads_org_submitted_queue;
      CREATE INDEX workloads_org_submitted_queue ON workloads (organization_id, submitted_at)
        INCLUDE (started_at, completed_at, status, gpu_count, gpu_share_units, initiative_id, instance_type,
                 submitted_by, cluster_id);
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX workloads_org_submitted_queue;
      CREATE INDEX workloads_org_submitted_queue ON workloads (organization_id, submitted_at)
        INCLUDE (started_at, status, gpu_count, gpu_share_units, initiative_id, instance_type, submitted_by, cluster_id);
      DROP TABLE gpu_prices;
      DROP FUNCTION gpucap_price_overlap_check();
    `);
  }
}
