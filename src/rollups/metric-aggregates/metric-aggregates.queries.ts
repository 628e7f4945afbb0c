import { runningRowSql } from '../../database/definitions/settled-columns';

/*
 * What readers take of the metric aggregates: a workload's aggregate joined to its row, and the
 * sampled and busy parts of an amount of GPU-time, the way the triggers compute them.
 */

/** What the readers take of a workload's metric aggregate: the idle parts, the ranked average, the energy so far. */
const AGGREGATE_COLUMNS =
  'm.sample_count, m.gpu_utilization_sum, m.gpu_utilization_avg, m.energy_microjoules, m.carbon_microjoule_grams_per_kwh, m.uncovered_microjoules';

/**
 * Joins each row of workload `workload` (a table alias) to its metric aggregate as `alias`
 * (AGGREGATE_COLUMNS; nulls without one): one primary-key lookup per row.
 * OFFSET 0 keeps the planner from flattening it into a hash join over every aggregate of the
 * organization for the few edge and raw rows that need one.
 */
export function aggregateLookupSql(workload: string, alias: string): string {
  return `LEFT JOIN LATERAL (
    SELECT ${AGGREGATE_COLUMNS} FROM metric_aggregates m
    WHERE m.organization_id = ${workload}.organization_id AND m.workload_id = ${workload}.workload_id OFFSET 0
  ) AS ${alias} ON true`;
}

/**
 * aggregateLookupSql for rows of running workloads only: the same columns, joined from the running
 * aggregates as one set (the partial index on running aggregates) rather than looked up one by one. A
 * running workload's aggregate carries status 'running', copied by the triggers in the writer's
 * transaction, so the join finds every aggregate the lookup would.
 */
export function runningAggregateJoinSql(workload: string, alias: string): string {
  // Join keys renamed: the caller's unqualified workloads columns must stay unambiguous.
  return `LEFT JOIN (
    SELECT m.organization_id AS aggregate_organization_id, m.workload_id AS aggregate_workload_id,
           ${AGGREGATE_COLUMNS}
    FROM metric_aggregates m WHERE m.status = 'running'
  ) AS ${alias} ON ${alias}.aggregate_organization_id = ${workload}.organization_id
    AND ${alias}.aggregate_workload_id = ${workload}.workload_id`;
}

/**
 * The sampled and busy parts of `amount` (numeric GPU-time) for aggregate `alias`, by the same
 * functions the rollup triggers use (metric-aggregates.definitions.ts), so request-time parts match
 * rollup rows.
 */
export function idleSharesSql(amount: string, alias: string): [sampled: string, busy: string] {
  return [
    `gpucap_sampled_share(${amount}, ${alias}.sample_count)`,
    `gpucap_busy_share(${amount}, ${alias}.gpu_utilization_sum, ${alias}.sample_count)`,
  ];
}

/** Microjoules in a kWh, and microjoule-grams per kWh in a kilogram of CO2e. */
export const MICROJOULES_PER_KWH = '3600000000000';
export const MICROJOULE_GRAMS_PER_KWH_PER_KG = '3600000000000000';

/**
 * Joins each row of workload `workload` (a table alias) to its energy as answered, as `alias`:
 * `energy_kwh` and `carbon_kg`, exact numerics rounded once to 4 decimals, null without samples;
 * `carbon_kg` is also null while part of the energy has no carbon intensity. A workload that is not
 * running carries its settled energy (src/rollups/workload-energy/); a running one's is its
 * aggregate's so far, by the function the triggers settle with.
 */
export function workloadEnergyLateralSql(workload: string, alias: string): string {
  const running = runningRowSql(workload);
  return `LEFT JOIN LATERAL (
    SELECT ${energyKwhSql('e.energy_microjoules')} AS energy_kwh,
           CASE WHEN e.uncovered_microjoules = 0 THEN ${carbonKgSql('e.carbon_microjoule_grams_per_kwh')} END AS carbon_kg
    FROM (SELECT ${workload}.energy_microjoules, ${workload}.carbon_microjoule_grams_per_kwh, ${workload}.uncovered_microjoules
          WHERE NOT ${running}
          UNION ALL
          SELECT * FROM gpucap_workload_energy(${workload}.organization_id, ${workload}.workload_id, ${workload}.cluster_id, ${workload}.completed_at)
          WHERE ${running}) AS e
  ) AS ${alias} ON true`;
}

/** An exact sum of microjoules as kWh, rounded once to 4 decimals. */
export function energyKwhSql(microjoules: string): string {
  return `round(${microjoules} / ${MICROJOULES_PER_KWH}, 4)::float8`;
}

/** An exact sum of µJ × g/kWh as kg CO2e, rounded once to 4 decimals. */
export function carbonKgSql(microjouleGramsPerKwh: string): string {
  return `round(${microjouleGramsPerKwh} / ${MICROJOULE_GRAMS_PER_KWH_PER_KG}, 4)::float8`;
}
