import { WAIT_SECONDS_SQL, waitSecondsSql } from '../../core/queue-wait';
import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/**
 * Queue-wait histograms: per period rollup key (UTC day or hour; dimension none or instance type; cluster),
 * one row per non-empty wait bucket, kept by statement triggers on workloads. None per submitter: a
 * submitter's day holds a few waits, so a histogram there is about a row per wait, no cheaper to read
 * than the workloads' queue index, which statistics read instead.
 *
 * Buckets follow DDSketch: bucket k ≥ 1 holds the waits in (γ^(k−2), γ^(k−1)] with γ = 1.02 (each 2 %
 * wide), bucket 0 a wait of 0; a bucket stands for 2γ^(k−1)/(γ+1), within (γ−1)/(γ+1) < 1 % of every
 * wait in it, and never above the bucket's largest wait (a bucket narrower than a second, every wait
 * under 50 s, is then exact). A percentile interpolated between two such values is within the same
 * bound of percentile_cont's.
 *
 * Counts and sums move by signed amounts. The largest wait of a row is merged as readings' extremes
 * are (docs/architecture.md, "Upserts and extremes"): raised by an added wait, recomputed from the
 * workloads of its key only when a removed wait leaves it.
 */
const GAMMA = 1.02;

/** Rows of workloads whose waits count, added (+1) or removed (−1): a relation, or a subquery with its alias. */
export interface WaitSource {
  rows: string;
  sign: 1 | -1;
}

const ADDED: WaitSource = { rows: 'new_rows', sign: 1 };
const REMOVED: WaitSource = { rows: 'old_rows', sign: -1 };

/** The signed waits of the started rows of `sources`. */
function signedWaitsSql(sources: WaitSource[]): string {
  return sources
    .map(
      (source) => `SELECT ${source.sign} AS sign, organization_id, initiative_id, instance_type, cluster_id,
          date_trunc('day', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day,
          date_trunc('hour', submitted_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour,
          ${WAIT_SECONDS_SQL}::bigint AS wait
        FROM ${source.rows} WHERE started_at IS NOT NULL`,
    )
    .join('\n        UNION ALL ');
}

/**
 * Per rollup key and wait bucket, what the statement changed (over plain workloads rows: their
 * histogram), netted per wait value first: a wait that leaves and comes back (a status change, a
 * re-import) changes nothing; `removed` says a value left, so the row's largest wait may have to be
 * recomputed.
 */
export function changedBucketsSql(sources: WaitSource[]): string {
  return `SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id,
           gpucap_wait_bucket(wait) AS wait_bucket, sum(net)::bigint AS started_count,
           sum(net * wait)::bigint AS wait_seconds_sum, max(wait) FILTER (WHERE net > 0) AS added_max,
           bool_or(net < 0) AS removed
    FROM (
      SELECT organization_id,
             CASE WHEN grouping(day) = 0 THEN 'day' ELSE 'hour' END AS period,
             CASE WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END AS dimension,
             coalesce(day, hour) AS bucket_start, initiative_id,
             CASE WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END AS dimension_value,
             cluster_id, wait, sum(sign) AS net
      FROM (${signedWaitsSql(sources)}) AS signed
      GROUP BY GROUPING SETS ((organization_id, cluster_id, day, initiative_id, wait), (organization_id, cluster_id, day, initiative_id, instance_type, wait),
        (organization_id, cluster_id, hour, initiative_id, wait), (organization_id, cluster_id, hour, initiative_id, instance_type, wait))
      HAVING sum(sign) <> 0
    ) AS per_value
    GROUP BY organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, gpucap_wait_bucket(wait)`;
}

const KEY_MATCH = `r.organization_id = c.organization_id AND r.period = c.period AND r.dimension = c.dimension
        AND r.bucket_start = c.bucket_start AND r.initiative_id = c.initiative_id
        AND r.dimension_value = c.dimension_value AND r.cluster_id = c.cluster_id AND r.wait_bucket = c.wait_bucket`;

/** The body of a trigger function over `sources`; removals only where old rows exist. */
function histogramBody(sources: WaitSource[]): string {
  const upsert = `INSERT INTO workload_period_waits AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
    SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket,
           started_count, wait_seconds_sum, coalesce(added_max, 0)
    FROM (${changedBucketsSql(sources)}) AS c
    WHERE started_count <> 0 OR wait_seconds_sum <> 0 OR removed
    ORDER BY organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket) DO UPDATE SET
      started_count = r.started_count + excluded.started_count,
      wait_seconds_sum = r.wait_seconds_sum + excluded.wait_seconds_sum,
      wait_seconds_max = greatest(r.wait_seconds_max, excluded.wait_seconds_max);`;
  if (sources.every((source) => source.sign > 0)) return upsert;
  // A removed wait may have been the row's largest: empty rows go, the others are recomputed from
  // the workloads of their key and bucket (one initiative's hour or day, by an index range).
  return `${upsert}
    DELETE FROM workload_period_waits r USING (${changedBucketsSql(sources)}) AS c
    WHERE c.removed AND ${KEY_MATCH} AND r.started_count = 0;
    UPDATE workload_period_waits r SET wait_seconds_max = (
      SELECT max(${waitSecondsSql('w')}::bigint) FROM workloads w
      WHERE w.organization_id = r.organization_id AND w.initiative_id = r.initiative_id AND w.cluster_id = r.cluster_id
        AND w.submitted_at >= r.bucket_start
        AND w.submitted_at < r.bucket_start + CASE r.period WHEN 'day' THEN interval '1 day' ELSE interval '1 hour' END
        AND w.started_at IS NOT NULL
        AND (r.dimension <> 'instance_type' OR w.instance_type = r.dimension_value)
        AND gpucap_wait_bucket(${waitSecondsSql('w')}) = r.wait_bucket)
    FROM (${changedBucketsSql(sources)}) AS c
    WHERE c.removed AND ${KEY_MATCH};`;
}

function triggerFunction(name: string, sources: WaitSource[]): Definition {
  return defineFunction(`
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
    ${histogramBody(sources)}
      RETURN NULL;
    END
    $$`);
}

export const queueWaitDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_wait_bucket(wait float8) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN wait < 1 THEN 0 ELSE 1 + ceil(ln(wait) / ln(${GAMMA}::float8)) END::smallint
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_wait_bucket_value(wait_bucket smallint, largest float8) RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN wait_bucket = 0 THEN 0
                ELSE least(largest, 2 * power(${GAMMA}::float8, wait_bucket - 1) / (1 + ${GAMMA}::float8)) END
    $$`),
  triggerFunction('gpucap_workload_waits_delete', [REMOVED]),
  triggerFunction('gpucap_workload_waits_insert', [ADDED]),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_waits_truncate() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      DELETE FROM workload_period_waits;
      RETURN NULL;
    END
    $$`),
  triggerFunction('gpucap_workload_waits_update', [ADDED, REMOVED]),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_waits_delete AFTER DELETE ON workloads REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_waits_delete()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_waits_insert AFTER INSERT ON workloads REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_waits_insert()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_waits_truncate AFTER TRUNCATE ON workloads FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_waits_truncate()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER workloads_waits_update AFTER UPDATE ON workloads REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_waits_update()',
  ),
];
