import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/** Capacity usage: GPU-hours per pool and team by day and by hour, kept by statement triggers on workloads. */
export const capacityUsageDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_trigger() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
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
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_capacity_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM capacity_usage_daily;
      DELETE FROM capacity_usage_hourly;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_usage_days(run_start timestamp with time zone, run_end timestamp with time zone, gpus integer) RETURNS TABLE(usage_day date, gpu_microseconds bigint, spanning_gpus bigint) LANGUAGE sql IMMUTABLE AS $$
    SELECT day_start::date,
           gpus::bigint * (extract(epoch FROM least(run_end AT TIME ZONE 'UTC', day_start + interval '1 day')
                                           - greatest(run_start AT TIME ZONE 'UTC', day_start)) * 1000000)::bigint,
           CASE WHEN run_start AT TIME ZONE 'UTC' <= day_start
                     AND run_end AT TIME ZONE 'UTC' >= day_start + interval '1 day'
                THEN gpus::bigint ELSE 0 END
    FROM generate_series(date_trunc('day', run_start AT TIME ZONE 'UTC'), run_end AT TIME ZONE 'UTC',
                         interval '1 day') AS days (day_start)
    WHERE run_end AT TIME ZONE 'UTC' > day_start
      AND run_start AT TIME ZONE 'UTC' < day_start + interval '1 day'
      AND gpus > 0
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_usage_hours(run_start timestamp with time zone, run_end timestamp with time zone, run_gpus integer) RETURNS TABLE(usage_day date, start_hour smallint, end_hour smallint, gpus bigint, gpu_start_offset bigint, gpu_microseconds bigint) LANGUAGE sql IMMUTABLE AS $$
    SELECT d.day::date,
           CASE WHEN run.s > d.day THEN extract(hour FROM run.s) ELSE -1 END::smallint,
           CASE WHEN run.e < d.day + interval '1 day' THEN extract(hour FROM run.e) ELSE 24 END::smallint,
           run_gpus::bigint,
           run_gpus::bigint * (extract(epoch FROM greatest(run.s, d.day) - d.day) * 1000000)::bigint,
           run_gpus::bigint * (extract(epoch FROM least(run.e, d.day + interval '1 day')
                                                 - greatest(run.s, d.day)) * 1000000)::bigint
    FROM (SELECT run_start AT TIME ZONE 'UTC', run_end AT TIME ZONE 'UTC') AS run (s, e)
    -- The day it starts in, and the day of its last microsecond when that is another day.
    CROSS JOIN LATERAL (VALUES (date_trunc('day', run.s)),
                               (nullif(date_trunc('day', run.e - interval '1 microsecond'), date_trunc('day', run.s))))
      AS d (day)
    WHERE d.day IS NOT NULL AND run.e > run.s AND run_gpus > 0
      AND (run.s > d.day OR run.e < d.day + interval '1 day')
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_capacity_rollup_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger()',
  ),
];
