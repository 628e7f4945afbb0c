-- Every write shape against the packed prototype, checked against the same changes applied to rows:
-- first load, appends into stored days, an unchanged re-send (no block rewritten), a re-send with other
-- readings, readings removed (extremes and latest recomputed), whole days deleted.
--   psql -d <scratch db with old_samples(organization_id, workload_id, sampled_at, gpu_utilization,
--        memory_utilization, temperature, power_usage) and prototype.sql loaded> -f check.sql   (from this folder)
\set ON_ERROR_STOP 1
\timing on
TRUNCATE metric_sample_days, packed_aggregates;
DROP TABLE IF EXISTS expected; CREATE TABLE expected AS SELECT * FROM old_samples;
BEGIN; CREATE TEMP TABLE stg ON COMMIT DROP AS SELECT * FROM old_samples WHERE sampled_at < '2026-11-20 12:00';
\i merge.sql
COMMIT;
BEGIN; CREATE TEMP TABLE stg ON COMMIT DROP AS SELECT * FROM old_samples WHERE sampled_at >= '2026-11-20 12:00' AND sampled_at < '2026-11-24 06:17';
\i merge.sql
COMMIT;
BEGIN; CREATE TEMP TABLE stg ON COMMIT DROP AS SELECT * FROM old_samples WHERE sampled_at >= '2026-11-24 06:17';
\i merge.sql
COMMIT;
BEGIN; CREATE TEMP TABLE stg ON COMMIT DROP AS SELECT * FROM old_samples WHERE hashtext(workload_id || sampled_at::text) % 100 = 0;
\i merge.sql
COMMIT;
BEGIN; CREATE TEMP TABLE stg ON COMMIT DROP AS SELECT organization_id, workload_id, sampled_at, 100 - gpu_utilization AS gpu_utilization, memory_utilization, temperature, power_usage + 1 AS power_usage FROM old_samples WHERE hashtext(workload_id || sampled_at::text) % 100 = 1;
UPDATE expected e SET gpu_utilization = 100 - e.gpu_utilization, power_usage = e.power_usage + 1 WHERE hashtext(workload_id || sampled_at::text) % 100 = 1;
\i merge.sql
COMMIT;
-- remove the last 6 hours of readings of the 20 first workloads (block rewrites that drop extremes and latest)
SELECT array_agg(w) AS victims FROM (SELECT DISTINCT workload_id w FROM old_samples ORDER BY 1 LIMIT 20) v \gset
DELETE FROM expected e USING (SELECT workload_id, max(sampled_at) - interval '6 hours' AS cut FROM expected WHERE workload_id = ANY (:'victims') GROUP BY 1) c
 WHERE e.workload_id = c.workload_id AND e.sampled_at > c.cut;
WITH kept AS (SELECT * FROM expected WHERE workload_id = ANY (:'victims')),
rebuilt AS (
  SELECT organization_id, workload_id, day_start, array_agg(step ORDER BY sampled_at) st, array_agg(gpu_utilization ORDER BY sampled_at) g, array_agg(memory_utilization ORDER BY sampled_at) m, array_agg(temperature ORDER BY sampled_at) t, array_agg(power_usage ORDER BY sampled_at) p
  FROM (SELECT *, date_trunc('day', sampled_at, 'UTC') day_start, (extract(epoch FROM sampled_at - coalesce(lag(sampled_at) OVER w, date_trunc('day', sampled_at, 'UTC'))) * 1000000)::bigint step FROM kept WINDOW w AS (PARTITION BY workload_id, date_trunc('day', sampled_at, 'UTC') ORDER BY sampled_at)) x
  GROUP BY 1, 2, 3)
UPDATE metric_sample_days d SET step_us = r.st, gpu_utilization = r.g, memory_utilization = r.m, temperature = r.t, power_usage = r.p
FROM rebuilt r WHERE (d.organization_id, d.workload_id, d.day_start) = (r.organization_id, r.workload_id, r.day_start) AND d.step_us IS DISTINCT FROM r.st;
DELETE FROM metric_sample_days d WHERE d.workload_id = ANY (:'victims') AND NOT EXISTS (SELECT 1 FROM expected e WHERE e.workload_id = d.workload_id AND date_trunc('day', e.sampled_at, 'UTC') = d.day_start);
-- delete whole blocks of 5 other workloads
DELETE FROM expected e WHERE workload_id IN (SELECT DISTINCT workload_id FROM old_samples ORDER BY 1 DESC LIMIT 5);
DELETE FROM metric_sample_days WHERE workload_id IN (SELECT DISTINCT workload_id FROM old_samples ORDER BY 1 DESC LIMIT 5);
\timing off
SELECT 'stored vs expected (missing, extra)' AS check,
  (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM packed_samples_v) d) AS missing,
  (SELECT count(*) FROM (SELECT * FROM packed_samples_v EXCEPT ALL SELECT * FROM expected) d) AS extra;
SELECT 'aggregates vs recomputed from raw readings (mismatches)' AS check, count(*) FROM (
  (SELECT e.organization_id, e.workload_id, count(*)::bigint, min(e.sampled_at), max(e.sampled_at),
     sum(gpu_utilization::numeric), min(gpu_utilization), max(gpu_utilization), (array_agg(gpu_utilization ORDER BY sampled_at DESC))[1],
     sum(memory_utilization::numeric), min(memory_utilization), max(memory_utilization), (array_agg(memory_utilization ORDER BY sampled_at DESC))[1],
     sum(temperature::numeric), min(temperature), max(temperature), (array_agg(temperature ORDER BY sampled_at DESC))[1],
     sum(power_usage::numeric), min(power_usage), max(power_usage), (array_agg(power_usage ORDER BY sampled_at DESC))[1]
   FROM expected e GROUP BY 1, 2
   EXCEPT SELECT * FROM packed_aggregates)
  UNION ALL
  (SELECT * FROM packed_aggregates EXCEPT
   SELECT e.organization_id, e.workload_id, count(*)::bigint, min(e.sampled_at), max(e.sampled_at),
     sum(gpu_utilization::numeric), min(gpu_utilization), max(gpu_utilization), (array_agg(gpu_utilization ORDER BY sampled_at DESC))[1],
     sum(memory_utilization::numeric), min(memory_utilization), max(memory_utilization), (array_agg(memory_utilization ORDER BY sampled_at DESC))[1],
     sum(temperature::numeric), min(temperature), max(temperature), (array_agg(temperature ORDER BY sampled_at DESC))[1],
     sum(power_usage::numeric), min(power_usage), max(power_usage), (array_agg(power_usage ORDER BY sampled_at DESC))[1]
   FROM expected e GROUP BY 1, 2)) d;
SELECT (SELECT count(*) FROM packed_aggregates) AS agg_rows, (SELECT count(DISTINCT workload_id) FROM expected) AS workloads, (SELECT count(*) FROM expected) AS samples;
