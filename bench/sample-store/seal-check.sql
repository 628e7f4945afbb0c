-- The open-day-in-rows shape, checked in a gpucap database after demo-data, prototype.sql loaded in the
-- schema `packed`, a copy of the rows in packed.expected and of metric_aggregates in packed.agg_before,
-- and seal-batch.sql run over every (weekly partition, bucket 0-15) with a watermark:
--   psql -v part=metric_samples_wYYYY_WW -v bucket=N -v watermark='YYYY-MM-DD 00:00+00' -f seal-batch.sql
SET search_path = packed, public;
CREATE OR REPLACE VIEW packed.all_readings AS
  SELECT organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM packed.packed_samples_v
  UNION ALL SELECT organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage FROM public.metric_samples;
SELECT 'readings (missing, extra)' AS check,
  (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM all_readings) d) AS a,
  (SELECT count(*) FROM (SELECT * FROM all_readings EXCEPT ALL SELECT * FROM expected) d) AS b;
SELECT 'metric_aggregates changed rows' AS check, (SELECT count(*) FROM (SELECT * FROM public.metric_aggregates EXCEPT SELECT * FROM agg_before) d) AS a, (SELECT count(*) FROM (SELECT * FROM agg_before EXCEPT SELECT * FROM public.metric_aggregates) d) AS b;
SELECT 'aggregates vs recomputed from both stores' AS check, count(*) AS a, 0 AS b FROM (
  SELECT organization_id, workload_id, count(*)::bigint, min(sampled_at), max(sampled_at), sum(gpu_utilization::numeric), min(gpu_utilization), max(gpu_utilization), (array_agg(gpu_utilization ORDER BY sampled_at DESC))[1]
  FROM all_readings GROUP BY 1, 2
  EXCEPT SELECT organization_id, workload_id, sample_count, first_sampled_at, latest_sampled_at, gpu_utilization_sum, gpu_utilization_min, gpu_utilization_max, gpu_utilization_latest FROM public.metric_aggregates) d;
-- a window across the watermark, blocks first then rows: same figures as the rows had
SELECT workload_id AS wl FROM expected WHERE sampled_at >= '2026-11-26' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1 \gset
SELECT 'window across the watermark' AS check, count(*), avg(gpu_utilization), percentile_cont(0.95) WITHIN GROUP (ORDER BY gpu_utilization) FROM expected WHERE organization_id = 'org-demo' AND workload_id = :'wl' AND sampled_at BETWEEN '2026-11-24 03:00' AND '2026-11-26 12:00';
SELECT 'window across the watermark' AS check, count(*), avg(gpu_utilization), percentile_cont(0.95) WITHIN GROUP (ORDER BY gpu_utilization) FROM (
  SELECT gpu_utilization FROM gpucap_samples_between('org-demo', :'wl', '2026-11-24 03:00', '2026-11-26 12:00')
  UNION ALL SELECT gpu_utilization FROM public.metric_samples WHERE organization_id = 'org-demo' AND workload_id = :'wl' AND sampled_at BETWEEN '2026-11-24 03:00' AND '2026-11-26 12:00') x;
SELECT pg_size_pretty(pg_total_relation_size('packed.metric_sample_days')) AS packed_size, round(pg_total_relation_size('packed.metric_sample_days')::numeric / 890684, 1) AS bytes_per_sealed_sample;
