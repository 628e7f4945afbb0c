import { defineFunction, defineTrigger, type Definition } from './definition';

/** Writer locks: every writer holds its organizations' advisory locks, and the tables refuse a write made without them. */
export const writerLockDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_assert_writer_locks(organization_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      missing text;
    BEGIN
      SELECT o INTO missing FROM unnest(organization_ids) o WHERE o <> ALL (gpucap_held_writer_locks()) LIMIT 1;
      IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'writes to organization % need its writer lock', missing
          USING HINT = 'call gpucap_lock_organizations(organization_ids) first, in the same transaction';
      END IF;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_held_writer_locks() RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('gpucap.writer_locks', true), '')::text[], '{}')
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_lock_organizations(organization_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
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
        PERFORM pg_advisory_xact_lock(1735423331, lock_key);
      END LOOP;
      PERFORM set_config('gpucap.writer_locks',
        (SELECT array_agg(DISTINCT o ORDER BY o)::text FROM unnest(held || organization_ids) o), true);
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_days_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    DECLARE
      pruned record;
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
      END IF;
      IF TG_OP <> 'DELETE' THEN
        PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
        -- Retention boundaries are week starts, so a day before one lies wholly before it.
        SELECT n.organization_id, n.workload_id, n.day_start, r.samples_before INTO pruned
        FROM new_rows n JOIN sample_retention r USING (organization_id)
        WHERE n.day_start < r.samples_before
        LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION 'samples of workload % on % are older than the retention boundary % of organization %',
            pruned.workload_id, pruned.day_start, pruned.samples_before, pruned.organization_id
            USING HINT = 'samples before the boundary were pruned; their lifetime aggregates already count them';
        END IF;
      END IF;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_samples_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
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
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workloads_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF TG_OP <> 'DELETE' THEN
        PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
      END IF;
      IF TG_OP <> 'INSERT' THEN
        PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
      END IF;
      RETURN NULL;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_writer_check_delete AFTER DELETE ON metric_sample_days REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_writer_check_insert AFTER INSERT ON metric_sample_days REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_writer_check_update AFTER UPDATE ON metric_sample_days REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_writer_check_delete AFTER DELETE ON metric_samples REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_writer_check_insert AFTER INSERT ON metric_samples REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_writer_check_update AFTER UPDATE ON metric_samples REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_samples_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_writer_check_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_writer_check_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_writer_check_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workloads_writer_check()',
  ),
];
