import { WAIT_BLOCK, WAIT_SECONDS_SQL, waitSecondsSql } from '../../core/queue-wait';
import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';

/**
 * Queue-wait histograms: per period rollup key (UTC day or hour; dimension none or instance type; cluster),
 * one row per non-empty wait bucket, kept by statement triggers on workloads. The same for blocks of
 * 16 UTC days aligned to the epoch (WAIT_BLOCK), so a month's range merges a block or two rather than
 * thirty days of rows: a histogram over many days holds little more than one over a day (a 16-day
 * block about four days' rows). One block size only: each size adds about a third to the rows a
 * writer upserts here, and a second, smaller one saved readers little. None per submitter: a
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

/** Every period a histogram row is kept for: the periods of the other rollups, then the blocks. */
export const WAIT_PERIODS = ['day', 'hour', WAIT_BLOCK.period];

/** The start of the UTC day, hour or block of `period` that `time` falls in. */
function periodStartSql(period: string, time: string): string {
  if (period !== WAIT_BLOCK.period)
    return `date_trunc('${period}', ${time} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
  const seconds = WAIT_BLOCK.days * 86_400;
  return `to_timestamp(floor(date_part('epoch', ${time}) / ${seconds}) * ${seconds})`;
}

/** The length of a row's period, from its `period` column. */
export function periodLengthSql(period: string): string {
  return `CASE ${period} WHEN 'day' THEN interval '1 day' WHEN 'hour' THEN interval '1 hour' WHEN '${WAIT_BLOCK.period}' THEN interval '${WAIT_BLOCK.days} days' END`;
}

/** The signed waits of the started rows of `sources`, with the start of each of `periods` they fall in. */
function signedWaitsSql(sources: WaitSource[], periods: string[]): string {
  return sources
    .map(
      (source) => `SELECT ${source.sign} AS sign, organization_id, initiative_id, instance_type, cluster_id,
          ${periods.map((period) => `${periodStartSql(period, 'submitted_at')} AS ${period}`).join(',\n          ')},
          ${WAIT_SECONDS_SQL}::bigint AS wait
        FROM ${source.rows} WHERE started_at IS NOT NULL`,
    )
    .join('\n        UNION ALL ');
}

/**
 * Per rollup key and wait bucket of `periods` (all of them unless narrowed), what the statement
 * changed (over plain workloads rows: their histogram), netted per wait value first: a wait that
 * leaves and comes back (a status change, a re-import) changes nothing; `removed` says a value
 * left, so the row's largest wait may have to be recomputed.
 */
export function changedBucketsSql(sources: WaitSource[], periods: string[] = WAIT_PERIODS): string {
  const sets = periods.flatMap((period) => [
    `(organization_id, cluster_id, ${period}, initiative_id, wait)`,
    `(organization_id, cluster_id, ${period}, initiative_id, instance_type, wait)`,
  ]);
  return `SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id,
           gpucap_wait_bucket(wait) AS wait_bucket, sum(net)::bigint AS started_count,
           sum(net * wait)::bigint AS wait_seconds_sum, max(wait) FILTER (WHERE net > 0) AS added_max,
           bool_or(net < 0) AS removed
    FROM (
      SELECT organization_id,
             CASE ${periods.map((period) => `WHEN grouping(${period}) = 0 THEN '${period}'`).join(' ')} END AS period,
             CASE WHEN grouping(instance_type) = 0 THEN 'instance_type' ELSE 'none' END AS dimension,
             coalesce(${periods.join(', ')}) AS bucket_start, initiative_id,
             CASE WHEN grouping(instance_type) = 0 THEN instance_type ELSE '' END AS dimension_value,
             cluster_id, wait, sum(sign) AS net
      FROM (${signedWaitsSql(sources, periods)}) AS signed
      GROUP BY GROUPING SETS (${sets.join(',\n        ')})
      HAVING sum(sign) <> 0
    ) AS per_value
    GROUP BY organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, gpucap_wait_bucket(wait)`;
}

/**
 * The block rows of an organization (`$1`) whose blocks overlap [`$2`, `$3`), as the sums and largest
 * waits of their days' rows: what a rebuild writes once the days are right.
 */
export function blocksFromDaysSql(): string {
  const block = periodStartSql(WAIT_BLOCK.period, 'bucket_start');
  return `SELECT organization_id, '${WAIT_BLOCK.period}' AS period, dimension, ${block} AS bucket_start,
         initiative_id, dimension_value, cluster_id, wait_bucket, sum(started_count)::bigint AS started_count,
         sum(wait_seconds_sum)::bigint AS wait_seconds_sum, max(wait_seconds_max) AS wait_seconds_max
       FROM workload_period_waits
       WHERE organization_id = $1 AND period = 'day'
         AND bucket_start >= ${periodStartSql(WAIT_BLOCK.period, '$2::timestamptz')}
         AND bucket_start < $3::timestamptz + interval '${WAIT_BLOCK.days} days' AND ${block} < $3::timestamptz
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`;
}

const KEY_COLUMNS = [
  'organization_id',
  'period',
  'dimension',
  'bucket_start',
  'initiative_id',
  'dimension_value',
  'cluster_id',
  'wait_bucket',
];
const KEY_MATCH = KEY_COLUMNS.map((column) => `r.${column} = c.${column}`).join(' AND ');

/**
 * The upsert of what a statement's `sources` changed in the rows of `periods` (all unless narrowed):
 * counts and sums added, the largest raised.
 */
export function histogramUpsertSql(sources: WaitSource[], periods: string[] = WAIT_PERIODS): string {
  return `INSERT INTO workload_period_waits AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
    SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket,
           started_count, wait_seconds_sum, coalesce(added_max, 0)
    FROM (${changedBucketsSql(sources, periods)}) AS c
    WHERE started_count <> 0 OR wait_seconds_sum <> 0 OR removed
    ORDER BY organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket) DO UPDATE SET
      started_count = r.started_count + excluded.started_count,
      wait_seconds_sum = r.wait_seconds_sum + excluded.wait_seconds_sum,
      wait_seconds_max = greatest(r.wait_seconds_max, excluded.wait_seconds_max)`;
}

/** The body of a trigger function over `sources`; removals only where old rows exist. */
function histogramBody(sources: WaitSource[]): string {
  const upsert = `${histogramUpsertSql(sources)};`;
  if (sources.every((source) => source.sign > 0)) return upsert;
  // A removed wait may have been the row's largest: empty rows go, the others are recomputed, a day's
  // or hour's from the workloads of its key and bucket (one initiative's hour or day, by an index
  // range), then a block's from its days' rows.
  return `${upsert}
    DELETE FROM workload_period_waits r USING (${changedBucketsSql(sources)}) AS c
    WHERE c.removed AND ${KEY_MATCH} AND r.started_count = 0;
    UPDATE workload_period_waits r SET wait_seconds_max = (
      SELECT max(${waitSecondsSql('w')}::bigint) FROM workloads w
      WHERE w.organization_id = r.organization_id AND w.initiative_id = r.initiative_id AND w.cluster_id = r.cluster_id
        AND w.submitted_at >= r.bucket_start AND w.submitted_at < r.bucket_start + ${periodLengthSql('r.period')}
        AND w.started_at IS NOT NULL
        AND (r.dimension <> 'instance_type' OR w.instance_type = r.dimension_value)
        AND gpucap_wait_bucket(${waitSecondsSql('w')}) = r.wait_bucket)
    FROM (${changedBucketsSql(sources, ['day', 'hour'])}) AS c
    WHERE c.removed AND ${KEY_MATCH};
    UPDATE workload_period_waits r SET wait_seconds_max = c.largest
    FROM (
      SELECT ${KEY_COLUMNS.map((column) => `c.${column}`).join(', ')}, max(d.wait_seconds_max) AS largest
      FROM (${changedBucketsSql(sources, [WAIT_BLOCK.period])}) AS c
      JOIN workload_period_waits d ON d.organization_id = c.organization_id AND d.period = 'day'
        AND d.dimension = c.dimension AND d.initiative_id = c.initiative_id AND d.dimension_value = c.dimension_value
        AND d.cluster_id = c.cluster_id AND d.wait_bucket = c.wait_bucket
        AND d.bucket_start >= c.bucket_start AND d.bucket_start < c.bucket_start + ${periodLengthSql('c.period')}
      WHERE c.removed
      GROUP BY ${KEY_COLUMNS.map((column) => `c.${column}`).join(', ')}
    ) AS c
    WHERE ${KEY_MATCH};`;
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
