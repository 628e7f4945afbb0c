-- One seal batch (prototype; session_replication_role needs a superuser, the real store would have
-- its trigger functions read a SET LOCAL flag instead): the readings of one weekly partition and one workload bucket older than the watermark
-- move from rows into day blocks; the readings only change place, so no rollup trigger fires.
BEGIN;
SET LOCAL session_replication_role = replica;
SET LOCAL search_path = packed, public;
WITH moved AS (
  DELETE FROM public.metric_samples s
  WHERE s.tableoid = :'part'::regclass AND s.sampled_at < :'watermark'::timestamptz AND abs(hashtext(s.workload_id)) % 16 = :bucket
  RETURNING s.*
)
INSERT INTO metric_sample_days
SELECT organization_id, workload_id, day_start, array_agg(step ORDER BY sampled_at), array_agg(gpu_utilization ORDER BY sampled_at), array_agg(memory_utilization ORDER BY sampled_at), array_agg(temperature ORDER BY sampled_at), array_agg(power_usage ORDER BY sampled_at)
FROM (SELECT *, date_trunc('day', sampled_at, 'UTC') AS day_start, (extract(epoch FROM sampled_at - coalesce(lag(sampled_at) OVER w, date_trunc('day', sampled_at, 'UTC'))) * 1000000)::bigint AS step
      FROM moved WINDOW w AS (PARTITION BY organization_id, workload_id, date_trunc('day', sampled_at, 'UTC') ORDER BY sampled_at)) x
GROUP BY 1, 2, 3;
COMMIT;
