-- Moves the staged samples of stg into metric_sample_days: a staged reading replaces the stored one of the same time.
WITH staged AS (
  SELECT organization_id, workload_id, date_trunc('day', sampled_at, 'UTC') AS day_start, sampled_at,
         gpu_utilization, memory_utilization, temperature, power_usage FROM stg
),
stored AS (
  SELECT d.organization_id, d.workload_id, d.day_start, s.*
  FROM metric_sample_days d
  JOIN (SELECT DISTINCT organization_id, workload_id, day_start FROM staged) k USING (organization_id, workload_id, day_start)
  CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s
),
merged AS (
  SELECT * FROM staged
  UNION ALL
  SELECT * FROM stored t WHERE NOT EXISTS (SELECT 1 FROM staged s WHERE (s.organization_id, s.workload_id, s.sampled_at) = (t.organization_id, t.workload_id, t.sampled_at))
),
stepped AS (
  SELECT *, (extract(epoch FROM sampled_at - coalesce(lag(sampled_at) OVER w, day_start)) * 1000000)::bigint AS step
  FROM merged WINDOW w AS (PARTITION BY organization_id, workload_id, day_start ORDER BY sampled_at)
)
INSERT INTO metric_sample_days AS t
SELECT organization_id, workload_id, day_start, array_agg(step ORDER BY sampled_at),
       array_agg(gpu_utilization ORDER BY sampled_at), array_agg(memory_utilization ORDER BY sampled_at),
       array_agg(temperature ORDER BY sampled_at), array_agg(power_usage ORDER BY sampled_at)
FROM stepped GROUP BY organization_id, workload_id, day_start
ON CONFLICT (organization_id, workload_id, day_start) DO UPDATE
  SET step_us = excluded.step_us, gpu_utilization = excluded.gpu_utilization, memory_utilization = excluded.memory_utilization,
      temperature = excluded.temperature, power_usage = excluded.power_usage
  WHERE (t.step_us, t.gpu_utilization, t.memory_utilization, t.temperature, t.power_usage)
        IS DISTINCT FROM (excluded.step_us, excluded.gpu_utilization, excluded.memory_utilization, excluded.temperature, excluded.power_usage);
