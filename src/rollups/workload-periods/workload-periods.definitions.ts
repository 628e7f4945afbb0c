import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/** Workload periods: GPU-seconds of each workload split by UTC day, team and pool, kept by statement triggers on workloads. */
export const workloadPeriodDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_period_delete() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, cost_unit_us_sum, priced_whole_unit_us_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           sum(sign * (status = 'pending')::int)::bigint,
           sum(sign * (status = 'running')::int)::bigint,
           sum(sign * (status = 'completed')::int)::bigint,
           sum(sign * (status = 'failed')::int)::bigint,
           sum(sign * (status = 'cancelled')::int)::bigint,
           sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int)::bigint,
           coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
           coalesce(sum(sign * gpu_seconds), 0)::bigint,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * priced_cost_unit_us), 0),
           coalesce(sum(sign * priced_whole_unit_us), 0),
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT -1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM old_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * priced_cost_unit_us), 0) <> 0 OR coalesce(sum(sign * priced_whole_unit_us), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      pending_count = r.pending_count + excluded.pending_count,
      running_count = r.running_count + excluded.running_count,
      completed_count = r.completed_count + excluded.completed_count,
      failed_count = r.failed_count + excluded.failed_count,
      cancelled_count = r.cancelled_count + excluded.cancelled_count,
      finished_count = r.finished_count + excluded.finished_count,
      duration_seconds_sum = r.duration_seconds_sum + excluded.duration_seconds_sum,
      gpu_seconds_sum = r.gpu_seconds_sum + excluded.gpu_seconds_sum,
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      cost_unit_us_sum = r.cost_unit_us_sum + excluded.cost_unit_us_sum,
      priced_whole_unit_us_sum = r.priced_whole_unit_us_sum + excluded.priced_whole_unit_us_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND r.pending_count = 0 AND r.running_count = 0 AND r.completed_count = 0 AND r.failed_count = 0 AND r.cancelled_count = 0;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_period_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, cost_unit_us_sum, priced_whole_unit_us_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           sum(sign * (status = 'pending')::int)::bigint,
           sum(sign * (status = 'running')::int)::bigint,
           sum(sign * (status = 'completed')::int)::bigint,
           sum(sign * (status = 'failed')::int)::bigint,
           sum(sign * (status = 'cancelled')::int)::bigint,
           sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int)::bigint,
           coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
           coalesce(sum(sign * gpu_seconds), 0)::bigint,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * priced_cost_unit_us), 0),
           coalesce(sum(sign * priced_whole_unit_us), 0),
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT 1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM new_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * priced_cost_unit_us), 0) <> 0 OR coalesce(sum(sign * priced_whole_unit_us), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      pending_count = r.pending_count + excluded.pending_count,
      running_count = r.running_count + excluded.running_count,
      completed_count = r.completed_count + excluded.completed_count,
      failed_count = r.failed_count + excluded.failed_count,
      cancelled_count = r.cancelled_count + excluded.cancelled_count,
      finished_count = r.finished_count + excluded.finished_count,
      duration_seconds_sum = r.duration_seconds_sum + excluded.duration_seconds_sum,
      gpu_seconds_sum = r.gpu_seconds_sum + excluded.gpu_seconds_sum,
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      cost_unit_us_sum = r.cost_unit_us_sum + excluded.cost_unit_us_sum,
      priced_whole_unit_us_sum = r.priced_whole_unit_us_sum + excluded.priced_whole_unit_us_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_period_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      DELETE FROM workload_period_rollups;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_period_update() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, cost_unit_us_sum, priced_whole_unit_us_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           sum(sign * (status = 'pending')::int)::bigint,
           sum(sign * (status = 'running')::int)::bigint,
           sum(sign * (status = 'completed')::int)::bigint,
           sum(sign * (status = 'failed')::int)::bigint,
           sum(sign * (status = 'cancelled')::int)::bigint,
           sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int)::bigint,
           coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0)::bigint,
           coalesce(sum(sign * gpu_seconds), 0)::bigint,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * priced_cost_unit_us), 0),
           coalesce(sum(sign * priced_whole_unit_us), 0),
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT 1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at, priced_cost_unit_us, priced_whole_unit_us, whole_cost_unit_us,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM old_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * priced_cost_unit_us), 0) <> 0 OR coalesce(sum(sign * priced_whole_unit_us), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      pending_count = r.pending_count + excluded.pending_count,
      running_count = r.running_count + excluded.running_count,
      completed_count = r.completed_count + excluded.completed_count,
      failed_count = r.failed_count + excluded.failed_count,
      cancelled_count = r.cancelled_count + excluded.cancelled_count,
      finished_count = r.finished_count + excluded.finished_count,
      duration_seconds_sum = r.duration_seconds_sum + excluded.duration_seconds_sum,
      gpu_seconds_sum = r.gpu_seconds_sum + excluded.gpu_seconds_sum,
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      cost_unit_us_sum = r.cost_unit_us_sum + excluded.cost_unit_us_sum,
      priced_whole_unit_us_sum = r.priced_whole_unit_us_sum + excluded.priced_whole_unit_us_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND r.pending_count = 0 AND r.running_count = 0 AND r.completed_count = 0 AND r.failed_count = 0 AND r.cancelled_count = 0;
      RETURN NULL;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_period_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_period_update()',
  ),
];
