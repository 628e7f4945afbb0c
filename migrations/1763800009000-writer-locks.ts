import { MigrationInterface, QueryRunner } from 'typeorm';

/** Advisory-lock namespaces (first key of the two-integer form): "gpuc" and "gpup" in ASCII. */
const WRITER_LOCK_NAMESPACE = 0x67707563;
const PARTITION_LOCK_NAMESPACE = 0x67707570;

/**
 * The writers' lock rule, enforced by the database rather than by care (docs/architecture.md,
 * "Writers"):
 *
 * - every transaction that writes workloads or metric samples first calls
 *   `gpucap_lock_organizations(ids)` once with every organization it will write: one
 *   transaction-scoped advisory lock per organization, taken in ascending lock-key order, so two
 *   writers never wait on each other in a cycle;
 * - statement triggers on workloads and metric_samples refuse any statement touching an organization
 *   whose lock the transaction does not hold, and any sample older than the organization's retention
 *   boundary (recorded by `gpucap prune`), so pruned samples are never counted twice.
 *
 * Writers of one organization therefore run one after another, and each statement of a writer (its
 * rollup triggers included) sees every earlier writer's committed rows: the triggers that copy a
 * workload's initiative and status, or recompute extremes from raw samples, read a settled state.
 * Readers take no lock and are never blocked.
 */
export class WriterLocks1763800009000 implements MigrationInterface {
  name = 'WriterLocks1763800009000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE sample_retention (
        organization_id  text PRIMARY KEY REFERENCES organizations (organization_id) ON DELETE CASCADE,
        samples_before   timestamptz NOT NULL
      );

      -- Locks held are remembered in a transaction-local setting: the triggers' check is then a string
      -- comparison, not a scan of pg_locks.
      CREATE FUNCTION gpucap_held_writer_locks() RETURNS text[] LANGUAGE sql STABLE AS $fn$
        SELECT coalesce(nullif(current_setting('gpucap.writer_locks', true), '')::text[], '{}')
      $fn$;

      CREATE FUNCTION gpucap_lock_organizations(organization_ids text[]) RETURNS void
      LANGUAGE plpgsql AS $fn$
      DECLARE
        held text[] := gpucap_held_writer_locks();
        lock_key integer;
        highest_held integer;
      BEGIN
        SELECT max(hashtext(h)) INTO highest_held FROM unnest(held) h;
        FOR lock_key IN
          SELECT DISTINCT hashtext(o) FROM unnest(organization_ids) o WHERE o <> ALL (held) ORDER BY 1
        LOOP
          -- Taking a lower key after a higher one could close a wait cycle with another writer.
          IF lock_key < highest_held AND NOT EXISTS (SELECT 1 FROM unnest(held) h WHERE hashtext(h) = lock_key) THEN
            RAISE EXCEPTION 'gpucap writer locks must be taken at once, before the first write'
              USING HINT = 'call gpucap_lock_organizations once with every organization the transaction writes';
          END IF;
          PERFORM pg_advisory_xact_lock(${WRITER_LOCK_NAMESPACE}, lock_key);
        END LOOP;
        PERFORM set_config('gpucap.writer_locks',
          (SELECT array_agg(DISTINCT o ORDER BY o)::text FROM unnest(held || organization_ids) o), true);
      END
      $fn$;

      CREATE FUNCTION gpucap_assert_writer_locks(organization_ids text[]) RETURNS void
      LANGUAGE plpgsql AS $fn$
      DECLARE
        missing text;
      BEGIN
        SELECT o INTO missing FROM unnest(organization_ids) o WHERE o <> ALL (gpucap_held_writer_locks()) LIMIT 1;
        IF missing IS NOT NULL THEN
          RAISE EXCEPTION 'writes to organization % need its writer lock', missing
            USING HINT = 'call gpucap_lock_organizations(organization_ids) first, in the same transaction';
        END IF;
      END
      $fn$;

      CREATE FUNCTION gpucap_workloads_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
        END IF;
        IF TG_OP <> 'INSERT' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
        END IF;
        RETURN NULL;
      END
      $fn$;

      CREATE FUNCTION gpucap_samples_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
      DECLARE
        pruned record;
      BEGIN
        IF TG_OP <> 'INSERT' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
        END IF;
        IF TG_OP <> 'DELETE' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
          SELECT n.organization_id, n.workload_id, n.sampled_at, r.samples_before INTO pruned
          FROM new_rows n JOIN sample_retention r USING (organization_id)
          WHERE n.sampled_at < r.samples_before
          LIMIT 1;
          IF FOUND THEN
            RAISE EXCEPTION 'sample of workload % at % is older than the retention boundary % of organization %',
              pruned.workload_id, pruned.sampled_at, pruned.samples_before, pruned.organization_id
              USING HINT = 'samples before the boundary were pruned; their lifetime aggregates already count them';
          END IF;
        END IF;
        RETURN NULL;
      END
      $fn$;

      CREATE TRIGGER workloads_writer_check_insert AFTER INSERT ON workloads
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check();
      CREATE TRIGGER workloads_writer_check_update AFTER UPDATE ON workloads
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check();
      CREATE TRIGGER workloads_writer_check_delete AFTER DELETE ON workloads
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check();
      CREATE TRIGGER metric_samples_writer_check_insert AFTER INSERT ON metric_samples
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check();
      CREATE TRIGGER metric_samples_writer_check_update AFTER UPDATE ON metric_samples
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check();
      CREATE TRIGGER metric_samples_writer_check_delete AFTER DELETE ON metric_samples
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check();

      -- TRUNCATE workloads cleared every rollup but this one.
      CREATE FUNCTION gpucap_capacity_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        DELETE FROM capacity_usage_daily;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER workloads_capacity_rollup_truncate AFTER TRUNCATE ON workloads
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_truncate();
      DELETE FROM capacity_usage_daily WHERE NOT EXISTS (SELECT 1 FROM workloads);

      -- Weeks computed in UTC whatever the session's TimeZone (a local zone's daylight-saving change
      -- made a week 167 hours long and the next partition overlap it); concurrent callers serialised,
      -- so two writers never race to create the same week.
      CREATE OR REPLACE FUNCTION gpucap_ensure_sample_partitions(range_from timestamptz, range_to timestamptz)
      RETURNS integer LANGUAGE plpgsql SET TimeZone = 'UTC' AS $fn$
      DECLARE
        week_start timestamptz := date_trunc('week', range_from);
        partition_name text;
        created integer := 0;
      BEGIN
        IF range_from > range_to THEN
          RETURN 0;
        END IF;
        PERFORM pg_advisory_xact_lock(${PARTITION_LOCK_NAMESPACE}, 0);
        WHILE week_start <= range_to LOOP
          partition_name := 'metric_samples_w' || to_char(week_start, 'IYYY_IW');
          IF to_regclass(partition_name) IS NULL THEN
            EXECUTE format(
              'CREATE TABLE %I PARTITION OF metric_samples FOR VALUES FROM (%L) TO (%L)',
              partition_name, week_start, week_start + interval '7 days');
            created := created + 1;
          END IF;
          week_start := week_start + interval '7 days';
        END LOOP;
        RETURN created;
      END
      $fn$;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS workloads_capacity_rollup_truncate ON workloads;
      DROP FUNCTION IF EXISTS gpucap_capacity_rollup_truncate();
      DROP TRIGGER IF EXISTS workloads_writer_check_insert ON workloads;
      DROP TRIGGER IF EXISTS workloads_writer_check_update ON workloads;
      DROP TRIGGER IF EXISTS workloads_writer_check_delete ON workloads;
      DROP TRIGGER IF EXISTS metric_samples_writer_check_insert ON metric_samples;
      DROP TRIGGER IF EXISTS metric_samples_writer_check_update ON metric_samples;
      DROP TRIGGER IF EXISTS metric_samples_writer_check_delete ON metric_samples;
      DROP FUNCTION IF EXISTS gpucap_workloads_writer_check();
      DROP FUNCTION IF EXISTS gpucap_samples_writer_check();
      DROP FUNCTION IF EXISTS gpucap_assert_writer_locks(text[]);
      DROP FUNCTION IF EXISTS gpucap_lock_organizations(text[]);
      DROP FUNCTION IF EXISTS gpucap_held_writer_locks();
      DROP TABLE IF EXISTS sample_retention;
    `);
  }
}
