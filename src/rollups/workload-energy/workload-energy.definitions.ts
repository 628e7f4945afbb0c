import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import {
  runningRowSql,
  settleColumnsIfAnySql,
  settleColumnsSql,
} from '../../database/definitions/settled-columns';

/** The columns a workload's settled energy is stored in, in the order gpucap_workload_energy returns them. */
export const SETTLED_ENERGY_COLUMNS = [
  'energy_microjoules',
  'carbon_microjoule_grams_per_kwh',
  'uncovered_microjoules',
] as const;

const SETTLE_ENERGY =
  'gpucap_workload_energy(o.organization_id, o.workload_id, o.cluster_id, o.completed_at)';

/**
 * An UPDATE that settles the energy of the workloads `o` (not running) that `conditions` pick, with
 * `from` joined, writing only the rows whose energy changes.
 */
export function settleWorkloadEnergySql(from: string, conditions: string[]): string {
  return settleColumnsSql(SETTLED_ENERGY_COLUMNS, SETTLE_ENERGY, from, conditions);
}

/** settleWorkloadEnergySql in a trigger: run only when there is a workload to settle. */
export function settleWorkloadEnergyIfAnySql(from: string, conditions: string[]): string {
  return settleColumnsIfAnySql(SETTLED_ENERGY_COLUMNS, SETTLE_ENERGY, from, conditions);
}

/** What a workload's settled energy reads of its aggregate, with the key. */
const ENERGY_INPUTS = `organization_id, workload_id, energy_microjoules, carbon_microjoule_grams_per_kwh,
        uncovered_microjoules, latest_sampled_at, power_usage_latest, sample_count > 0`;

/** The aggregates one metric_aggregates statement changed, by event, as rows with the workload's key. */
const AGGREGATE_EVENTS = [
  {
    event: 'INSERT',
    referencing: 'NEW TABLE AS new_rows',
    changed: 'SELECT organization_id, workload_id FROM new_rows',
  },
  {
    event: 'UPDATE',
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
    // Only what the energy reads (the triggers also rewrite aggregates for their copied status).
    // EXCEPT, not a join of the two tables: hashed whatever their sizes, never a nested loop.
    changed: `SELECT organization_id, workload_id FROM (
        SELECT ${ENERGY_INPUTS} FROM new_rows EXCEPT SELECT ${ENERGY_INPUTS} FROM old_rows) AS changed`,
  },
  {
    event: 'DELETE',
    referencing: 'OLD TABLE AS old_rows',
    changed: 'SELECT organization_id, workload_id FROM old_rows',
  },
];

/**
 * Workload energy: the energy, carbon and uncovered energy of each workload that is not running, its
 * aggregate's held parts (src/rollups/metric-aggregates/energy.definitions.ts) plus its last reading's
 * hold until completed_at, settled when the workload's run or cluster changes, when its aggregate
 * changes, and when the intensity periods or the cap its last reading's hold depends on change
 * (docs/architecture.md, "Energy"). Null without samples; a running workload's is its aggregate's,
 * read where answered. The period rollups and status totals sum them through their own workloads
 * triggers, so every change reaches them as a workloads row's old and new values.
 */
export const workloadEnergyDefinitions: Definition[] = [
  // What list and detail answer and what is stored: one definition. plpgsql: called per row, its plan cached.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_energy(org text, wl text, cluster text, completed timestamptz,
        OUT energy_microjoules numeric, OUT carbon_microjoule_grams_per_kwh numeric, OUT uncovered_microjoules numeric)
      LANGUAGE plpgsql STABLE AS $$
    DECLARE
      aggregate record;
      tail numeric;
      intensity numeric;
    BEGIN
      SELECT m.energy_microjoules, m.carbon_microjoule_grams_per_kwh, m.uncovered_microjoules, m.latest_sampled_at,
             gpucap_energy_tail_microjoules(m.latest_sampled_at, m.power_usage_latest, completed, o.max_sample_gap_seconds) AS tail
        INTO aggregate
      FROM metric_aggregates m JOIN organizations o ON o.organization_id = m.organization_id
      WHERE m.organization_id = org AND m.workload_id = wl AND m.sample_count > 0;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      tail := aggregate.tail;
      IF tail > 0 THEN
        intensity := gpucap_carbon_intensity_at(org, cluster, aggregate.latest_sampled_at);
      END IF;
      energy_microjoules := aggregate.energy_microjoules + tail;
      carbon_microjoule_grams_per_kwh := aggregate.carbon_microjoule_grams_per_kwh + coalesce(tail * intensity, 0);
      uncovered_microjoules := aggregate.uncovered_microjoules + CASE WHEN intensity IS NULL THEN tail ELSE 0 END;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_energy_settle() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF ${runningRowSql('NEW')} THEN
        NEW.energy_microjoules := NULL; NEW.carbon_microjoule_grams_per_kwh := NULL; NEW.uncovered_microjoules := NULL;
      ELSE
        SELECT e.energy_microjoules, e.carbon_microjoule_grams_per_kwh, e.uncovered_microjoules
          INTO NEW.energy_microjoules, NEW.carbon_microjoule_grams_per_kwh, NEW.uncovered_microjoules
        FROM gpucap_workload_energy(NEW.organization_id, NEW.workload_id, NEW.cluster_id, NEW.completed_at) e;
      END IF;
      RETURN NEW;
    END
    $$`),
  // Statement triggers fire for no rows too, and a workloads UPDATE rewrites aggregates: only a
  // change to a settled workload's energy goes on, or the two tables' triggers would call each other.
  ...AGGREGATE_EVENTS.map(({ event, changed }) =>
    defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_aggregate_energy_${event.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
        ${settleWorkloadEnergyIfAnySql(`(${changed}) AS c`, [
          'o.organization_id = c.organization_id AND o.workload_id = c.workload_id',
        ])};
      RETURN NULL;
    END
    $$`),
  ),
  defineTrigger(
    `CREATE OR REPLACE TRIGGER workloads_energy_insert BEFORE INSERT ON workloads FOR EACH ROW
       WHEN (NOT ${runningRowSql('NEW')}) EXECUTE FUNCTION gpucap_workload_energy_settle()`,
  ),
  defineTrigger(
    `CREATE OR REPLACE TRIGGER workloads_energy_update BEFORE UPDATE ON workloads FOR EACH ROW
       WHEN (OLD.started_at IS DISTINCT FROM NEW.started_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at
          OR OLD.cluster_id IS DISTINCT FROM NEW.cluster_id OR OLD.workload_id IS DISTINCT FROM NEW.workload_id
          OR OLD.organization_id IS DISTINCT FROM NEW.organization_id)
       EXECUTE FUNCTION gpucap_workload_energy_settle()`,
  ),
  ...AGGREGATE_EVENTS.map(({ event, referencing }) =>
    defineTrigger(
      `CREATE OR REPLACE TRIGGER metric_aggregates_energy_${event.toLowerCase()} AFTER ${event} ON metric_aggregates REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION gpucap_aggregate_energy_${event.toLowerCase()}()`,
    ),
  ),
];
