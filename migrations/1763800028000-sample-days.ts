import { MigrationInterface, QueryRunner } from 'typeorm';

/** Same namespace as migration 1763800009000: day partitions are created with the row partitions. */
const PARTITION_LOCK_NAMESPACE = 0x67707570;

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];

/** The sample columns of metric_aggregates that the triggers below write. */
const AGGREGATE_COLUMNS = [
  'organization_id',
  'workload_id',
  'sample_count',
  'first_sampled_at',
  'latest_sampled_at',
  ...METRICS.flatMap((m) => [`${m}_sum`, `${m}_min`, `${m}_max`, `${m}_latest`]),
].join(', ');

/** How a statement's per-workload summary (`excluded`) merges into a workload's aggregates row (`a`). */
const MERGE_AGGREGATES = `
  ON CONFLICT (organization_id, workload_id) DO UPDATE SET
    sample_count = a.sample_count + excluded.sample_count,
    first_sampled_at = least(a.first_sampled_at, excluded.first_sampled_at),
    latest_sampled_at = greatest(a.latest_sampled_at, excluded.latest_sampled_at),
    ${METRICS.map(
      (m) => `${m}_sum = a.${m}_sum + excluded.${m}_sum,
    ${m}_min = least(a.${m}_min, excluded.${m}_min),
    ${m}_max = greatest(a.${m}_max, excluded.${m}_max),
    ${m}_latest = CASE WHEN a.latest_sampled_at IS NULL OR excluded.latest_sampled_at >= a.latest_sampled_at
                  THEN coalesce(excluded.${m}_latest, a.${m}_latest) ELSE a.${m}_latest END`,
    ).join(',\n    ')}`;

/**
 * Past days of metric samples packed into one row per workload and UTC day (`metric_sample_days`):
 * the readings as float8 arrays (averages stay exact), the times as microsecond steps from the
 * previous reading, every array compressed (lz4 where the server has it), the identifiers once per
 * day instead of once per reading. The open days stay rows in metric_samples; `gpucap migrate` and the writers seal past
 * days into blocks (src/import/sample-seal.ts).
 *
 * Each reading lives in exactly one of the two stores. `sample_seal_watermarks` says where, per
 * organization, and changes only under the organization's writer lock: readings before
 * `sealed_before` are in blocks; while a seal is under way (`sealing_to` set) readings in
 * [sealed_before, sealing_to) may be in either, and writers look in both for them.
 *
 * The blocks keep metric_aggregates exact through their own statement triggers; a seal only moves
 * readings, so it sets `gpucap.sealing` for its statement and the rollup triggers of both stores
 * skip it. The extremes a deleted reading held are recomputed from both stores.
 */
export class SampleDays1763800028000 implements MigrationInterface {
  name = 'SampleDays1763800028000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE metric_sample_days (
        organization_id     text NOT NULL,
        workload_id         text NOT NULL,
        day_start           timestamptz NOT NULL,
        step_us             bigint[] NOT NULL,
        gpu_utilization     float8[] NOT NULL,
        memory_utilization  float8[] NOT NULL,
        temperature         float8[] NOT NULL,
        power_usage         float8[] NOT NULL,
        PRIMARY KEY (organization_id, workload_id, day_start),
        CONSTRAINT metric_sample_days_shape CHECK (
          cardinality(step_us) > 0 AND array_ndims(step_us) = 1
          AND cardinality(gpu_utilization) = cardinality(step_us)
          AND cardinality(memory_utilization) = cardinality(step_us)
          AND cardinality(temperature) = cardinality(step_us)
          AND cardinality(power_usage) = cardinality(step_us)),
        -- Strictly increasing times: a reading repeated in one write fails here.
        CONSTRAINT metric_sample_days_increasing CHECK (step_us[1] >= 0 AND 0 < ALL (step_us[2:])),
        CONSTRAINT metric_sample_days_day_start CHECK (day_start = date_trunc('day', day_start, 'UTC')),
        CONSTRAINT metric_sample_days_gpu_utilization_check CHECK (0 <= ALL (gpu_utilization) AND 100 >= ALL (gpu_utilization)),
        CONSTRAINT metric_sample_days_memory_utilization_check CHECK (0 <= ALL (memory_utilization) AND 100 >= ALL (memory_utilization)),
        CONSTRAINT metric_sample_days_power_usage_check CHECK (0 <= ALL (power_usage))
      ) PARTITION BY RANGE (day_start);

      -- lz4 compresses and reads back faster than pglz; a server built without it (the embedded
      -- PostgreSQL of the npm package) keeps pglz. Partitions take the parent's method.
      DO $do$
      BEGIN
        ALTER TABLE metric_sample_days
          ALTER COLUMN step_us SET COMPRESSION lz4, ALTER COLUMN gpu_utilization SET COMPRESSION lz4,
          ALTER COLUMN memory_utilization SET COMPRESSION lz4, ALTER COLUMN temperature SET COMPRESSION lz4,
          ALTER COLUMN power_usage SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
        RAISE NOTICE 'lz4 is not available: metric_sample_days stays compressed with pglz';
      END
      $do$;

      CREATE TABLE sample_seal_watermarks (
        organization_id  text PRIMARY KEY REFERENCES organizations (organization_id) ON DELETE CASCADE,
        sealed_before    timestamptz NOT NULL,
        sealing_to       timestamptz,
        CHECK (sealing_to > sealed_before)
      );
      -- Organizations with samples today have them all in rows; a new one has none, so its
      -- sealed history may start at its creation day.
      INSERT INTO sample_seal_watermarks (organization_id, sealed_before)
      SELECT organization_id, '-infinity' FROM organizations;
      CREATE FUNCTION gpucap_seal_watermark_new_organization() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO sample_seal_watermarks (organization_id, sealed_before)
        SELECT organization_id, date_trunc('day', now(), 'UTC') FROM new_rows
        ON CONFLICT (organization_id) DO NOTHING;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER organizations_seal_watermark AFTER INSERT ON organizations
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_seal_watermark_new_organization();

      CREATE FUNCTION gpucap_sealing() RETURNS boolean LANGUAGE sql STABLE AS $fn$
        SELECT coalesce(current_setting('gpucap.sealing', true), '') = 'on'
      $fn$;

      CREATE FUNCTION gpucap_unpack_samples(day_start timestamptz, step_us bigint[], g float8[], m float8[], t float8[], p float8[])
      RETURNS TABLE (sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT day_start + sum(u.step) OVER (ORDER BY u.i ROWS UNBOUNDED PRECEDING) * interval '1 microsecond', u.g, u.m, u.t, u.p
        FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, g, m, t, p, i)
      $fn$;

      -- A day's reading times as microsecond steps from the previous one (the first from the day's
      -- start). float8 seconds of an interval under a day are exact to well under a microsecond.
      CREATE FUNCTION gpucap_sample_steps(day_start timestamptz, times timestamptz[]) RETURNS bigint[]
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT array_agg(round(date_part('epoch', times[i] - CASE WHEN i = 1 THEN day_start ELSE times[i - 1] END) * 1000000)::bigint ORDER BY i)
        FROM generate_subscripts(times, 1) AS i
      $fn$;

      -- One workload's readings in [low, high] from both stores, in time order: float8 averages
      -- depend on the order they are summed in, and rows alone were always read in time order.
      CREATE FUNCTION gpucap_workload_samples(org text, wl text, low timestamptz, high timestamptz)
      RETURNS TABLE (sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
      LANGUAGE sql STABLE AS $fn$
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
      $fn$;
    `);

    await queryRunner.query(`
      -- The day blocks' weeks, the same as the rows' (a UTC day lies in one ISO week, so prune drops
      -- a week of both stores at once). Created in a transaction of their own, apart from the rows'
      -- weeks: creating a partition locks its parent exclusively until commit, and a reader (or a
      -- seal) locks the two parents in either order, so holding both at once could deadlock.
      CREATE FUNCTION gpucap_ensure_sample_day_partitions(range_from timestamptz, range_to timestamptz)
      RETURNS integer LANGUAGE plpgsql SET TimeZone = 'UTC' AS $fn$
      DECLARE
        week_start timestamptz := date_trunc('week', range_from);
        partition_name text;
        created integer := 0;
      BEGIN
        IF range_from > range_to THEN
          RETURN 0;
        END IF;
        PERFORM pg_advisory_xact_lock(${PARTITION_LOCK_NAMESPACE}, 1);
        WHILE week_start <= range_to LOOP
          partition_name := 'metric_sample_days_w' || to_char(week_start, 'IYYY_IW');
          IF to_regclass(partition_name) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF metric_sample_days FOR VALUES FROM (%L) TO (%L)',
              partition_name, week_start, week_start + interval '7 days');
            created := created + 1;
          END IF;
          week_start := week_start + interval '7 days';
        END LOOP;
        RETURN created;
      END
      $fn$;

      DO $do$
      DECLARE
        bounds record;
      BEGIN
        FOR bounds IN
          SELECT substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)')::timestamptz AS range_start
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'metric_samples'::regclass
        LOOP
          PERFORM gpucap_ensure_sample_day_partitions(bounds.range_start, bounds.range_start);
        END LOOP;
      END
      $do$;
    `);

    // Rows: a seal skips their rollup triggers; extremes of a deleted reading come from both stores.
    await queryRunner.query(`
      DO $do$
      DECLARE
        fn text;
        definition text;
        recomputed text;
      BEGIN
        FOREACH fn IN ARRAY ARRAY['gpucap_metric_aggregates_insert', 'gpucap_metric_aggregates_update', 'gpucap_metric_aggregates_delete'] LOOP
          definition := pg_get_functiondef(fn::regproc);
          recomputed := regexp_replace(definition,
            'FROM metric_samples s\\s+WHERE s\\.organization_id = t\\.organization_id AND s\\.workload_id = t\\.workload_id',
            'FROM gpucap_workload_samples(t.organization_id, t.workload_id, ''-infinity'', ''infinity'') s', 'g');
          IF fn <> 'gpucap_metric_aggregates_insert' AND recomputed = definition THEN
            RAISE EXCEPTION '% no longer reads extremes from metric_samples as expected', fn;
          END IF;
          EXECUTE regexp_replace(recomputed, '\\$function\\$\\s*BEGIN',
            E'$function$\\n    BEGIN\\n      IF gpucap_sealing() THEN\\n        RETURN NULL;\\n      END IF;');
        END LOOP;
      END
      $do$;
    `);

    await queryRunner.query(`
      -- Applies the signed reading-level change in changed_samples (filled by the triggers below):
      -- extremes a removed reading held are recomputed from both stores, then the signed summary merges.
      CREATE FUNCTION gpucap_sample_days_apply_changes() RETURNS void LANGUAGE plpgsql SET jit = off AS $fn$
      BEGIN
        WITH touched AS (
          SELECT DISTINCT o.organization_id, o.workload_id
          FROM changed_samples o JOIN metric_aggregates a USING (organization_id, workload_id)
          WHERE o.sign < 0 AND (o.sampled_at IN (a.first_sampled_at, a.latest_sampled_at)
             ${METRICS.map((m) => `OR o.${m} IN (a.${m}_min, a.${m}_max)`).join('\n             ')})
        )
        UPDATE metric_aggregates a
        SET first_sampled_at = r.first_sampled_at, latest_sampled_at = r.latest_sampled_at,
            ${METRICS.map((m) => `${m}_min = r.${m}_min, ${m}_max = r.${m}_max, ${m}_latest = l.${m}`).join(',\n            ')}
        FROM touched t
        CROSS JOIN LATERAL (
          SELECT min(s.sampled_at) AS first_sampled_at, max(s.sampled_at) AS latest_sampled_at,
                 ${METRICS.map((m) => `min(s.${m}) AS ${m}_min, max(s.${m}) AS ${m}_max`).join(',\n                 ')}
          FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
        ) r
        LEFT JOIN LATERAL (
          SELECT s.* FROM gpucap_workload_samples(t.organization_id, t.workload_id, '-infinity', 'infinity') s
          ORDER BY s.sampled_at DESC LIMIT 1
        ) l ON true
        WHERE a.organization_id = t.organization_id AND a.workload_id = t.workload_id;

        INSERT INTO metric_aggregates AS a (${AGGREGATE_COLUMNS})
        SELECT g.organization_id, g.workload_id, g.sample_count, g.first_sampled_at, g.latest_sampled_at,
               ${METRICS.map((m) => `g.${m}_sum, g.${m}_min, g.${m}_max, l.${m}`).join(',\n               ')}
        FROM (
          SELECT organization_id, workload_id, sum(sign)::bigint AS sample_count,
                 min(sampled_at) FILTER (WHERE sign > 0) AS first_sampled_at,
                 max(sampled_at) FILTER (WHERE sign > 0) AS latest_sampled_at,
                 ${METRICS.map(
                   (m) =>
                     `sum(sign * ${m}::numeric) AS ${m}_sum, min(${m}) FILTER (WHERE sign > 0) AS ${m}_min, max(${m}) FILTER (WHERE sign > 0) AS ${m}_max`,
                 ).join(',\n                 ')}
          FROM changed_samples GROUP BY organization_id, workload_id
        ) g
        LEFT JOIN changed_samples l ON l.organization_id = g.organization_id AND l.workload_id = g.workload_id
          AND l.sampled_at = g.latest_sampled_at AND l.sign > 0
        ${MERGE_AGGREGATES};

        DELETE FROM metric_aggregates a
        USING (SELECT DISTINCT organization_id, workload_id FROM changed_samples WHERE sign < 0) o
        WHERE a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count <= 0;
      END
      $fn$;

      -- INSERT: each block's summary read straight off its arrays.
      CREATE FUNCTION gpucap_sample_days_inserted() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
      BEGIN
        IF gpucap_sealing() THEN
          RETURN NULL;
        END IF;
        INSERT INTO metric_aggregates AS a (${AGGREGATE_COLUMNS})
        SELECT b.organization_id, b.workload_id, sum(b.n)::bigint, min(b.first_at), max(b.last_at),
               ${METRICS.map(
                 (m) =>
                   `sum(b.${m}_sum), min(b.${m}_min), max(b.${m}_max), (array_agg(b.${m}_last ORDER BY b.last_at DESC))[1]`,
               ).join(',\n               ')}
        FROM new_rows d CROSS JOIN LATERAL (
          SELECT d.organization_id, d.workload_id, count(*) AS n,
                 d.day_start + d.step_us[1] * interval '1 microsecond' AS first_at,
                 d.day_start + sum(u.st) * interval '1 microsecond' AS last_at,
                 ${METRICS.map(
                   (m) =>
                     `sum(u.${m}::numeric) AS ${m}_sum, min(u.${m}) AS ${m}_min, max(u.${m}) AS ${m}_max, d.${m}[cardinality(d.step_us)] AS ${m}_last`,
                 ).join(',\n                 ')}
          FROM unnest(d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage)
            AS u(st, gpu_utilization, memory_utilization, temperature, power_usage)
        ) b
        GROUP BY b.organization_id, b.workload_id
        ${MERGE_AGGREGATES};
        RETURN NULL;
      END
      $fn$;

      -- UPDATE and DELETE: the statement's signed reading-level change. A day that only grew at its
      -- end (an append) contributes its new tail alone; any other changed day, old EXCEPT ALL new both ways.
      CREATE FUNCTION gpucap_sample_days_changed() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
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
              ${METRICS.map((m) => `AND n.${m}[:cardinality(o.step_us)] = o.${m}`).join('\n              ')}
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
      $fn$;

      CREATE FUNCTION gpucap_sample_days_writer_check() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
      DECLARE
        pruned record;
      BEGIN
        IF TG_OP <> 'INSERT' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM old_rows));
        END IF;
        IF TG_OP <> 'DELETE' THEN
          PERFORM gpucap_assert_writer_locks(ARRAY(SELECT DISTINCT organization_id FROM new_rows));
          -- Retention boundaries are week starts, so a day before one lies wholly before it.
          SELECT n.organization_id, n.workload_id, n.day_start, r.samples_before INTO pruned
          FROM new_rows n JOIN sample_retention r USING (organization_id)
          WHERE n.day_start < r.samples_before
          LIMIT 1;
          IF FOUND THEN
            RAISE EXCEPTION 'samples of workload % on % are older than the retention boundary % of organization %',
              pruned.workload_id, pruned.day_start, pruned.samples_before, pruned.organization_id
              USING HINT = 'samples before the boundary were pruned; their lifetime aggregates already count them';
          END IF;
        END IF;
        RETURN NULL;
      END
      $fn$;
    `);

    for (const [event, referencing] of [
      ['insert', 'NEW TABLE AS new_rows'],
      ['update', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['delete', 'OLD TABLE AS old_rows'],
    ]) {
      const on = `AFTER ${event.toUpperCase()} ON metric_sample_days REFERENCING ${referencing} FOR EACH STATEMENT`;
      await queryRunner.query(`
        CREATE TRIGGER metric_sample_days_aggregates_${event} ${on}
          EXECUTE FUNCTION ${event === 'insert' ? 'gpucap_sample_days_inserted' : 'gpucap_sample_days_changed'}();
        CREATE TRIGGER metric_sample_days_data_version_${event} ${on} EXECUTE FUNCTION gpucap_data_changed_${event}();
        CREATE TRIGGER metric_sample_days_writer_check_${event} ${on} EXECUTE FUNCTION gpucap_sample_days_writer_check();`);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DO $do$
      DECLARE
        fn text;
      BEGIN
        FOREACH fn IN ARRAY ARRAY['gpucap_metric_aggregates_insert', 'gpucap_metric_aggregates_update', 'gpucap_metric_aggregates_delete'] LOOP
          EXECUTE regexp_replace(regexp_replace(pg_get_functiondef(fn::regproc),
            'FROM gpucap_workload_samples\\(t\\.organization_id, t\\.workload_id, ''-infinity'', ''infinity''\\) s',
            E'FROM metric_samples s\\n      WHERE s.organization_id = t.organization_id AND s.workload_id = t.workload_id', 'g'),
            '\\s*IF gpucap_sealing\\(\\) THEN\\s*RETURN NULL;\\s*END IF;', '');
        END LOOP;
      END
      $do$;
      DROP TABLE IF EXISTS metric_sample_days;
      DROP TABLE IF EXISTS sample_seal_watermarks;
      DROP TRIGGER IF EXISTS organizations_seal_watermark ON organizations;
      DROP FUNCTION IF EXISTS gpucap_seal_watermark_new_organization();
      DROP FUNCTION IF EXISTS gpucap_sample_days_inserted();
      DROP FUNCTION IF EXISTS gpucap_sample_days_changed();
      DROP FUNCTION IF EXISTS gpucap_sample_days_apply_changes();
      DROP FUNCTION IF EXISTS gpucap_sample_days_writer_check();
      DROP FUNCTION IF EXISTS gpucap_workload_samples(text, text, timestamptz, timestamptz);
      DROP FUNCTION IF EXISTS gpucap_unpack_samples(timestamptz, bigint[], float8[], float8[], float8[], float8[]);
      DROP FUNCTION IF EXISTS gpucap_sealing();
      DROP FUNCTION IF EXISTS gpucap_sample_steps(timestamptz, timestamptz[]);
      DROP FUNCTION IF EXISTS gpucap_ensure_sample_day_partitions(timestamptz, timestamptz);
    `);
  }
}
