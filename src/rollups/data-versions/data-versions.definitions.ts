import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/** Tables whose writes bump their organizations' data versions; `truncate`: TRUNCATE bumps every organization's. */
export const VERSIONED_TABLES: { table: string; truncate: boolean }[] = [
  { table: 'alert_states', truncate: false },
  { table: 'allocations', truncate: true },
  { table: 'capacity_pools', truncate: true },
  { table: 'carbon_intensities', truncate: true },
  { table: 'gpu_prices', truncate: true },
  { table: 'initiatives', truncate: true },
  { table: 'instance_type_gpus', truncate: true },
  { table: 'members', truncate: true },
  { table: 'metric_sample_days', truncate: false },
  { table: 'metric_samples', truncate: true },
  { table: 'organizations', truncate: true },
  { table: 'pool_instance_types', truncate: true },
  { table: 'workloads', truncate: true },
];

const TRANSITION_TABLES: Record<string, string> = {
  delete: 'REFERENCING OLD TABLE AS old_rows ',
  insert: 'REFERENCING NEW TABLE AS new_rows ',
  update: 'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows ',
  truncate: '',
};

function dataVersionTriggers(): Definition[] {
  return VERSIONED_TABLES.flatMap(({ table, truncate }) =>
    ['delete', 'insert', ...(truncate ? ['truncate'] : []), 'update'].map((operation) =>
      defineTrigger(
        `CREATE OR REPLACE TRIGGER ${table}_data_version_${operation} AFTER ${operation.toUpperCase()} ON ${table} ` +
          `${TRANSITION_TABLES[operation]}FOR EACH STATEMENT EXECUTE FUNCTION gpucap_data_changed_${operation}()`,
      ),
    ),
  );
}

/** Data versions: every write to an organization's rows bumps its version once per statement, which is what keys the response cache. */
export const dataVersionDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_bump_data_versions(organization_ids text[]) RETURNS void LANGUAGE sql SET jit TO 'off' AS $$
    INSERT INTO organization_data_versions AS v (organization_id, version, changed_at)
    SELECT o.organization_id, nextval('gpucap_data_version'), clock_timestamp()
    FROM organizations o
    WHERE o.organization_id = ANY (organization_ids)
    ORDER BY o.organization_id
    ON CONFLICT (organization_id) DO UPDATE
      SET version = excluded.version, changed_at = excluded.changed_at
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_data_changed_delete() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      PERFORM gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM old_rows));
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_data_changed_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      PERFORM gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM new_rows));
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_data_changed_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM organizations));
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_data_changed_update() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      PERFORM gpucap_bump_data_versions(ARRAY(SELECT organization_id FROM old_rows UNION SELECT organization_id FROM new_rows));
      RETURN NULL;
    END
    $$`),
  ...dataVersionTriggers(),
];
