import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-UTC-day GPU usage of finished workloads, kept by statement-level triggers, so capacity requests
 * sum a few thousand rollup rows instead of a period's worth of workloads.
 *
 * Keyed by instance type, not pool: a workload draws on the pool that owns its instance type *now*,
 * so moving an instance type to another pool needs no rebuild (pools are joined at read time).
 *
 * Per (organization, initiative, instance type, UTC day):
 * - gpu_microseconds: gpu_count × the part of each finished run inside that day (exact integers, so
 *   re-imports that subtract and add again never drift);
 * - spanning_gpus: gpu_count of the runs that cover the whole day. A capacity window edge that falls
 *   inside a day is then exact: spanning_gpus × (edge span) plus the runs that start or end inside
 *   that day, read from raw rows through the two indexes below (a day's worth of starts and ends).
 *
 * Running workloads are not here: their accrual grows with the clock and is added at request time
 * from the partial index of running workloads.
 */
export class CapacityUsageRollup1763800003000 implements MigrationInterface {
  name = 'CapacityUsageRollup1763800003000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE capacity_usage_daily (
        organization_id   text NOT NULL,
        usage_day         date NOT NULL,
        initiative_id     text NOT NULL,
        instance_type     text NOT NULL,
        gpu_microseconds  bigint NOT NULL,
        spanning_gpus     bigint NOT NULL,
        PRIMARY KEY (organization_id, usage_day, initiative_id, instance_type)
      );

      -- Finished runs that start or end inside an edge day of a capacity window, and running
      -- workloads' accrual: covering, so each is read by an index-only scan.
      CREATE INDEX workloads_org_finished_started ON workloads (organization_id, started_at)
        INCLUDE (completed_at, gpu_count, initiative_id, instance_type)
        WHERE started_at IS NOT NULL AND completed_at IS NOT NULL;
      CREATE INDEX workloads_org_finished_completed ON workloads (organization_id, completed_at)
        INCLUDE (started_at, gpu_count, initiative_id, instance_type)
        WHERE started_at IS NOT NULL AND completed_at IS NOT NULL;
      CREATE INDEX workloads_org_running_usage ON workloads (organization_id)
        INCLUDE (initiative_id, instance_type, gpu_count, started_at)
        WHERE status = 'running';

      -- One finished run split across the UTC days it overlaps. Computed on UTC timestamps (no time
      -- zone arithmetic), so the session's TimeZone and daylight saving never shift a day.
      CREATE FUNCTION gpucap_usage_days(run_start timestamptz, run_end timestamptz, gpus integer)
      RETURNS TABLE (usage_day date, gpu_microseconds bigint, spanning_gpus bigint)
      LANGUAGE sql IMMUTABLE AS $fn$
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
      $fn$;

      -- JIT compilation costs more than these set-based statements save (seconds on a 100k-row upsert).
      CREATE FUNCTION gpucap_capacity_rollup_trigger() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO capacity_usage_daily AS r
            (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus)
          SELECT w.organization_id, d.usage_day, w.initiative_id, w.instance_type,
                 sum(d.gpu_microseconds), sum(d.spanning_gpus)
          FROM new_rows w
          CROSS JOIN LATERAL gpucap_usage_days(w.started_at, w.completed_at, w.gpu_count) d
          WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
          GROUP BY 1, 2, 3, 4
          ORDER BY 1, 2, 3, 4
          ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE
            SET gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
                spanning_gpus = r.spanning_gpus + excluded.spanning_gpus;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO capacity_usage_daily AS r
            (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus)
          SELECT w.organization_id, d.usage_day, w.initiative_id, w.instance_type,
                 -sum(d.gpu_microseconds), -sum(d.spanning_gpus)
          FROM old_rows w
          CROSS JOIN LATERAL gpucap_usage_days(w.started_at, w.completed_at, w.gpu_count) d
          WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
          GROUP BY 1, 2, 3, 4
          ORDER BY 1, 2, 3, 4
          ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE
            SET gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
                spanning_gpus = r.spanning_gpus + excluded.spanning_gpus;
        ELSE
          -- An upsert that re-imports unchanged rows touches nothing: only runs whose usage inputs
          -- changed are subtracted (old) and added again (new).
          INSERT INTO capacity_usage_daily AS r
            (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus)
          SELECT c.organization_id, d.usage_day, c.initiative_id, c.instance_type,
                 sum(c.sign * d.gpu_microseconds), sum(c.sign * d.spanning_gpus)
          FROM old_rows o
          FULL JOIN new_rows n ON n.organization_id = o.organization_id AND n.workload_id = o.workload_id
          CROSS JOIN LATERAL (VALUES
            (-1, o.organization_id, o.initiative_id, o.instance_type, o.gpu_count, o.started_at, o.completed_at),
            (1, n.organization_id, n.initiative_id, n.instance_type, n.gpu_count, n.started_at, n.completed_at)
          ) AS c (sign, organization_id, initiative_id, instance_type, gpu_count, started_at, completed_at)
          CROSS JOIN LATERAL gpucap_usage_days(c.started_at, c.completed_at, c.gpu_count) d
          WHERE (o.initiative_id, o.instance_type, o.gpu_count, o.started_at, o.completed_at)
                IS DISTINCT FROM (n.initiative_id, n.instance_type, n.gpu_count, n.started_at, n.completed_at)
            AND c.started_at IS NOT NULL AND c.completed_at IS NOT NULL
          GROUP BY 1, 2, 3, 4
          HAVING sum(c.sign * d.gpu_microseconds) <> 0 OR sum(c.sign * d.spanning_gpus) <> 0
          ORDER BY 1, 2, 3, 4
          ON CONFLICT (organization_id, usage_day, initiative_id, instance_type) DO UPDATE
            SET gpu_microseconds = r.gpu_microseconds + excluded.gpu_microseconds,
                spanning_gpus = r.spanning_gpus + excluded.spanning_gpus;
        END IF;
        RETURN NULL;
      END
      $fn$;

      -- Writers wait while the triggers are created and the rollup is backfilled, so nothing is
      -- counted twice or missed.
      LOCK TABLE workloads IN SHARE ROW EXCLUSIVE MODE;

      -- A trigger with transition tables serves one event, hence three.
      CREATE TRIGGER workloads_capacity_rollup_insert AFTER INSERT ON workloads
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger();
      CREATE TRIGGER workloads_capacity_rollup_update AFTER UPDATE ON workloads
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger();
      CREATE TRIGGER workloads_capacity_rollup_delete AFTER DELETE ON workloads
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION gpucap_capacity_rollup_trigger();

      INSERT INTO capacity_usage_daily
        (organization_id, usage_day, initiative_id, instance_type, gpu_microseconds, spanning_gpus)
      SELECT w.organization_id, d.usage_day, w.initiative_id, w.instance_type,
             sum(d.gpu_microseconds), sum(d.spanning_gpus)
      FROM workloads w
      CROSS JOIN LATERAL gpucap_usage_days(w.started_at, w.completed_at, w.gpu_count) d
      WHERE w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
      GROUP BY 1, 2, 3, 4;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TRIGGER IF EXISTS workloads_capacity_rollup_insert ON workloads;
      DROP TRIGGER IF EXISTS workloads_capacity_rollup_update ON workloads;
      DROP TRIGGER IF EXISTS workloads_capacity_rollup_delete ON workloads;
      DROP FUNCTION IF EXISTS gpucap_capacity_rollup_trigger();
      DROP FUNCTION IF EXISTS gpucap_usage_days(timestamptz, timestamptz, integer);
      DROP INDEX IF EXISTS workloads_org_running_usage;
      DROP INDEX IF EXISTS workloads_org_finished_completed;
      DROP INDEX IF EXISTS workloads_org_finished_started;
      DROP TABLE IF EXISTS capacity_usage_daily;
    `);
  }
}
