-- Prototype of a packed sample store (not used by the service): one row per workload and UTC day,
-- the readings as lz4-compressed float8 arrays and the timestamps as microsecond steps, with
-- metric_aggregates' sample columns kept exact by statement triggers (packed_aggregates here).
-- Loaded by bench/sample-storage.ts into a schema of its own; check.sql exercises every write shape.

CREATE TABLE metric_sample_days (
  organization_id text NOT NULL,
  workload_id text NOT NULL,
  day_start timestamptz NOT NULL,
  -- the microseconds from the previous reading (the first: from day_start); strictly positive after the first
  step_us bigint[] COMPRESSION lz4 NOT NULL,
  gpu_utilization float8[] COMPRESSION lz4 NOT NULL,
  memory_utilization float8[] COMPRESSION lz4 NOT NULL,
  temperature float8[] COMPRESSION lz4 NOT NULL,
  power_usage float8[] COMPRESSION lz4 NOT NULL,
  PRIMARY KEY (organization_id, workload_id, day_start),
  CONSTRAINT metric_sample_days_shape CHECK (
    cardinality(step_us) > 0 AND array_ndims(step_us) = 1
    AND cardinality(gpu_utilization) = cardinality(step_us) AND cardinality(memory_utilization) = cardinality(step_us)
    AND cardinality(temperature) = cardinality(step_us) AND cardinality(power_usage) = cardinality(step_us)),
  CONSTRAINT metric_sample_days_increasing CHECK (step_us[1] >= 0 AND 0 < ALL (step_us[2:])),
  CONSTRAINT metric_sample_days_gpu CHECK (0 <= ALL (gpu_utilization) AND 100 >= ALL (gpu_utilization)),
  CONSTRAINT metric_sample_days_memory CHECK (0 <= ALL (memory_utilization) AND 100 >= ALL (memory_utilization)),
  CONSTRAINT metric_sample_days_power CHECK (0 <= ALL (power_usage))
);

CREATE OR REPLACE FUNCTION gpucap_unpack_samples(day_start timestamptz, step_us bigint[], g float8[], m float8[], t float8[], p float8[])
RETURNS TABLE (sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT day_start + sum(u.step::float8) OVER (ORDER BY u.i ROWS UNBOUNDED PRECEDING) * interval '1 microsecond', u.g, u.m, u.t, u.p
  FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, g, m, t, p, i)
$$;

-- Every sample of one workload in [low, high]: the reader of windows, series, percentiles and idle checks.
CREATE OR REPLACE FUNCTION gpucap_samples_between(org text, wl text, low timestamptz, high timestamptz)
RETURNS TABLE (sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
LANGUAGE sql STABLE AS $$
  SELECT s.* FROM metric_sample_days d
  CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s
  WHERE d.organization_id = org AND d.workload_id = wl
    AND d.day_start BETWEEN date_trunc('day', low, 'UTC') AND high
    AND s.sampled_at BETWEEN low AND high
$$;

-- The readings alone in [low, high] (window statistics and percentiles need no times): days wholly
-- inside are read off the arrays, only the edge days are decoded. Rows come in time order, as from
-- gpucap_samples_between, so float8 averages sum in the same order.
CREATE OR REPLACE FUNCTION gpucap_samples_values_between(org text, wl text, low timestamptz, high timestamptz)
RETURNS TABLE (gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
LANGUAGE sql STABLE AS $$
  SELECT v.* FROM metric_sample_days d
  CROSS JOIN LATERAL (
    SELECT u.g, u.m, u.t, u.p FROM unnest(d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) u(g, m, t, p)
    WHERE d.day_start >= low AND d.day_start + interval '1 day' <= high
    UNION ALL
    SELECT s.gpu_utilization, s.memory_utilization, s.temperature, s.power_usage
    FROM gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s
    WHERE NOT (d.day_start >= low AND d.day_start + interval '1 day' <= high) AND s.sampled_at BETWEEN low AND high
  ) v
  WHERE d.organization_id = org AND d.workload_id = wl
    AND d.day_start BETWEEN date_trunc('day', low, 'UTC') AND high
$$;

-- Every stored reading as a row (checks).
CREATE OR REPLACE VIEW packed_samples_v AS
  SELECT d.organization_id, d.workload_id, s.*
  FROM metric_sample_days d
  CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) s;

-- The sample columns of metric_aggregates, kept by the triggers below.
CREATE TABLE packed_aggregates (organization_id text NOT NULL, workload_id text NOT NULL, sample_count bigint NOT NULL, first_sampled_at timestamptz, latest_sampled_at timestamptz,
  gpu_utilization_sum numeric NOT NULL, gpu_utilization_min float8, gpu_utilization_max float8, gpu_utilization_latest float8,
  memory_utilization_sum numeric NOT NULL, memory_utilization_min float8, memory_utilization_max float8, memory_utilization_latest float8,
  temperature_sum numeric NOT NULL, temperature_min float8, temperature_max float8, temperature_latest float8,
  power_usage_sum numeric NOT NULL, power_usage_min float8, power_usage_max float8, power_usage_latest float8,
  PRIMARY KEY (organization_id, workload_id));

-- UPDATE and DELETE: extremes a removed reading held are recomputed, then the signed change is added.
CREATE OR REPLACE FUNCTION gpucap_sample_days_aggregates() RETURNS void LANGUAGE plpgsql SET jit = off AS $fn$
BEGIN
  WITH touched AS (
    SELECT DISTINCT o.organization_id, o.workload_id
    FROM changed_samples o JOIN packed_aggregates a USING (organization_id, workload_id)
    WHERE o.sign < 0 AND (o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
       OR o.gpu_utilization IN (a.gpu_utilization_min, a.gpu_utilization_max)
       OR o.memory_utilization IN (a.memory_utilization_min, a.memory_utilization_max)
       OR o.temperature IN (a.temperature_min, a.temperature_max)
       OR o.power_usage IN (a.power_usage_min, a.power_usage_max))
  )
  UPDATE packed_aggregates a
  SET first_sampled_at = r.first_sampled_at, latest_sampled_at = r.latest_sampled_at,
      gpu_utilization_min = r.gmin, gpu_utilization_max = r.gmax, gpu_utilization_latest = l.gpu_utilization,
      memory_utilization_min = r.mmin, memory_utilization_max = r.mmax, memory_utilization_latest = l.memory_utilization,
      temperature_min = r.tmin, temperature_max = r.tmax, temperature_latest = l.temperature,
      power_usage_min = r.pmin, power_usage_max = r.pmax, power_usage_latest = l.power_usage
  FROM touched t
  CROSS JOIN LATERAL (
    SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
           min(s.gpu_utilization) gmin, max(s.gpu_utilization) gmax, min(s.memory_utilization) mmin, max(s.memory_utilization) mmax,
           min(s.temperature) tmin, max(s.temperature) tmax, min(s.power_usage) pmin, max(s.power_usage) pmax
    FROM gpucap_samples_between(t.organization_id, t.workload_id, '-infinity', 'infinity') s
  ) r
  LEFT JOIN LATERAL (
    SELECT s.* FROM gpucap_samples_between(t.organization_id, t.workload_id, '-infinity', 'infinity') s ORDER BY s.sampled_at DESC LIMIT 1
  ) l ON true
  WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;

  INSERT INTO packed_aggregates AS a
  SELECT g.organization_id, g.workload_id, g.sample_count, g.first_sampled_at, g.latest_sampled_at,
         g.gs, g.gmin, g.gmax, l.gpu_utilization, g.ms, g.mmin, g.mmax, l.memory_utilization,
         g.ts, g.tmin, g.tmax, l.temperature, g.ps, g.pmin, g.pmax, l.power_usage
  FROM (
    SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
           min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at, max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
           sum(sign * gpu_utilization::numeric) gs, min(gpu_utilization) FILTER (WHERE sign > 0) gmin, max(gpu_utilization) FILTER (WHERE sign > 0) gmax,
           sum(sign * memory_utilization::numeric) ms, min(memory_utilization) FILTER (WHERE sign > 0) mmin, max(memory_utilization) FILTER (WHERE sign > 0) mmax,
           sum(sign * temperature::numeric) ts, min(temperature) FILTER (WHERE sign > 0) tmin, max(temperature) FILTER (WHERE sign > 0) tmax,
           sum(sign * power_usage::numeric) ps, min(power_usage) FILTER (WHERE sign > 0) pmin, max(power_usage) FILTER (WHERE sign > 0) pmax
    FROM changed_samples GROUP BY organization_id, workload_id
  ) g
  LEFT JOIN changed_samples l ON l.organization_id = g.organization_id AND l.workload_id = g.workload_id AND l.sampled_at = g.latest_sampled_at AND l.sign > 0
  ON CONFLICT (organization_id, workload_id) DO UPDATE SET
    sample_count = a.sample_count + excluded.sample_count,
    first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
    latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
    gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum, gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min), gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
    gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
    memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum, memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min), memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
    memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
    temperature_sum = a.temperature_sum + excluded.temperature_sum, temperature_min = least(a.temperature_min, excluded.temperature_min), temperature_max = greatest(a.temperature_max, excluded.temperature_max),
    temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
    power_usage_sum = a.power_usage_sum + excluded.power_usage_sum, power_usage_min = least(a.power_usage_min, excluded.power_usage_min), power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
    power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END;

  DELETE FROM packed_aggregates a USING (SELECT DISTINCT organization_id, workload_id FROM changed_samples WHERE sign < 0) o
  WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;
END
$fn$;

-- INSERT path: aggregates from per-block summaries read straight from the arrays.
CREATE OR REPLACE FUNCTION gpucap_sample_days_inserted() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
BEGIN
  INSERT INTO packed_aggregates AS a
  SELECT b.organization_id, b.workload_id, sum(b.n)::bigint, min(b.first_at), max(b.last_at),
         sum(b.gs), min(b.gmin), max(b.gmax), (array_agg(b.glast ORDER BY b.last_at DESC))[1],
         sum(b.ms), min(b.mmin), max(b.mmax), (array_agg(b.mlast ORDER BY b.last_at DESC))[1],
         sum(b.ts), min(b.tmin), max(b.tmax), (array_agg(b.tlast ORDER BY b.last_at DESC))[1],
         sum(b.ps), min(b.pmin), max(b.pmax), (array_agg(b.plast ORDER BY b.last_at DESC))[1]
  FROM new_rows d CROSS JOIN LATERAL (
    SELECT d.organization_id, d.workload_id, count(*) n,
           d.day_start + d.step_us[1] * interval '1 microsecond' AS first_at,
           d.day_start + sum(u.st) * interval '1 microsecond' AS last_at,
           sum(u.g::numeric) gs, min(u.g) gmin, max(u.g) gmax, d.gpu_utilization[cardinality(d.step_us)] glast,
           sum(u.m::numeric) ms, min(u.m) mmin, max(u.m) mmax, d.memory_utilization[cardinality(d.step_us)] mlast,
           sum(u.t::numeric) ts, min(u.t) tmin, max(u.t) tmax, d.temperature[cardinality(d.step_us)] tlast,
           sum(u.p::numeric) ps, min(u.p) pmin, max(u.p) pmax, d.power_usage[cardinality(d.step_us)] plast
    FROM unnest(d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) u(st, g, m, t, p)) b
  GROUP BY b.organization_id, b.workload_id
  ON CONFLICT (organization_id, workload_id) DO UPDATE SET
    sample_count = a.sample_count + excluded.sample_count,
    first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
    latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
    gpu_utilization_sum = a.gpu_utilization_sum + excluded.gpu_utilization_sum, gpu_utilization_min = least(a.gpu_utilization_min, excluded.gpu_utilization_min), gpu_utilization_max = greatest(a.gpu_utilization_max, excluded.gpu_utilization_max),
    gpu_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.gpu_utilization_latest, a.gpu_utilization_latest) ELSE a.gpu_utilization_latest END,
    memory_utilization_sum = a.memory_utilization_sum + excluded.memory_utilization_sum, memory_utilization_min = least(a.memory_utilization_min, excluded.memory_utilization_min), memory_utilization_max = greatest(a.memory_utilization_max, excluded.memory_utilization_max),
    memory_utilization_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.memory_utilization_latest, a.memory_utilization_latest) ELSE a.memory_utilization_latest END,
    temperature_sum = a.temperature_sum + excluded.temperature_sum, temperature_min = least(a.temperature_min, excluded.temperature_min), temperature_max = greatest(a.temperature_max, excluded.temperature_max),
    temperature_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.temperature_latest, a.temperature_latest) ELSE a.temperature_latest END,
    power_usage_sum = a.power_usage_sum + excluded.power_usage_sum, power_usage_min = least(a.power_usage_min, excluded.power_usage_min), power_usage_max = greatest(a.power_usage_max, excluded.power_usage_max),
    power_usage_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at THEN coalesce(excluded.power_usage_latest, a.power_usage_latest) ELSE a.power_usage_latest END;
  RETURN NULL;
END
$fn$;
-- Signed sample-level change of one statement on metric_sample_days: appended tails read only the tail,
-- anything else is old EXCEPT ALL new both ways.
CREATE OR REPLACE FUNCTION gpucap_sample_days_changed() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
BEGIN
  IF TG_OP = 'DELETE' THEN
    CREATE TEMP TABLE IF NOT EXISTS changed_samples (sign int, organization_id text, workload_id text, sampled_at timestamptz,
      gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8) ON COMMIT DELETE ROWS;
    TRUNCATE changed_samples;
    INSERT INTO changed_samples
    SELECT -1, o.organization_id, o.workload_id, s.* FROM old_rows o
    CROSS JOIN LATERAL gpucap_unpack_samples(o.day_start, o.step_us, o.gpu_utilization, o.memory_utilization, o.temperature, o.power_usage) s;
  ELSE
    CREATE TEMP TABLE IF NOT EXISTS changed_samples (sign int, organization_id text, workload_id text, sampled_at timestamptz,
      gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8) ON COMMIT DELETE ROWS;
    TRUNCATE changed_samples;
    INSERT INTO changed_samples
    WITH pairs AS (
      SELECT n.organization_id, n.workload_id, n.day_start, n.step_us, n.gpu_utilization, n.memory_utilization, n.temperature, n.power_usage,
             cardinality(o.step_us) AS kept
      FROM new_rows n JOIN old_rows o USING (organization_id, workload_id, day_start)
      WHERE cardinality(o.step_us) <= cardinality(n.step_us)
        AND n.step_us[:cardinality(o.step_us)] = o.step_us
        AND n.gpu_utilization[:cardinality(o.step_us)] = o.gpu_utilization
        AND n.memory_utilization[:cardinality(o.step_us)] = o.memory_utilization
        AND n.temperature[:cardinality(o.step_us)] = o.temperature
        AND n.power_usage[:cardinality(o.step_us)] = o.power_usage
    ),
    appended AS (
      SELECT p.organization_id, p.workload_id, p.day_start + sum(u.step) OVER (PARTITION BY p.organization_id, p.workload_id, p.day_start ORDER BY u.i) * interval '1 microsecond' AS sampled_at,
             u.g, u.m, u.t, u.p, u.i, p.kept
      FROM pairs p CROSS JOIN LATERAL unnest(p.step_us, p.gpu_utilization, p.memory_utilization, p.temperature, p.power_usage) WITH ORDINALITY AS u(step, g, m, t, p, i)
    ),
    other_new AS (
      SELECT n.* FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE (p.organization_id, p.workload_id, p.day_start) = (n.organization_id, n.workload_id, n.day_start))
    ),
    other_old AS (
      SELECT o.* FROM old_rows o WHERE NOT EXISTS (SELECT 1 FROM pairs p WHERE (p.organization_id, p.workload_id, p.day_start) = (o.organization_id, o.workload_id, o.day_start))
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
  PERFORM gpucap_sample_days_aggregates();
  RETURN NULL;
END
$fn$;
CREATE TRIGGER days_update AFTER UPDATE ON metric_sample_days REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_changed();
CREATE TRIGGER days_delete AFTER DELETE ON metric_sample_days REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_changed();
CREATE TRIGGER days_insert AFTER INSERT ON metric_sample_days REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_days_inserted();
