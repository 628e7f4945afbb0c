import { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * GPU shares. A workload holds `gpu_share_units` of a GPU (generated: `share_units` where a writer set one,
 * else whole GPUs) in units of 1/5040 (src/common/gpu-sharing.ts):
 * whole GPUs 5040 each, a MIG 1g instance of an H100 720, one of four time-sliced replicas 1260. Every
 * GPU amount the rollups keep (GPU-seconds, GPU-microseconds, GPUs of a bucket) is counted in these
 * units from here on, so the sums stay exact integers and seven 1g instances add up to one GPU.
 *
 * The trigger functions below are the ones of …5000 to …18000 as they stood, with the workload's
 * amount read from gpu_share_units instead of gpu_count; they are written out whole so that this
 * migration depends on nothing that can change. The rollups' integer amounts are multiplied by 5040
 * (exact), their idle parts rebuilt (rebuildAggregates), and gpucap_idle_gpu_hours divides by 5040
 * first, so every stored figure of whole-GPU workloads reads back as before.
 */
const UNITS = 5040;

const TRIGGER_FUNCTIONS = [
  `CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_workload()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      SELECT w.initiative_id, w.status, CASE WHEN w.status <> 'running'
    THEN (w.gpu_share_units * greatest(0, floor(date_part('epoch', w.completed_at - w.started_at))))::bigint END
      INTO NEW.initiative_id, NEW.status, NEW.settled_gpu_seconds
      FROM workloads w
      WHERE w.organization_id = NEW.organization_id AND w.workload_id = NEW.workload_id;
      RETURN NEW;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_ranked_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      
    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, workload_count, gpu_seconds_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, gpu_share_units, started_at, completed_at FROM new_rows) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum;
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
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_ranked_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      
    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, workload_count, gpu_seconds_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint
    FROM (SELECT 1 AS sign, organization_id, initiative_id, status, gpu_share_units, started_at, completed_at FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, initiative_id, status, gpu_share_units, started_at, completed_at FROM old_rows) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum;
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
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_ranked_delete()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
    BEGIN
      
    INSERT INTO workload_status_totals AS t (organization_id, initiative_id, status, workload_count, gpu_seconds_sum)
    SELECT organization_id, initiative_id, status, sum(sign)::bigint,
           sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint)::bigint
    FROM (SELECT -1 AS sign, organization_id, initiative_id, status, gpu_share_units, started_at, completed_at FROM old_rows) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(sign) <> 0 OR sum(sign * (gpu_share_units * greatest(0, floor(date_part('epoch', completed_at - started_at))))::bigint) <> 0
    ORDER BY 1, 2, 3
    ON CONFLICT (organization_id, initiative_id, status)
    DO UPDATE SET workload_count = t.workload_count + excluded.workload_count,
                  gpu_seconds_sum = t.gpu_seconds_sum + excluded.gpu_seconds_sum;
    UPDATE metric_aggregates a
    SET initiative_id = NULL, status = NULL, settled_gpu_seconds = NULL
    FROM old_rows o
    WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_period_insert()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
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
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT 1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM new_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
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
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_period_update()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
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
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT 1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM old_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
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
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND r.pending_count = 0 AND r.running_count = 0 AND r.completed_count = 0 AND r.failed_count = 0 AND r.cancelled_count = 0;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_workload_period_delete()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, pending_count, running_count, completed_count, failed_count, cancelled_count, finished_count, duration_seconds_sum, gpu_seconds_sum, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
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
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT -1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM old_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING sum(sign * (status = 'pending')::int) <> 0 OR sum(sign * (status = 'running')::int) <> 0 OR sum(sign * (status = 'completed')::int) <> 0 OR sum(sign * (status = 'failed')::int) <> 0 OR sum(sign * (status = 'cancelled')::int) <> 0 OR sum(sign * (status IN ('completed', 'failed', 'cancelled') AND started_at IS NOT NULL)::int) <> 0 OR coalesce(sum(sign * floor(extract(epoch FROM completed_at - started_at))), 0) <> 0 OR coalesce(sum(sign * gpu_seconds), 0) <> 0 OR coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
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
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
    DELETE FROM workload_period_rollups r
    USING (SELECT DISTINCT organization_id, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour_start, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day_start
           FROM old_rows) touched
    WHERE r.organization_id = touched.organization_id
      AND ((r.period = 'hour' AND r.bucket_start = touched.hour_start)
        OR (r.period = 'day' AND r.bucket_start = touched.day_start))
      AND r.pending_count = 0 AND r.running_count = 0 AND r.completed_count = 0 AND r.failed_count = 0 AND r.cancelled_count = 0;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_trigger()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      IF TG_OP = 'INSERT' THEN 
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT 1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM new_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * d.gpu_microseconds), sum(c.sign * d.spanning_gpus), sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * d.gpu_microseconds) <> 0 OR sum(c.sign * d.spanning_gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      spanning_gpus = r.spanning_gpus + excluded.spanning_gpus,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, gpus, sampled_gpus, busy_gpus, gpu_start_offset, sampled_gpu_start_offset, busy_gpu_start_offset, gpu_microseconds, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * h.gpus), sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_start_offset), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_microseconds), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * h.gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_start_offset) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_microseconds) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      gpus = r.gpus + excluded.gpus,
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      gpu_start_offset = r.gpu_start_offset + excluded.gpu_start_offset,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      ELSIF TG_OP = 'DELETE' THEN 
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (SELECT -1 AS sign, organization_id, workload_id, submitted_at, initiative_id, submitted_by, instance_type, is_managed, status, gpu_share_units, started_at, completed_at,
      coalesce(gpu_share_units::bigint * floor(extract(epoch FROM completed_at - started_at)), 0) AS gpu_seconds FROM old_rows) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * d.gpu_microseconds), sum(c.sign * d.spanning_gpus), sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * d.gpu_microseconds) <> 0 OR sum(c.sign * d.spanning_gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      spanning_gpus = r.spanning_gpus + excluded.spanning_gpus,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, gpus, sampled_gpus, busy_gpus, gpu_start_offset, sampled_gpu_start_offset, busy_gpu_start_offset, gpu_microseconds, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * h.gpus), sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_start_offset), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_microseconds), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * h.gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_start_offset) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_microseconds) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      gpus = r.gpus + excluded.gpus,
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      gpu_start_offset = r.gpu_start_offset + excluded.gpu_start_offset,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      ELSE 
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT runs.*, a.sample_count, a.gpu_utilization_sum FROM (
    SELECT c.* FROM old_rows o
    FULL JOIN new_rows n ON n.organization_id = o.organization_id AND n.workload_id = o.workload_id
    CROSS JOIN LATERAL (VALUES
      (-1, o.organization_id, o.workload_id, o.initiative_id, o.instance_type, o.gpu_share_units, o.started_at, o.completed_at),
      (1, n.organization_id, n.workload_id, n.initiative_id, n.instance_type, n.gpu_share_units, n.started_at, n.completed_at)
    ) AS c (sign, organization_id, workload_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at)
    WHERE (o.initiative_id, o.instance_type, o.gpu_share_units, o.started_at, o.completed_at) IS DISTINCT FROM (n.initiative_id, n.instance_type, n.gpu_share_units, n.started_at, n.completed_at)) AS runs
    LEFT JOIN metric_aggregates a ON a.organization_id = runs.organization_id AND a.workload_id = runs.workload_id
      AND runs.started_at IS NOT NULL AND runs.completed_at IS NOT NULL) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * d.gpu_microseconds), sum(c.sign * d.spanning_gpus), sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * d.gpu_microseconds) <> 0 OR sum(c.sign * d.spanning_gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      spanning_gpus = r.spanning_gpus + excluded.spanning_gpus,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, gpus, sampled_gpus, busy_gpus, gpu_start_offset, sampled_gpu_start_offset, busy_gpu_start_offset, gpu_microseconds, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * h.gpus), sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_start_offset), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * h.gpu_microseconds), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * h.gpus) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_start_offset) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * h.gpu_microseconds) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      gpus = r.gpus + excluded.gpus,
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      gpu_start_offset = r.gpu_start_offset + excluded.gpu_start_offset,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      END IF;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_idle_rollups_insert()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_idle_rollups_update()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $function$`,
  `CREATE OR REPLACE FUNCTION gpucap_idle_rollups_delete()
 RETURNS trigger
 LANGUAGE plpgsql
 SET jit TO 'off'
AS $function$
    BEGIN
      
    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, sampled_gpu_seconds_sum, busy_gpu_seconds_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, day, initiative_id), (organization_id, day, initiative_id, submitted_by), (organization_id, day, initiative_id, instance_type), (organization_id, hour, initiative_id), (organization_id, hour, initiative_id, submitted_by), (organization_id, hour, initiative_id, instance_type), (organization_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.status, w.gpu_share_units, w.started_at, w.completed_at,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)
    
    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $function$`,
];

/** The integer GPU amounts, scaled in place (exact). The idle parts are rebuilt instead: see rebuildAggregates. */
const SCALED_COLUMNS: Record<string, string[]> = {
  capacity_usage_daily: ['gpu_microseconds', 'spanning_gpus'],
  capacity_usage_hourly: ['gpus', 'gpu_start_offset', 'gpu_microseconds'],
  workload_period_rollups: ['gpu_seconds_sum'],
  workload_status_totals: ['gpu_seconds_sum'],
};

function idleGpuHoursSql(units: number): string {
  return `CREATE OR REPLACE FUNCTION gpucap_idle_gpu_hours(gpu_seconds double precision, gpu_utilization_avg double precision)
    RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (gpu_seconds / ${units} / 3600) * (1 - gpu_utilization_avg / 100) $$`;
}

/** The finished-run and running-run indexes of …3000 and …17000, and the ranked GPU-seconds ones of …5000. */
function workloadIndexesSql(amount: string): string[] {
  const gpuSeconds = `(${amount} * greatest(0, floor(date_part('epoch', completed_at - started_at))))`;
  return [
    `DROP INDEX workloads_org_finished_started, workloads_org_finished_completed, workloads_org_running_usage,
       workloads_org_status_gpu_seconds, workloads_org_initiative_status_gpu_seconds`,
    `CREATE INDEX workloads_org_finished_started ON workloads (organization_id, started_at)
       INCLUDE (completed_at, ${amount}, initiative_id, instance_type)
       WHERE started_at IS NOT NULL AND completed_at IS NOT NULL`,
    `CREATE INDEX workloads_org_finished_completed ON workloads (organization_id, completed_at)
       INCLUDE (started_at, ${amount}, initiative_id, instance_type)
       WHERE started_at IS NOT NULL AND completed_at IS NOT NULL`,
    `CREATE INDEX workloads_org_running_usage ON workloads (organization_id)
       INCLUDE (initiative_id, instance_type, ${amount}, started_at) WHERE status = 'running'`,
    `CREATE INDEX workloads_org_status_gpu_seconds ON workloads
       (organization_id, status, ${gpuSeconds}, workload_id COLLATE "C")`,
    `CREATE INDEX workloads_org_initiative_status_gpu_seconds ON workloads
       (organization_id, initiative_id, status, ${gpuSeconds}, workload_id COLLATE "C")`,
  ];
}

async function scaleRollups(queryRunner: QueryRunner, operator: '*' | '/'): Promise<void> {
  for (const [table, columns] of Object.entries(SCALED_COLUMNS)) {
    await queryRunner.query(
      `UPDATE ${table} SET ${columns.map((column) => `${column} = ${column} ${operator} ${UNITS}`).join(', ')}`,
    );
  }
}

/**
 * The idle parts (sampled and busy GPU-time) and the aggregates' settled GPU-seconds, rebuilt by the
 * current trigger functions. Busy parts are numeric quotients rounded to the division's precision,
 * so 5040 × a stored part is not always the part the new triggers compute (and later subtract) for
 * the same run: scaling them would leave a residue. Truncating the aggregates zeroes every idle part
 * and the ranked totals (their truncate triggers); inserting them back adds each workload's parts
 * and sets its settled GPU-seconds (its insert triggers), exactly as a writer would now.
 */
async function rebuildAggregates(queryRunner: QueryRunner): Promise<void> {
  const columns = (
    (await queryRunner.query(
      `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) AS list
       FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = 'metric_aggregates' AND is_generated = 'NEVER'`,
    )) as { list: string }[]
  )[0].list;
  await queryRunner.query(
    `CREATE TEMPORARY TABLE gpucap_saved_aggregates ON COMMIT DROP AS SELECT ${columns} FROM metric_aggregates`,
  );
  await queryRunner.query('TRUNCATE metric_aggregates');
  await queryRunner.query(
    `INSERT INTO metric_aggregates (${columns}) SELECT ${columns} FROM gpucap_saved_aggregates
     ORDER BY organization_id, workload_id`,
  );
}

export class GpuShares1763800022000 implements MigrationInterface {
  name = 'GpuShares1763800022000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers set share_units only for a share other than whole GPUs; the generated column is what the
    // rollups read, so a writer that knows nothing of shares (or changes gpu_count alone) stays exact.
    await queryRunner.query(
      `ALTER TABLE workloads ADD COLUMN share_units integer,
         ADD COLUMN gpu_share_units integer GENERATED ALWAYS AS (coalesce(share_units, gpu_count * ${UNITS})) STORED,
         ADD COLUMN gpu_sharing_mode text, ADD COLUMN gpu_sharing_profile text, ADD COLUMN gpu_sharing_replicas integer,
         ADD CONSTRAINT workloads_share_units_check
           CHECK (share_units > 0 AND share_units <= gpu_count::bigint * ${UNITS}),
         ADD CONSTRAINT workloads_gpu_sharing_check CHECK (
           (gpu_sharing_mode IS NULL AND gpu_sharing_profile IS NULL AND gpu_sharing_replicas IS NULL)
           OR (gpu_sharing_mode = 'mig' AND gpu_sharing_profile IS NOT NULL AND gpu_sharing_replicas IS NULL)
           OR (gpu_sharing_mode IN ('time-slicing', 'mps') AND gpu_sharing_profile IS NULL
               AND gpu_sharing_replicas >= 1))`,
    );
    await queryRunner.query(idleGpuHoursSql(UNITS));
    await scaleRollups(queryRunner, '*');
    for (const sql of TRIGGER_FUNCTIONS) await queryRunner.query(sql);
    for (const sql of workloadIndexesSql('gpu_share_units')) await queryRunner.query(sql);
    await rebuildAggregates(queryRunner);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    const [{ fractional }] = (await queryRunner.query(
      'SELECT EXISTS (SELECT 1 FROM workloads WHERE share_units IS NOT NULL) AS fractional',
    )) as { fractional: boolean }[];
    if (fractional)
      throw new Error('workloads hold fractional GPU shares, which the earlier schema cannot represent');
    for (const sql of workloadIndexesSql('gpu_count')) await queryRunner.query(sql);
    for (const sql of TRIGGER_FUNCTIONS)
      await queryRunner.query(sql.replaceAll('gpu_share_units', 'gpu_count'));
    await queryRunner.query(idleGpuHoursSql(1).replace(' / 1 / 3600', ' / 3600'));
    await scaleRollups(queryRunner, '/');
    await rebuildAggregates(queryRunner);
    await queryRunner.query(
      `ALTER TABLE workloads DROP COLUMN gpu_share_units, DROP COLUMN share_units, DROP COLUMN gpu_sharing_mode,
         DROP COLUMN gpu_sharing_profile, DROP COLUMN gpu_sharing_replicas`,
    );
  }
}
