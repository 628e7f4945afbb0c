import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import {
  ENERGY_COLUMNS,
  ENERGY_CONFLICT_SET,
  energyChangesSql,
  energyDeltasSql,
  heldEnergySql,
  PENDING_SAMPLE_CHANGES,
  pendSampleChangesSql,
  SAMPLE_INSERT_DONE_SQL,
  SAMPLE_INSERT_RUNNING_SQL,
  WATT_CENTS_SQL,
} from './energy.definitions';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];
const ENERGY_COLUMN_LIST = ENERGY_COLUMNS.join(', ');

/** A row INSERT's changes to energy: its readings, and those its upsert's UPDATE part left pending. */
const INSERTED_ROW_CHANGES = `SELECT 1 AS sign, organization_id, workload_id, sampled_at, power_usage FROM new_rows
          UNION ALL SELECT sign, organization_id, workload_id, sampled_at, power_usage FROM ${PENDING_SAMPLE_CHANGES}`;
const UPDATED_ROW_CHANGES = energyChangesSql('new_rows', 'old_rows');
const DELETED_ROW_CHANGES =
  'SELECT -1 AS sign, organization_id, workload_id, sampled_at, power_usage FROM old_rows';
/** A block statement's changed readings (the temporary changed_samples) as changes to energy. */
const CHANGED_DAY_SAMPLES = energyChangesSql(
  '(SELECT * FROM changed_samples WHERE sign > 0) AS added_samples',
  '(SELECT * FROM changed_samples WHERE sign < 0) AS removed_samples',
);

/** Changes an UPDATE settles itself, unless an INSERT of the same statement settles them (plpgsql `upserting`). */
const unlessUpserting = (changes: string) => `SELECT * FROM (${changes}) AS changes WHERE NOT upserting`;

/** The row triggers' summary per workload: the grouped readings, their latest values, the energy deltas. */
const ROW_SUMMARY_SQL = `SELECT organization_id, workload_id, coalesce(g.sample_count, 0) AS sample_count, g.first_sampled_at, g.latest_sampled_at,
          ${METRICS.map((m) => `coalesce(g.${m}_sum, 0) AS ${m}_sum, g.${m}_min, g.${m}_max`).join(', ')},
          ${METRICS.map((m) => `l.${m}_latest`).join(', ')},
          ${ENERGY_COLUMNS.map((column) => `coalesce(e.${column}, 0) AS ${column}`).join(', ')}
        FROM grouped g LEFT JOIN latest l USING (organization_id, workload_id) FULL JOIN energy e USING (organization_id, workload_id)`;

/** Metric aggregates: per-workload sums of samples from both stores (rows and day blocks), and the idle GPU-hours they carry on into the period and capacity rollups. */
export const metricAggregateDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_busy_share(amount numeric, utilization_sum numeric, sample_count bigint) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN sample_count > 0 THEN amount * utilization_sum / (sample_count * 100) ELSE 0 END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_idle_gpu_hours(gpu_seconds double precision, gpu_utilization_avg double precision) RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (gpu_seconds / 5040 / 3600) * (1 - gpu_utilization_avg / 100)
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_idle_rollups_delete() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           cluster_id,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, cluster_id, day, initiative_id), (organization_id, cluster_id, day, initiative_id, submitted_by), (organization_id, cluster_id, day, initiative_id, instance_type), (organization_id, cluster_id, hour, initiative_id), (organization_id, cluster_id, hour, initiative_id, submitted_by), (organization_id, cluster_id, hour, initiative_id, instance_type), (organization_id, cluster_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, cluster_id, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, cluster_id, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, c.cluster_id, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)

    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type, c.cluster_id,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6, 7
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_idle_rollups_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           cluster_id,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, cluster_id, day, initiative_id), (organization_id, cluster_id, day, initiative_id, submitted_by), (organization_id, cluster_id, day, initiative_id, instance_type), (organization_id, cluster_id, hour, initiative_id), (organization_id, cluster_id, hour, initiative_id, submitted_by), (organization_id, cluster_id, hour, initiative_id, instance_type), (organization_id, cluster_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, cluster_id, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, cluster_id, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, c.cluster_id, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)

    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type, c.cluster_id,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6, 7
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_idle_rollups_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    UPDATE workload_period_rollups SET sampled_gpu_seconds_sum = 0, busy_gpu_seconds_sum = 0
      WHERE sampled_gpu_seconds_sum <> 0 OR busy_gpu_seconds_sum <> 0;
    UPDATE capacity_usage_daily SET sampled_gpu_microseconds = 0, busy_gpu_microseconds = 0, sampled_spanning_gpus = 0, busy_spanning_gpus = 0
      WHERE sampled_gpu_microseconds <> 0 OR busy_gpu_microseconds <> 0 OR sampled_spanning_gpus <> 0 OR busy_spanning_gpus <> 0;
    UPDATE capacity_usage_hourly SET sampled_gpus = 0, busy_gpus = 0, sampled_gpu_start_offset = 0, busy_gpu_start_offset = 0, sampled_gpu_microseconds = 0, busy_gpu_microseconds = 0
      WHERE sampled_gpus <> 0 OR busy_gpus <> 0 OR sampled_gpu_start_offset <> 0 OR busy_gpu_start_offset <> 0 OR sampled_gpu_microseconds <> 0 OR busy_gpu_microseconds <> 0;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_idle_rollups_update() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN

    INSERT INTO workload_period_rollups AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, sampled_gpu_seconds_sum, busy_gpu_seconds_sum, idle_cost_unit_us_sum)
    SELECT organization_id,
           CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END,
           CASE WHEN grouping(is_managed) = 0
                THEN CASE WHEN is_managed THEN 'managed_submitted_by' ELSE 'unmanaged_submitted_by' END
                WHEN grouping(submitted_by) = 0 THEN 'submitted_by'
                WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END,
           coalesce(day, hour), initiative_id,
           CASE WHEN grouping(submitted_by) = 0 THEN submitted_by
                WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END,
           cluster_id,
           coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0)::bigint,
           coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0)::numeric,
           coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0)
    FROM (SELECT *, date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS signed) AS changed
    GROUP BY GROUPING SETS ((organization_id, cluster_id, day, initiative_id), (organization_id, cluster_id, day, initiative_id, submitted_by), (organization_id, cluster_id, day, initiative_id, instance_type), (organization_id, cluster_id, hour, initiative_id), (organization_id, cluster_id, hour, initiative_id, submitted_by), (organization_id, cluster_id, hour, initiative_id, instance_type), (organization_id, cluster_id, day, initiative_id, is_managed, submitted_by))
    -- Re-importing identical rows nets to zero: skip the write instead of churning rollup rows.
    HAVING coalesce(sum(sign * gpucap_sampled_share(gpu_seconds, sample_count)), 0) <> 0 OR coalesce(sum(sign * gpucap_busy_share(gpu_seconds, gpu_utilization_sum, sample_count)), 0) <> 0
      OR coalesce(sum(sign * (gpucap_sampled_share(whole_cost_unit_us, sample_count) - gpucap_busy_share(whole_cost_unit_us, gpu_utilization_sum, sample_count))), 0) <> 0
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id) DO UPDATE SET
      sampled_gpu_seconds_sum = r.sampled_gpu_seconds_sum + excluded.sampled_gpu_seconds_sum,
      busy_gpu_seconds_sum = r.busy_gpu_seconds_sum + excluded.busy_gpu_seconds_sum,
      idle_cost_unit_us_sum = r.idle_cost_unit_us_sum + excluded.idle_cost_unit_us_sum;
    WITH runs AS MATERIALIZED (
      SELECT sign, organization_id, initiative_id, instance_type, cluster_id, gpu_share_units, started_at, completed_at, sample_count, gpu_utilization_sum FROM (
    SELECT c.sign, w.organization_id, w.workload_id, w.submitted_at, w.initiative_id, w.submitted_by, w.instance_type, w.is_managed, w.cluster_id, w.status, w.gpu_share_units, w.started_at, w.completed_at, w.whole_cost_unit_us,
           w.gpu_share_units::bigint * floor(extract(epoch FROM w.completed_at - w.started_at)) AS gpu_seconds,
           c.sample_count, c.gpu_utilization_sum
    FROM (SELECT 1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sample_count, gpu_utilization_sum FROM old_rows) AS c
    JOIN workloads w ON w.organization_id = c.organization_id AND w.workload_id = c.workload_id
    WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL AND w.gpu_share_units > 0) AS changed
      WHERE started_at IS NOT NULL AND completed_at IS NOT NULL AND gpu_share_units > 0
    ),
    daily AS (
    INSERT INTO capacity_usage_daily AS r (organization_id, usage_day, initiative_id, instance_type, cluster_id, sampled_gpu_microseconds, busy_gpu_microseconds, sampled_spanning_gpus, busy_spanning_gpus)
    SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type, c.cluster_id, sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)), sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_share_units) d
    WHERE c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(c.sign * gpucap_sampled_share(d.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(d.spanning_gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(d.spanning_gpus, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds,
      sampled_spanning_gpus = r.sampled_spanning_gpus + excluded.sampled_spanning_gpus,
      busy_spanning_gpus = r.busy_spanning_gpus + excluded.busy_spanning_gpus)

    INSERT INTO capacity_usage_hourly AS r (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id, sampled_gpus, busy_gpus, sampled_gpu_start_offset, busy_gpu_start_offset, sampled_gpu_microseconds, busy_gpu_microseconds)
    SELECT c.organization_id, h.usage_day, h.start_hour, h.end_hour, c.initiative_id, c.instance_type, c.cluster_id,
           sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)), sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)), sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)), sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count))
    FROM (SELECT * FROM runs) AS c
    CROSS JOIN LATERAL gpucap_usage_hours(c.started_at, c.completed_at, c.gpu_share_units) h
    GROUP BY 1, 2, 3, 4, 5, 6, 7
    HAVING sum(c.sign * gpucap_sampled_share(h.gpus, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpus, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_start_offset, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_start_offset, gpu_utilization_sum, sample_count)) <> 0 OR sum(c.sign * gpucap_sampled_share(h.gpu_microseconds, sample_count)) <> 0 OR sum(c.sign * gpucap_busy_share(h.gpu_microseconds, gpu_utilization_sum, sample_count)) <> 0
    ON CONFLICT (organization_id, usage_day, start_hour, end_hour, initiative_id, instance_type, cluster_id) DO UPDATE SET
      sampled_gpus = r.sampled_gpus + excluded.sampled_gpus,
      busy_gpus = r.busy_gpus + excluded.busy_gpus,
      sampled_gpu_start_offset = r.sampled_gpu_start_offset + excluded.sampled_gpu_start_offset,
      busy_gpu_start_offset = r.busy_gpu_start_offset + excluded.busy_gpu_start_offset,
      sampled_gpu_microseconds = r.sampled_gpu_microseconds + excluded.sampled_gpu_microseconds,
      busy_gpu_microseconds = r.busy_gpu_microseconds + excluded.busy_gpu_microseconds;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_delete() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
        BEGIN
          IF gpucap_sealing() THEN
            RETURN NULL;
          END IF;

        WITH touched AS (
          SELECT DISTINCT o.organization_id, o.workload_id
          FROM old_rows o
          JOIN metric_aggregates a USING (organization_id, workload_id)
          WHERE o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
             OR o.gpu_utilization IN (a.gpu_utilization_min, a.gpu_utilization_max)
             OR o.memory_utilization IN (a.memory_utilization_min, a.memory_utilization_max)
             OR o.temperature IN (a.temperature_min, a.temperature_max)
             OR o.power_usage IN (a.power_usage_min, a.power_usage_max)
        )
        UPDATE metric_aggregates a
        SET first_sampled_at = r.first_sampled_at,
            latest_sampled_at = r.latest_sampled_at,
            gpu_utilization_min = r.gpu_utilization_min, gpu_utilization_max = r.gpu_utilization_max, gpu_utilization_latest = l.gpu_utilization,
    memory_utilization_min = r.memory_utilization_min, memory_utilization_max = r.memory_utilization_max, memory_utilization_latest = l.memory_utilization,
    temperature_min = r.temperature_min, temperature_max = r.temperature_max, temperature_latest = l.temperature,
    power_usage_min = r.power_usage_min, power_usage_max = r.power_usage_max, power_usage_latest = l.power_usage
        FROM touched t
        CROSS JOIN LATERAL (
          SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
                 min(s.gpu_utilization) AS gpu_utilization_min, max(s.gpu_utilization) AS gpu_utilization_max,
    min(s.memory_utilization) AS memory_utilization_min, max(s.memory_utilization) AS memory_utilization_max,
    min(s.temperature) AS temperature_min, max(s.temperature) AS temperature_max,
    min(s.power_usage) AS power_usage_min, max(s.power_usage) AS power_usage_max
          FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
        ) r
        LEFT JOIN LATERAL (
          SELECT s.gpu_utilization, s.memory_utilization, s.temperature, s.power_usage
          FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
          ORDER BY s.sampled_at DESC
          LIMIT 1
        ) l ON true
        WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;
        INSERT INTO metric_aggregates AS a (organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST})
        SELECT organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST} FROM (
        WITH grouped AS (
          SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
                 min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
                 max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
                 sum(sign * gpu_utilization::numeric) AS gpu_utilization_sum,
                 min(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_min,
                 max(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_max,
    sum(sign * memory_utilization::numeric) AS memory_utilization_sum,
                 min(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_min,
                 max(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_max,
    sum(sign * temperature::numeric) AS temperature_sum,
                 min(temperature) FILTER (WHERE sign > 0) AS temperature_min,
                 max(temperature) FILTER (WHERE sign > 0) AS temperature_max,
    sum(sign * power_usage::numeric) AS power_usage_sum,
                 min(power_usage) FILTER (WHERE sign > 0) AS power_usage_min,
                 max(power_usage) FILTER (WHERE sign > 0) AS power_usage_max
          FROM (SELECT -1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM old_rows) AS signed
          GROUP BY organization_id, workload_id
        ),
        latest AS (
          SELECT s.organization_id, s.workload_id, s.gpu_utilization AS gpu_utilization_latest, s.memory_utilization AS memory_utilization_latest, s.temperature AS temperature_latest, s.power_usage AS power_usage_latest
          FROM (SELECT -1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM old_rows) AS s
          JOIN grouped g ON g.organization_id = s.organization_id AND g.workload_id = s.workload_id
                        AND g.latest_sampled_at = s.sampled_at
          WHERE s.sign > 0
        ),
        ${energyDeltasSql(DELETED_ROW_CHANGES, false)}
        ${ROW_SUMMARY_SQL}) AS summary

        ON CONFLICT (organization_id, workload_id) DO UPDATE SET
          sample_count = a.sample_count + excluded.sample_count,
          first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
          latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
          gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum,
          gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min),
          gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
          gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
    memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum,
          memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min),
          memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
          memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
    temperature_sum = a.temperature_sum + excluded.temperature_sum,
          temperature_min = least(a.temperature_min, excluded.temperature_min),
          temperature_max = greatest(a.temperature_max, excluded.temperature_max),
          temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
    power_usage_sum = a.power_usage_sum + excluded.power_usage_sum,
          power_usage_min = least(a.power_usage_min, excluded.power_usage_min),
          power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
          power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END,
          ${ENERGY_CONFLICT_SET};
        DELETE FROM metric_aggregates a
        USING (SELECT DISTINCT organization_id, workload_id FROM old_rows) o
        WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;
          RETURN NULL;
        END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
        BEGIN
          ${SAMPLE_INSERT_DONE_SQL};
          IF gpucap_sealing() THEN
            RETURN NULL;
          END IF;

        INSERT INTO metric_aggregates AS a (organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST})
        SELECT organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST} FROM (
        WITH grouped AS (
          SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
                 min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
                 max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
                 sum(sign * gpu_utilization::numeric) AS gpu_utilization_sum,
                 min(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_min,
                 max(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_max,
    sum(sign * memory_utilization::numeric) AS memory_utilization_sum,
                 min(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_min,
                 max(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_max,
    sum(sign * temperature::numeric) AS temperature_sum,
                 min(temperature) FILTER (WHERE sign > 0) AS temperature_min,
                 max(temperature) FILTER (WHERE sign > 0) AS temperature_max,
    sum(sign * power_usage::numeric) AS power_usage_sum,
                 min(power_usage) FILTER (WHERE sign > 0) AS power_usage_min,
                 max(power_usage) FILTER (WHERE sign > 0) AS power_usage_max
          FROM (SELECT 1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM new_rows) AS signed
          GROUP BY organization_id, workload_id
        ),
        latest AS (
          SELECT s.organization_id, s.workload_id, s.gpu_utilization AS gpu_utilization_latest, s.memory_utilization AS memory_utilization_latest, s.temperature AS temperature_latest, s.power_usage AS power_usage_latest
          FROM (SELECT 1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM new_rows) AS s
          JOIN grouped g ON g.organization_id = s.organization_id AND g.workload_id = s.workload_id
                        AND g.latest_sampled_at = s.sampled_at
          WHERE s.sign > 0
        ),
        ${energyDeltasSql(INSERTED_ROW_CHANGES, false)}
        ${ROW_SUMMARY_SQL}) AS summary

        ON CONFLICT (organization_id, workload_id) DO UPDATE SET
          sample_count = a.sample_count + excluded.sample_count,
          first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
          latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
          gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum,
          gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min),
          gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
          gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
    memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum,
          memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min),
          memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
          memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
    temperature_sum = a.temperature_sum + excluded.temperature_sum,
          temperature_min = least(a.temperature_min, excluded.temperature_min),
          temperature_max = greatest(a.temperature_max, excluded.temperature_max),
          temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
    power_usage_sum = a.power_usage_sum + excluded.power_usage_sum,
          power_usage_min = least(a.power_usage_min, excluded.power_usage_min),
          power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
          power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END,
          ${ENERGY_CONFLICT_SET};
          DELETE FROM ${PENDING_SAMPLE_CHANGES};
          RETURN NULL;
        END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM metric_aggregates;
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_update() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
        DECLARE
          upserting boolean := ${SAMPLE_INSERT_RUNNING_SQL};
        BEGIN
          IF gpucap_sealing() THEN
            RETURN NULL;
          END IF;
          IF upserting THEN
            ${pendSampleChangesSql(UPDATED_ROW_CHANGES)};
          END IF;

        WITH touched AS (
          SELECT DISTINCT o.organization_id, o.workload_id
          FROM old_rows o
          JOIN metric_aggregates a USING (organization_id, workload_id)
          WHERE o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
             OR o.gpu_utilization IN (a.gpu_utilization_min, a.gpu_utilization_max)
             OR o.memory_utilization IN (a.memory_utilization_min, a.memory_utilization_max)
             OR o.temperature IN (a.temperature_min, a.temperature_max)
             OR o.power_usage IN (a.power_usage_min, a.power_usage_max)
        )
        UPDATE metric_aggregates a
        SET first_sampled_at = r.first_sampled_at,
            latest_sampled_at = r.latest_sampled_at,
            gpu_utilization_min = r.gpu_utilization_min, gpu_utilization_max = r.gpu_utilization_max, gpu_utilization_latest = l.gpu_utilization,
    memory_utilization_min = r.memory_utilization_min, memory_utilization_max = r.memory_utilization_max, memory_utilization_latest = l.memory_utilization,
    temperature_min = r.temperature_min, temperature_max = r.temperature_max, temperature_latest = l.temperature,
    power_usage_min = r.power_usage_min, power_usage_max = r.power_usage_max, power_usage_latest = l.power_usage
        FROM touched t
        CROSS JOIN LATERAL (
          SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
                 min(s.gpu_utilization) AS gpu_utilization_min, max(s.gpu_utilization) AS gpu_utilization_max,
    min(s.memory_utilization) AS memory_utilization_min, max(s.memory_utilization) AS memory_utilization_max,
    min(s.temperature) AS temperature_min, max(s.temperature) AS temperature_max,
    min(s.power_usage) AS power_usage_min, max(s.power_usage) AS power_usage_max
          FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
        ) r
        LEFT JOIN LATERAL (
          SELECT s.gpu_utilization, s.memory_utilization, s.temperature, s.power_usage
          FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
          ORDER BY s.sampled_at DESC
          LIMIT 1
        ) l ON true
        WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;
        INSERT INTO metric_aggregates AS a (organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST})
        SELECT organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at,
      gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, memory_utilization_sum, memory_utilization_min, memory_utilization_max, temperature_sum, temperature_min, temperature_max, power_usage_sum, power_usage_min, power_usage_max, gpu_utilization_latest, memory_utilization_latest, temperature_latest, power_usage_latest, ${ENERGY_COLUMN_LIST} FROM (
        WITH grouped AS (
          SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
                 min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
                 max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
                 sum(sign * gpu_utilization::numeric) AS gpu_utilization_sum,
                 min(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_min,
                 max(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_max,
    sum(sign * memory_utilization::numeric) AS memory_utilization_sum,
                 min(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_min,
                 max(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_max,
    sum(sign * temperature::numeric) AS temperature_sum,
                 min(temperature) FILTER (WHERE sign > 0) AS temperature_min,
                 max(temperature) FILTER (WHERE sign > 0) AS temperature_max,
    sum(sign * power_usage::numeric) AS power_usage_sum,
                 min(power_usage) FILTER (WHERE sign > 0) AS power_usage_min,
                 max(power_usage) FILTER (WHERE sign > 0) AS power_usage_max
          FROM (SELECT 1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM old_rows) AS signed
          GROUP BY organization_id, workload_id
        ),
        latest AS (
          SELECT s.organization_id, s.workload_id, s.gpu_utilization AS gpu_utilization_latest, s.memory_utilization AS memory_utilization_latest, s.temperature AS temperature_latest, s.power_usage AS power_usage_latest
          FROM (SELECT 1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM new_rows UNION ALL SELECT -1 AS sign, organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM old_rows) AS s
          JOIN grouped g ON g.organization_id = s.organization_id AND g.workload_id = s.workload_id
                        AND g.latest_sampled_at = s.sampled_at
          WHERE s.sign > 0
        ),
        ${energyDeltasSql(unlessUpserting(UPDATED_ROW_CHANGES))}
        ${ROW_SUMMARY_SQL}) AS summary

        ON CONFLICT (organization_id, workload_id) DO UPDATE SET
          sample_count = a.sample_count + excluded.sample_count,
          first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
          latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
          gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum,
          gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min),
          gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
          gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
    memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum,
          memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min),
          memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
          memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
    temperature_sum = a.temperature_sum + excluded.temperature_sum,
          temperature_min = least(a.temperature_min, excluded.temperature_min),
          temperature_max = greatest(a.temperature_max, excluded.temperature_max),
          temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
    power_usage_sum = a.power_usage_sum + excluded.power_usage_sum,
          power_usage_min = least(a.power_usage_min, excluded.power_usage_min),
          power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
          power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                             THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END,
          ${ENERGY_CONFLICT_SET};
        DELETE FROM metric_aggregates a
        USING (SELECT DISTINCT organization_id, workload_id FROM old_rows) o
        WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;
          RETURN NULL;
        END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_metric_aggregates_workload() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT w.initiative_id, w.status, CASE WHEN w.status <> 'running'
    THEN (w.gpu_share_units * greatest(0, floor(date_part('epoch', w.completed_at - w.started_at))))::bigint END
      INTO NEW.initiative_id, NEW.status, NEW.settled_gpu_seconds
      FROM workloads w
      WHERE w.organization_id = NEW.organization_id AND w.workload_id = NEW.workload_id;
      RETURN NEW;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_days_apply_changes() RETURNS void LANGUAGE plpgsql SET jit TO 'off' AS $$
        DECLARE
          upserting boolean := ${SAMPLE_INSERT_RUNNING_SQL};
        BEGIN
          IF upserting THEN
            ${pendSampleChangesSql(CHANGED_DAY_SAMPLES)};
          END IF;
          WITH touched AS (
            SELECT DISTINCT o.organization_id, o.workload_id
            FROM changed_samples o JOIN metric_aggregates a USING (organization_id, workload_id)
            WHERE o.sign < 0 AND (o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
               OR o.gpu_utilization IN (a.gpu_utilization_min, a.gpu_utilization_max)
               OR o.memory_utilization IN (a.memory_utilization_min, a.memory_utilization_max)
               OR o.temperature IN (a.temperature_min, a.temperature_max)
               OR o.power_usage IN (a.power_usage_min, a.power_usage_max))
          )
          UPDATE metric_aggregates a
          SET first_sampled_at = r.first_sampled_at, latest_sampled_at = r.latest_sampled_at,
              gpu_utilization_min = r.gpu_utilization_min, gpu_utilization_max = r.gpu_utilization_max, gpu_utilization_latest = l.gpu_utilization,
              memory_utilization_min = r.memory_utilization_min, memory_utilization_max = r.memory_utilization_max, memory_utilization_latest = l.memory_utilization,
              temperature_min = r.temperature_min, temperature_max = r.temperature_max, temperature_latest = l.temperature,
              power_usage_min = r.power_usage_min, power_usage_max = r.power_usage_max, power_usage_latest = l.power_usage
          FROM touched t
          CROSS JOIN LATERAL (
            SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
                   min(s.gpu_utilization) AS gpu_utilization_min, max(s.gpu_utilization) AS gpu_utilization_max,
                   min(s.memory_utilization) AS memory_utilization_min, max(s.memory_utilization) AS memory_utilization_max,
                   min(s.temperature) AS temperature_min, max(s.temperature) AS temperature_max,
                   min(s.power_usage) AS power_usage_min, max(s.power_usage) AS power_usage_max
            FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
          ) r
          LEFT JOIN LATERAL (
            SELECT s.* FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
            ORDER BY s.sampled_at DESC LIMIT 1
          ) l ON true
          WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;

          WITH ${energyDeltasSql(unlessUpserting(CHANGED_DAY_SAMPLES))}
          INSERT INTO metric_aggregates AS a (organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at, gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, gpu_utilization_latest, memory_utilization_sum, memory_utilization_min, memory_utilization_max, memory_utilization_latest, temperature_sum, temperature_min, temperature_max, temperature_latest, power_usage_sum, power_usage_min, power_usage_max, power_usage_latest, ${ENERGY_COLUMN_LIST})
          SELECT g.organization_id, g.workload_id, g.sample_count, g.first_sampled_at, g.latest_sampled_at,
                 g.gpu_utilization_sum, g.gpu_utilization_min, g.gpu_utilization_max, l.gpu_utilization,
                 g.memory_utilization_sum, g.memory_utilization_min, g.memory_utilization_max, l.memory_utilization,
                 g.temperature_sum, g.temperature_min, g.temperature_max, l.temperature,
                 g.power_usage_sum, g.power_usage_min, g.power_usage_max, l.power_usage,
                 ${ENERGY_COLUMNS.map((column) => `coalesce(e.${column}, 0)`).join(', ')}
          FROM (
            SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
                   min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
                   max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
                   sum(sign * gpu_utilization::numeric) AS gpu_utilization_sum, min(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_min, max(gpu_utilization) FILTER (WHERE sign > 0) AS gpu_utilization_max,
                   sum(sign * memory_utilization::numeric) AS memory_utilization_sum, min(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_min, max(memory_utilization) FILTER (WHERE sign > 0) AS memory_utilization_max,
                   sum(sign * temperature::numeric) AS temperature_sum, min(temperature) FILTER (WHERE sign > 0) AS temperature_min, max(temperature) FILTER (WHERE sign > 0) AS temperature_max,
                   sum(sign * power_usage::numeric) AS power_usage_sum, min(power_usage) FILTER (WHERE sign > 0) AS power_usage_min, max(power_usage) FILTER (WHERE sign > 0) AS power_usage_max
            FROM changed_samples GROUP BY organization_id, workload_id
          ) g
          LEFT JOIN changed_samples l ON l.organization_id = g.organization_id AND l.workload_id = g.workload_id
            AND l.sampled_at = g.latest_sampled_at AND l.sign > 0
          LEFT JOIN energy e ON e.organization_id = g.organization_id AND e.workload_id = g.workload_id

    ON CONFLICT (organization_id, workload_id) DO UPDATE SET
      sample_count = a.sample_count + excluded.sample_count,
      first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
      latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
      gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum,
      gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min),
      gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
      gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
      memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum,
      memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min),
      memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
      memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
      temperature_sum = a.temperature_sum + excluded.temperature_sum,
      temperature_min = least(a.temperature_min, excluded.temperature_min),
      temperature_max = greatest(a.temperature_max, excluded.temperature_max),
      temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
      power_usage_sum = a.power_usage_sum + excluded.power_usage_sum,
      power_usage_min = least(a.power_usage_min, excluded.power_usage_min),
      power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
      power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END,
          ${ENERGY_CONFLICT_SET};

          DELETE FROM metric_aggregates a
          USING (SELECT DISTINCT organization_id, workload_id FROM changed_samples WHERE sign < 0) o
          WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;
        END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_days_changed() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      IF gpucap_sealing() THEN
        RETURN NULL;
      END IF;
      CREATE TEMP TABLE IF NOT EXISTS changed_samples (sign int, organization_id text, workload_id text,
        sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8,
        power_usage float8) ON COMMIT DELETE ROWS;
      TRUNCATE changed_samples;
      IF TG_OP = 'DELETE' THEN
        INSERT INTO changed_samples
        SELECT -1, o.organization_id, o.workload_id, s.* FROM old_rows o
        CROSS JOIN LATERAL gpucap_unpack_samples(o.day_start, o.step_us, o.gpu_utilization, o.memory_utilization, o.temperature, o.power_usage) s;
      ELSE
        INSERT INTO changed_samples
        WITH pairs AS (
          SELECT n.*, cardinality(o.step_us) AS kept
          FROM new_rows n JOIN old_rows o USING (organization_id, workload_id, day_start)
          WHERE cardinality(o.step_us) <= cardinality(n.step_us)
            AND n.step_us[:cardinality(o.step_us)] = o.step_us
            AND n.gpu_utilization[:cardinality(o.step_us)] = o.gpu_utilization
            AND n.memory_utilization[:cardinality(o.step_us)] = o.memory_utilization
            AND n.temperature[:cardinality(o.step_us)] = o.temperature
            AND n.power_usage[:cardinality(o.step_us)] = o.power_usage
        ),
        appended AS (
          SELECT p.organization_id, p.workload_id,
                 p.day_start + sum(u.step) OVER (PARTITION BY p.organization_id, p.workload_id, p.day_start ORDER BY u.i) * interval '1 microsecond' AS sampled_at,
                 u.g, u.m, u.t, u.p, u.i, p.kept
          FROM pairs p
          CROSS JOIN LATERAL unnest(p.step_us, p.gpu_utilization, p.memory_utilization, p.temperature, p.power_usage) WITH ORDINALITY AS u(step, g, m, t, p, i)
        ),
        other_new AS (
          SELECT n.* FROM new_rows n
          WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE (p.organization_id, p.workload_id, p.day_start) = (n.organization_id, n.workload_id, n.day_start))
        ),
        other_old AS (
          SELECT o.* FROM old_rows o
          WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE (p.organization_id, p.workload_id, p.day_start) = (o.organization_id, o.workload_id, o.day_start))
        ),
        new_samples AS (
          SELECT n.organization_id, n.workload_id, s.* FROM other_new n
          CROSS JOIN LATERAL gpucap_unpack_samples(n.day_start, n.step_us, n.gpu_utilization, n.memory_utilization, n.temperature, n.power_usage) s
        ),
        old_samples AS (
          SELECT o.organization_id, o.workload_id, s.* FROM other_old o
          CROSS JOIN LATERAL gpucap_unpack_samples(o.day_start, o.step_us, o.gpu_utilization, o.memory_utilization, o.temperature, o.power_usage) s
        )
        SELECT 1, organization_id, workload_id, sampled_at, g, m, t, p FROM appended WHERE i > kept
        UNION ALL SELECT 1, * FROM (SELECT * FROM new_samples EXCEPT ALL SELECT * FROM old_samples) a
        UNION ALL SELECT -1, * FROM (SELECT * FROM old_samples EXCEPT ALL SELECT * FROM new_samples) r;
      END IF;
      PERFORM gpucap_sample_days_apply_changes();
      RETURN NULL;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_days_inserted() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
      BEGIN
        ${SAMPLE_INSERT_DONE_SQL};
        IF gpucap_sealing() THEN
          RETURN NULL;
        END IF;
        WITH energy_targets AS MATERIALIZED (
          -- Per workload: its cap and cluster, its aggregate before the statement, and whether the new
          -- blocks only append to it: then they are settled from their arrays with the periods they need.
          SELECT s.organization_id, s.workload_id, w.cluster_id, o.max_sample_gap_seconds AS cap,
                 p.latest_sampled_at AS previous_at, p.power_usage_latest AS previous_power,
                 (p.latest_sampled_at IS NULL OR s.low > p.latest_sampled_at)
                   AND NOT EXISTS (SELECT 1 FROM ${PENDING_SAMPLE_CHANGES} x
                                   WHERE x.organization_id = s.organization_id AND x.workload_id = s.workload_id) AS appended,
                 c.froms, c.tos, c.intensities
          FROM (SELECT organization_id, workload_id, min(day_start + step_us[1] * interval '1 microsecond') AS low,
                       max(day_start) + interval '1 day' AS high
                FROM new_rows GROUP BY organization_id, workload_id) AS s
          JOIN organizations o ON o.organization_id = s.organization_id
          LEFT JOIN workloads w ON w.organization_id = s.organization_id AND w.workload_id = s.workload_id
          LEFT JOIN metric_aggregates p ON p.organization_id = s.organization_id AND p.workload_id = s.workload_id
          CROSS JOIN LATERAL gpucap_carbon_periods(s.organization_id, w.cluster_id, least(p.latest_sampled_at, s.low), s.high) c
        ),
        blocks AS (
          SELECT b.*, d.day_start, d.power_usage[cardinality(d.step_us)] AS last_power, t.appended, t.cap, t.previous_at,
                 t.previous_power, t.froms, t.tos, t.intensities, e.microjoules,
                 CASE WHEN t.froms IS NULL THEN 0 WHEN whole.intensity IS NOT NULL THEN e.microjoules * whole.intensity
                      ELSE split.carbon END AS carbon,
                 CASE WHEN t.froms IS NULL THEN e.microjoules WHEN whole.intensity IS NOT NULL THEN 0
                      ELSE split.uncovered END AS uncovered
          FROM new_rows d
          JOIN energy_targets t ON t.organization_id = d.organization_id AND t.workload_id = d.workload_id
          CROSS JOIN LATERAL (
            SELECT d.organization_id, d.workload_id, count(*) AS n,
                   d.day_start + d.step_us[1] * interval '1 microsecond' AS first_at,
                   d.day_start + sum(u.st) * interval '1 microsecond' AS last_at,
                   round(coalesce(sum(u.gpu_utilization_cents), 0) * 0.01 + coalesce(sum(u.gpu_utilization::numeric) FILTER (WHERE u.gpu_utilization_cents IS NULL), 0),
                    greatest(coalesce(max(CASE WHEN u.gpu_utilization_cents % 100 = 0 THEN 0 WHEN u.gpu_utilization_cents % 10 = 0 THEN 1 WHEN u.gpu_utilization_cents IS NOT NULL THEN 2 END), 0), coalesce(scale(sum(u.gpu_utilization::numeric) FILTER (WHERE u.gpu_utilization_cents IS NULL)), 0))) AS gpu_utilization_sum, min(u.gpu_utilization) AS gpu_utilization_min, max(u.gpu_utilization) AS gpu_utilization_max, d.gpu_utilization[cardinality(d.step_us)] AS gpu_utilization_last,
                   round(coalesce(sum(u.memory_utilization_cents), 0) * 0.01 + coalesce(sum(u.memory_utilization::numeric) FILTER (WHERE u.memory_utilization_cents IS NULL), 0),
                    greatest(coalesce(max(CASE WHEN u.memory_utilization_cents % 100 = 0 THEN 0 WHEN u.memory_utilization_cents % 10 = 0 THEN 1 WHEN u.memory_utilization_cents IS NOT NULL THEN 2 END), 0), coalesce(scale(sum(u.memory_utilization::numeric) FILTER (WHERE u.memory_utilization_cents IS NULL)), 0))) AS memory_utilization_sum, min(u.memory_utilization) AS memory_utilization_min, max(u.memory_utilization) AS memory_utilization_max, d.memory_utilization[cardinality(d.step_us)] AS memory_utilization_last,
                   round(coalesce(sum(u.temperature_cents), 0) * 0.01 + coalesce(sum(u.temperature::numeric) FILTER (WHERE u.temperature_cents IS NULL), 0),
                    greatest(coalesce(max(CASE WHEN u.temperature_cents % 100 = 0 THEN 0 WHEN u.temperature_cents % 10 = 0 THEN 1 WHEN u.temperature_cents IS NOT NULL THEN 2 END), 0), coalesce(scale(sum(u.temperature::numeric) FILTER (WHERE u.temperature_cents IS NULL)), 0))) AS temperature_sum, min(u.temperature) AS temperature_min, max(u.temperature) AS temperature_max, d.temperature[cardinality(d.step_us)] AS temperature_last,
                   round(coalesce(sum(u.power_usage_cents), 0) * 0.01 + coalesce(sum(u.power_usage::numeric) FILTER (WHERE u.power_usage_cents IS NULL), 0),
                    greatest(coalesce(max(CASE WHEN u.power_usage_cents % 100 = 0 THEN 0 WHEN u.power_usage_cents % 10 = 0 THEN 1 WHEN u.power_usage_cents IS NOT NULL THEN 2 END), 0), coalesce(scale(sum(u.power_usage::numeric) FILTER (WHERE u.power_usage_cents IS NULL)), 0))) AS power_usage_sum, min(u.power_usage) AS power_usage_min, max(u.power_usage) AS power_usage_max, d.power_usage[cardinality(d.step_us)] AS power_usage_last
            -- OFFSET 0 keeps the subquery: each reading's cents are computed once, not per use.
            FROM (
              SELECT u.*, CASE WHEN abs(u.gpu_utilization) < 1e13 AND round(u.gpu_utilization * 100) / 100 = u.gpu_utilization THEN round(u.gpu_utilization * 100)::bigint END AS gpu_utilization_cents, CASE WHEN abs(u.memory_utilization) < 1e13 AND round(u.memory_utilization * 100) / 100 = u.memory_utilization THEN round(u.memory_utilization * 100)::bigint END AS memory_utilization_cents, CASE WHEN abs(u.temperature) < 1e13 AND round(u.temperature * 100) / 100 = u.temperature THEN round(u.temperature * 100)::bigint END AS temperature_cents, CASE WHEN abs(u.power_usage) < 1e13 AND round(u.power_usage * 100) / 100 = u.power_usage THEN round(u.power_usage * 100)::bigint END AS power_usage_cents
              FROM unnest(d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage)
                AS u(st, gpu_utilization, memory_utilization, temperature, power_usage)
              OFFSET 0
            ) u
          ) b
          -- Each reading of an appended block but its last holds for the step to the next.
          CROSS JOIN LATERAL (
            SELECT ${heldEnergySql('u')} AS microjoules
            FROM (SELECT u.p, least(u.st, t.cap * 1000000::bigint) AS held, ${WATT_CENTS_SQL} AS cents
                  FROM unnest(d.power_usage[:cardinality(d.step_us) - 1], d.step_us[2:]) AS u(p, st)
                  OFFSET 0) AS u
            WHERE t.appended
          ) e
          -- One period covering every held part of the block: its carbon at that intensity.
          CROSS JOIN LATERAL (SELECT width_bucket(b.first_at, t.froms) AS period) k
          CROSS JOIN LATERAL (
            SELECT CASE WHEN k.period > 0 AND (t.tos[k.period] IS NULL OR t.tos[k.period] >= b.last_at)
                        THEN t.intensities[k.period] END AS intensity
          ) whole
          -- Otherwise each part at the intensity of the period covering its reading's time, summed per period.
          CROSS JOIN LATERAL (
            SELECT coalesce(sum(g.microjoules * t.intensities[g.period]) FILTER (WHERE g.covered), 0) AS carbon,
                   coalesce(sum(g.microjoules) FILTER (WHERE NOT g.covered), 0) AS uncovered
            FROM (
              SELECT x.period, x.covered, ${heldEnergySql('x')} AS microjoules
              FROM (
                SELECT u.p, least(u.next_step, t.cap * 1000000::bigint) AS held, ${WATT_CENTS_SQL} AS cents, k.period,
                       k.period > 0 AND (t.tos[k.period] IS NULL OR u.at < t.tos[k.period]) AS covered
                FROM (SELECT u.p, lead(u.st) OVER w AS next_step, d.day_start + sum(u.st) OVER w * interval '1 microsecond' AS at
                      FROM unnest(d.power_usage, d.step_us) WITH ORDINALITY AS u(p, st, i) WINDOW w AS (ORDER BY u.i)) AS u
                CROSS JOIN LATERAL (SELECT width_bucket(u.at, t.froms) AS period) k
                WHERE u.next_step IS NOT NULL
              ) AS x
              GROUP BY x.period, x.covered
            ) AS g
            WHERE t.appended AND t.froms IS NOT NULL AND whole.intensity IS NULL
          ) split
        ),
        sums AS (
          -- The first new block's reading before it is the aggregate's latest; the others' the block before.
          SELECT organization_id, workload_id, sum(n)::bigint AS sample_count, min(first_at) AS first_sampled_at,
                 max(last_at) AS latest_sampled_at,
                 sum(gpu_utilization_sum) AS gpu_utilization_sum, min(gpu_utilization_min) AS gpu_utilization_min, max(gpu_utilization_max) AS gpu_utilization_max, (array_agg(gpu_utilization_last ORDER BY last_at DESC))[1] AS gpu_utilization_latest,
                 sum(memory_utilization_sum) AS memory_utilization_sum, min(memory_utilization_min) AS memory_utilization_min, max(memory_utilization_max) AS memory_utilization_max, (array_agg(memory_utilization_last ORDER BY last_at DESC))[1] AS memory_utilization_latest,
                 sum(temperature_sum) AS temperature_sum, min(temperature_min) AS temperature_min, max(temperature_max) AS temperature_max, (array_agg(temperature_last ORDER BY last_at DESC))[1] AS temperature_latest,
                 sum(power_usage_sum) AS power_usage_sum, min(power_usage_min) AS power_usage_min, max(power_usage_max) AS power_usage_max, (array_agg(power_usage_last ORDER BY last_at DESC))[1] AS power_usage_latest,
                 CASE WHEN bool_and(appended) THEN sum(microjoules) + coalesce(sum(link_microjoules), 0) END AS energy_microjoules,
                 CASE WHEN bool_and(appended) THEN sum(carbon) + coalesce(sum(link_microjoules * link_intensity), 0) END
                   AS carbon_microjoule_grams_per_kwh,
                 CASE WHEN bool_and(appended)
                      THEN sum(uncovered) + coalesce(sum(link_microjoules) FILTER (WHERE link_intensity IS NULL), 0) END
                   AS uncovered_microjoules
          FROM (
            SELECT l.*, l.link_power::numeric * gpucap_held_microseconds(l.link_from, l.first_at, l.cap) AS link_microjoules,
                   gpucap_intensity_in(l.froms, l.tos, l.intensities, l.link_from) AS link_intensity
            FROM (SELECT blocks.*, lag(last_at, 1, previous_at) OVER w AS link_from, lag(last_power, 1, previous_power) OVER w AS link_power
                  FROM blocks WINDOW w AS (PARTITION BY organization_id, workload_id ORDER BY day_start)) AS l
          ) AS linked
          GROUP BY organization_id, workload_id
        ),
        -- Blocks written before or between stored readings, and what an upsert's UPDATE part left: re-settled.
        energy_general AS (
          SELECT g.organization_id, g.workload_id, r.*
          FROM (SELECT organization_id, workload_id, array_agg(sampled_at) AS times, array_agg(sign) AS signs,
                       array_agg(power_usage) AS powers
                FROM (SELECT 1 AS sign, d.organization_id, d.workload_id, u.sampled_at, u.power_usage
                      FROM new_rows d
                      JOIN energy_targets t ON t.organization_id = d.organization_id AND t.workload_id = d.workload_id
                      CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) u
                      WHERE NOT t.appended
                      UNION ALL
                      SELECT sign, organization_id, workload_id, sampled_at, power_usage FROM ${PENDING_SAMPLE_CHANGES}) AS c
                GROUP BY organization_id, workload_id) AS g
          JOIN organizations o ON o.organization_id = g.organization_id
          LEFT JOIN workloads w ON w.organization_id = g.organization_id AND w.workload_id = g.workload_id
          CROSS JOIN LATERAL gpucap_energy_resettle(g.organization_id, g.workload_id, w.cluster_id, o.max_sample_gap_seconds,
                                                    g.times, g.signs, g.powers) r
        )
        INSERT INTO metric_aggregates AS a (organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at, gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, gpu_utilization_latest, memory_utilization_sum, memory_utilization_min, memory_utilization_max, memory_utilization_latest, temperature_sum, temperature_min, temperature_max, temperature_latest, power_usage_sum, power_usage_min, power_usage_max, power_usage_latest, ${ENERGY_COLUMN_LIST})
        SELECT organization_id, workload_id, coalesce(s.sample_count, 0), s.first_sampled_at, s.latest_sampled_at,
               coalesce(s.gpu_utilization_sum, 0), s.gpu_utilization_min, s.gpu_utilization_max, s.gpu_utilization_latest,
               coalesce(s.memory_utilization_sum, 0), s.memory_utilization_min, s.memory_utilization_max, s.memory_utilization_latest,
               coalesce(s.temperature_sum, 0), s.temperature_min, s.temperature_max, s.temperature_latest,
               coalesce(s.power_usage_sum, 0), s.power_usage_min, s.power_usage_max, s.power_usage_latest,
               ${ENERGY_COLUMNS.map((column) => `coalesce(s.${column}, e.${column}, 0)`).join(', ')}
        FROM sums s FULL JOIN energy_general e USING (organization_id, workload_id)

    ON CONFLICT (organization_id, workload_id) DO UPDATE SET
      sample_count = a.sample_count + excluded.sample_count,
      first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
      latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
      gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum,
      gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min),
      gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
      gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
      memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum,
      memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min),
      memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
      memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
      temperature_sum = a.temperature_sum + excluded.temperature_sum,
      temperature_min = least(a.temperature_min, excluded.temperature_min),
      temperature_max = greatest(a.temperature_max, excluded.temperature_max),
      temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
      power_usage_sum = a.power_usage_sum + excluded.power_usage_sum,
      power_usage_min = least(a.power_usage_min, excluded.power_usage_min),
      power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
      power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                    THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END,
      ${ENERGY_CONFLICT_SET};
        DELETE FROM ${PENDING_SAMPLE_CHANGES};
        RETURN NULL;
      END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_steps(day_start timestamp with time zone, times timestamp with time zone[]) RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(round(date_part('epoch', u.t - u.p) * 1000000)::bigint)
    FROM unnest(times, array_prepend(day_start, times[:cardinality(times) - 1])) AS u(t, p)
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sampled_share(amount numeric, sample_count bigint) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN sample_count > 0 THEN amount ELSE 0 END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_unpack_samples(day_start timestamp with time zone, step_us bigint[], g double precision[], m double precision[], t double precision[], p double precision[]) RETURNS TABLE(sampled_at timestamp with time zone, gpu_utilization double precision, memory_utilization double precision, temperature double precision, power_usage double precision) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT day_start + sum(u.step::float8) OVER (ORDER BY u.i ROWS UNBOUNDED PRECEDING) * interval '1 microsecond', u.g, u.m, u.t, u.p
    FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, g, m, t, p, i)
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_samples(org text, wl text, low timestamp with time zone, high timestamp with time zone) RETURNS TABLE(sampled_at timestamp with time zone, gpu_utilization double precision, memory_utilization double precision, temperature double precision, power_usage double precision) LANGUAGE sql STABLE AS $$
    SELECT u.* FROM (
      SELECT s.sampled_at, s.gpu_utilization, s.memory_utilization, s.temperature, s.power_usage
      FROM metric_sample_days d
      CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s
      WHERE d.organization_id = org AND d.workload_id = wl
        AND d.day_start >= date_trunc('day', low, 'UTC') AND d.day_start <= high
        AND s.sampled_at >= low AND s.sampled_at <= high
      UNION ALL
      SELECT m.sampled_at, m.gpu_utilization, m.memory_utilization, m.temperature, m.power_usage
      FROM metric_samples m
      WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at >= low AND m.sampled_at <= high
    ) u
    ORDER BY u.sampled_at
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_idle_rollups_delete AFTER DELETE ON metric_aggregates REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_idle_rollups_insert AFTER INSERT ON metric_aggregates REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_idle_rollups_truncate AFTER TRUNCATE ON metric_aggregates FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_idle_rollups_update AFTER UPDATE ON metric_aggregates REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_idle_rollups_update()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_aggregates_workload BEFORE INSERT ON metric_aggregates FOR EACH ROW EXECUTE FUNCTION gpucap_metric_aggregates_workload()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_aggregates_delete AFTER DELETE ON metric_sample_days REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_changed()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_aggregates_insert AFTER INSERT ON metric_sample_days REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_inserted()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_aggregates_update AFTER UPDATE ON metric_sample_days REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_changed()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_aggregates_delete AFTER DELETE ON metric_samples REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_aggregates_insert AFTER INSERT ON metric_samples REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_aggregates_truncate AFTER TRUNCATE ON metric_samples FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_aggregates_update AFTER UPDATE ON metric_samples REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_metric_aggregates_update()',
  ),
];
