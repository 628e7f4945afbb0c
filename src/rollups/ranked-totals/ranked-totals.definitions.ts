import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/** Ranked totals: per-status workload counts and metric sums that let a ranked page stop early. */
export const rankedTotalDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_ranked_totals_delete() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO metric_ranked_totals AS t (organization_id, initiative_id, status, workload_count,
                                           gpu_utilization_avg_sum, memory_utilization_avg_sum, power_usage_avg_sum, idle_gpu_hours_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint, sum(sign * gpu_utilization_avg::numeric), sum(sign * memory_utilization_avg::numeric), sum(sign * power_usage_avg::numeric), coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0)
    FROM (SELECT -1 AS sign, organization_id, initiative_id, status, gpu_utilization_avg, memory_utilization_avg, power_usage_avg, settled_gpu_seconds FROM old_rows WHERE sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * gpu_utilization_avg::numeric) <> 0 OR sum(sign * memory_utilization_avg::numeric) <> 0 OR sum(sign * power_usage_avg::numeric) <> 0 OR coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status) DO UPDATE SET
      workload_count = t.workload_count + excluded.workload_count,
      gpu_utilization_avg_sum = t.gpu_utilization_avg_sum + excluded.gpu_utilization_avg_sum,
      memory_utilization_avg_sum = t.memory_utilization_avg_sum + excluded.memory_utilization_avg_sum,
      power_usage_avg_sum = t.power_usage_avg_sum + excluded.power_usage_avg_sum,
      idle_gpu_hours_sum = t.idle_gpu_hours_sum + excluded.idle_gpu_hours_sum;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_ranked_totals_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO metric_ranked_totals AS t (organization_id, initiative_id, status, workload_count,
                                           gpu_utilization_avg_sum, memory_utilization_avg_sum, power_usage_avg_sum, idle_gpu_hours_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint, sum(sign * gpu_utilization_avg::numeric), sum(sign * memory_utilization_avg::numeric), sum(sign * power_usage_avg::numeric), coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0)
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, gpu_utilization_avg, memory_utilization_avg, power_usage_avg, settled_gpu_seconds FROM new_rows WHERE sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * gpu_utilization_avg::numeric) <> 0 OR sum(sign * memory_utilization_avg::numeric) <> 0 OR sum(sign * power_usage_avg::numeric) <> 0 OR coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status) DO UPDATE SET
      workload_count = t.workload_count + excluded.workload_count,
      gpu_utilization_avg_sum = t.gpu_utilization_avg_sum + excluded.gpu_utilization_avg_sum,
      memory_utilization_avg_sum = t.memory_utilization_avg_sum + excluded.memory_utilization_avg_sum,
      power_usage_avg_sum = t.power_usage_avg_sum + excluded.power_usage_avg_sum,
      idle_gpu_hours_sum = t.idle_gpu_hours_sum + excluded.idle_gpu_hours_sum;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_ranked_totals_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      DELETE FROM metric_ranked_totals;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_ranked_totals_update() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO metric_ranked_totals AS t (organization_id, initiative_id, status, workload_count,
                                           gpu_utilization_avg_sum, memory_utilization_avg_sum, power_usage_avg_sum, idle_gpu_hours_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint, sum(sign * gpu_utilization_avg::numeric), sum(sign * memory_utilization_avg::numeric), sum(sign * power_usage_avg::numeric), coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0)
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, gpu_utilization_avg, memory_utilization_avg, power_usage_avg, settled_gpu_seconds FROM new_rows WHERE sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL UNION ALL SELECT -1 AS sign, organization_id, initiative_id, status, gpu_utilization_avg, memory_utilization_avg, power_usage_avg, settled_gpu_seconds FROM old_rows WHERE sample_count > 0 AND initiative_id IS NOT NULL AND status IS NOT NULL) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * gpu_utilization_avg::numeric) <> 0 OR sum(sign * memory_utilization_avg::numeric) <> 0 OR sum(sign * power_usage_avg::numeric) <> 0 OR coalesce(sum(sign * gpucap_idle_gpu_hours(settled_gpu_seconds, gpu_utilization_avg)::numeric), 0) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status) DO UPDATE SET
      workload_count = t.workload_count + excluded.workload_count,
      gpu_utilization_avg_sum = t.gpu_utilization_avg_sum + excluded.gpu_utilization_avg_sum,
      memory_utilization_avg_sum = t.memory_utilization_avg_sum + excluded.memory_utilization_avg_sum,
      power_usage_avg_sum = t.power_usage_avg_sum + excluded.power_usage_avg_sum,
      idle_gpu_hours_sum = t.idle_gpu_hours_sum + excluded.idle_gpu_hours_sum;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_ranked_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN

    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, cluster_id, workload_count, gpu_seconds_sum, costed_count, cost_unit_us_sum, energy_count, energy_microjoules_sum)
    SELECT organization_id, initiative_id, status, cluster_id, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint,
           coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0)::bigint, coalesce(sum(sign * cost_unit_us), 0),
           coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0)::bigint, coalesce(sum(sign * energy_microjoules), 0)
    FROM (SELECT -1 AS sign, organization_id, initiative_id, status, cluster_id, gpu_share_units, started_at, completed_at, cost_unit_us, energy_microjoules FROM old_rows) AS changed
    GROUP BY 1, 2, 3, 4
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
      OR coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * cost_unit_us), 0) <> 0
      OR coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * energy_microjoules), 0) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (organization_id, initiative_id, status, cluster_id)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum,
                  costed_count = t.costed_count + excluded.costed_count,
                  cost_unit_us_sum = t.cost_unit_us_sum + excluded.cost_unit_us_sum,
                  energy_count = t.energy_count + excluded.energy_count,
                  energy_microjoules_sum = t.energy_microjoules_sum + excluded.energy_microjoules_sum;
    UPDATE metric_aggregates a
    SET initiative_id = NULL, status = NULL, settled_gpu_seconds = NULL
    FROM old_rows o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_ranked_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN

    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, cluster_id, workload_count, gpu_seconds_sum, costed_count, cost_unit_us_sum, energy_count, energy_microjoules_sum)
    SELECT organization_id, initiative_id, status, cluster_id, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint,
           coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0)::bigint, coalesce(sum(sign * cost_unit_us), 0),
           coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0)::bigint, coalesce(sum(sign * energy_microjoules), 0)
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, cluster_id, gpu_share_units, started_at, completed_at, cost_unit_us, energy_microjoules FROM new_rows) AS changed
    GROUP BY 1, 2, 3, 4
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
      OR coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * cost_unit_us), 0) <> 0
      OR coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * energy_microjoules), 0) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (organization_id, initiative_id, status, cluster_id)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum,
                  costed_count = t.costed_count + excluded.costed_count,
                  cost_unit_us_sum = t.cost_unit_us_sum + excluded.cost_unit_us_sum,
                  energy_count = t.energy_count + excluded.energy_count,
                  energy_microjoules_sum = t.energy_microjoules_sum + excluded.energy_microjoules_sum;
    UPDATE metric_aggregates a
    SET initiative_id = n.initiative_id, status = n.status, settled_gpu_seconds = n.settled_gpu_seconds
    FROM (SELECT organization_id, workload_id, initiative_id, status, CASE WHEN new_rows.status <> 'running'
    THEN (new_rows.gpu_share_units * greatest(0, floor(date_part('epoch', new_rows.completed_at - new_rows.started_at))))::bigint END AS settled_gpu_seconds
          FROM new_rows) n
    WHERE a.organization_id = n.organization_id AND a.workload_id = n.workload_id
      AND (a.initiative_id IS DISTINCT FROM n.initiative_id OR a.status IS DISTINCT FROM n.status
           OR a.settled_gpu_seconds IS DISTINCT FROM n.settled_gpu_seconds);
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_ranked_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM workload_status_totals; UPDATE metric_aggregates SET initiative_id = NULL, status = NULL, settled_gpu_seconds = NULL;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_ranked_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN

    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, cluster_id, workload_count, gpu_seconds_sum, costed_count, cost_unit_us_sum, energy_count, energy_microjoules_sum)
    SELECT organization_id, initiative_id, status, cluster_id, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint,
           coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0)::bigint, coalesce(sum(sign * cost_unit_us), 0),
           coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0)::bigint, coalesce(sum(sign * energy_microjoules), 0)
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, cluster_id, gpu_share_units, started_at, completed_at, cost_unit_us, energy_microjoules FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, initiative_id, status, cluster_id, gpu_share_units, started_at, completed_at, cost_unit_us, energy_microjoules FROM old_rows) AS changed
    GROUP BY 1, 2, 3, 4
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
      OR coalesce(sum(sign) FILTER (WHERE cost_unit_us IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * cost_unit_us), 0) <> 0
      OR coalesce(sum(sign) FILTER (WHERE energy_microjoules IS NOT NULL), 0) <> 0 OR coalesce(sum(sign * energy_microjoules), 0) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (organization_id, initiative_id, status, cluster_id)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum,
                  costed_count = t.costed_count + excluded.costed_count,
                  cost_unit_us_sum = t.cost_unit_us_sum + excluded.cost_unit_us_sum,
                  energy_count = t.energy_count + excluded.energy_count,
                  energy_microjoules_sum = t.energy_microjoules_sum + excluded.energy_microjoules_sum;
    UPDATE metric_aggregates a
    SET initiative_id = n.initiative_id, status = n.status, settled_gpu_seconds = n.settled_gpu_seconds
    FROM (SELECT organization_id, workload_id, initiative_id, status, CASE WHEN new_rows.status <> 'running'
    THEN (new_rows.gpu_share_units * greatest(0, floor(date_part('epoch', new_rows.completed_at - new_rows.started_at))))::bigint END AS settled_gpu_seconds
          FROM new_rows) n
    WHERE a.organization_id = n.organization_id AND a.workload_id = n.workload_id
      AND (a.initiative_id IS DISTINCT FROM n.initiative_id OR a.status IS DISTINCT FROM n.status
           OR a.settled_gpu_seconds IS DISTINCT FROM n.settled_gpu_seconds);
      RETURN NULL;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_ranked_totals_delete AFTER DELETE ON metric_aggregates REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_ranked_totals_insert AFTER INSERT ON metric_aggregates REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_ranked_totals_truncate AFTER TRUNCATE ON metric_aggregates FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_ranked_totals_update AFTER UPDATE ON metric_aggregates REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_ranked_totals_update()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_ranked_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_ranked_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_ranked_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_ranked_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_ranked_update()',
  ),
];
