/*
 * What readers take of the metric aggregates: a workload's aggregate joined to its row, and the
 * sampled and busy parts of an amount of GPU-time, the way the triggers compute them.
 */

/** What the readers take of a workload's metric aggregate: the idle parts and the ranked average. */
const AGGREGATE_COLUMNS = 'm.sample_count, m.gpu_utilization_sum, m.gpu_utilization_avg';

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
 * `carbon_kg` is also null while part of the energy has no carbon intensity. The aggregate holds the
 * held parts of every reading but the last; the last holds until completed_at within the cap
 * (gpucap_energy_tail_microjoules, the triggers' own rule), at the intensity of its time. One
 * primary-key lookup of the aggregate and of the organization per row, and for a finished workload
 * one of its cluster's intensity periods.
 */
export function workloadEnergyLateralSql(workload: string, alias: string): string {
  return `LEFT JOIN LATERAL (
    SELECT round(e.microjoules / ${MICROJOULES_PER_KWH}, 4)::float8 AS energy_kwh,
           CASE WHEN e.uncovered = 0 THEN round(e.carbon / ${MICROJOULE_GRAMS_PER_KWH_PER_KG}, 4)::float8 END AS carbon_kg
    FROM metric_aggregates m
    JOIN organizations o ON o.organization_id = m.organization_id
    CROSS JOIN LATERAL (
      SELECT gpucap_energy_tail_microjoules(m.latest_sampled_at, m.power_usage_latest, ${workload}.completed_at,
                                            o.max_sample_gap_seconds) AS microjoules
    ) AS tail
    CROSS JOIN LATERAL (
      SELECT CASE WHEN tail.microjoules > 0
                  THEN gpucap_carbon_intensity_at(m.organization_id, ${workload}.cluster_id, m.latest_sampled_at) END AS intensity
    ) AS last
    CROSS JOIN LATERAL (
      SELECT m.energy_microjoules + tail.microjoules AS microjoules,
             m.carbon_microjoule_grams_per_kwh + coalesce(tail.microjoules * last.intensity, 0) AS carbon,
             m.uncovered_microjoules + CASE WHEN last.intensity IS NULL THEN tail.microjoules ELSE 0 END AS uncovered
    ) AS e
    WHERE m.organization_id = ${workload}.organization_id AND m.workload_id = ${workload}.workload_id
      AND m.sample_count > 0
    OFFSET 0
  ) AS ${alias} ON true`;
}
