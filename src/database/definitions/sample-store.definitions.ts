import { defineFunction, defineTrigger, type Definition } from './definition';

/**
 * A function creating the weekly partitions of `table` that [range_from, range_to] needs, each table
 * under an advisory lock of its own (`lockKey`), so two writers never race to create a week.
 */
export function weeklyPartitionsFunction(name: string, table: string, lockKey: number): Definition {
  return defineFunction(`
    CREATE OR REPLACE FUNCTION ${name}(range_from timestamp with time zone, range_to timestamp with time zone) RETURNS integer LANGUAGE plpgsql SET "TimeZone" TO 'UTC' AS $$
    DECLARE
      week_start timestamptz := date_trunc('week', range_from);
      partition_name text;
      created integer := 0;
    BEGIN
      IF range_from > range_to THEN
        RETURN 0;
      END IF;
      PERFORM pg_advisory_xact_lock(1735423344, ${lockKey});
      WHILE week_start <= range_to LOOP
        partition_name := '${table}_w' || to_char(week_start, 'IYYY_IW');
        IF to_regclass(partition_name) IS NULL THEN
          EXECUTE format('CREATE TABLE %I PARTITION OF ${table} FOR VALUES FROM (%L) TO (%L)',
            partition_name, week_start, week_start + interval '7 days');
          created := created + 1;
        END IF;
        week_start := week_start + interval '7 days';
      END LOOP;
      RETURN created;
    END
    $$`);
}

/** The sample store: weekly partitions of both stores, and the seal that moves ended hours into day blocks. */
export const sampleStoreDefinitions: Definition[] = [
  // The day blocks' weeks are the rows' (a UTC day lies in one ISO week, so prune drops both together),
  // made by a call of their own: creating a partition locks its parent until commit, and a reader or a
  // seal locks the two parents in either order, so holding both at once could deadlock.
  weeklyPartitionsFunction('gpucap_ensure_sample_day_partitions', 'metric_sample_days', 1),
  weeklyPartitionsFunction('gpucap_ensure_sample_partitions', 'metric_samples', 0),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_seal_watermark_new_organization() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO sample_seal_watermarks (organization_id, sealed_before)
      SELECT organization_id, date_trunc('hour', now(), 'UTC') FROM new_rows
      ON CONFLICT (organization_id) DO NOTHING;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sealing() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('gpucap.sealing', true), '') = 'on'
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER organizations_seal_watermark AFTER INSERT ON organizations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_seal_watermark_new_organization()',
  ),
];
