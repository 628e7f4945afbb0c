import { MigrationInterface, QueryRunner } from 'typeorm';

const METRICS = ['gpu_utilization', 'memory_utilization', 'temperature', 'power_usage'];

/** The sample columns of metric_aggregates that the block insert trigger writes. */
const AGGREGATE_COLUMNS = [
  'organization_id',
  'workload_id',
  'sample_count',
  'first_sampled_at',
  'latest_sampled_at',
  ...METRICS.flatMap((m) => [`${m}_sum`, `${m}_min`, `${m}_max`, `${m}_latest`]),
].join(', ');

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
 * A reading's value in integer cents when it is the float8 nearest to a number of cents below 1e13,
 * else null. float8 to numeric prints the value to 15 significant digits, and such a reading prints
 * as exactly that number: its numeric is the cents over 100.
 */
function cents(value: string): string {
  return `CASE WHEN abs(${value}) < 1e13 AND round(${value} * 100) / 100 = ${value} THEN round(${value} * 100)::bigint END`;
}

/**
 * sum(value::numeric), the same number with the same scale, without converting the readings that
 * are whole cents (`centsColumn`, from cents()): the conversion costs far more than the rest of a
 * block's summary. The scale is the largest any reading's numeric would have had (0, 1 or 2
 * decimals for cents), as a numeric sum's is.
 */
function exactSum(value: string, centsColumn: string): string {
  const others = `sum(${value}::numeric) FILTER (WHERE ${centsColumn} IS NULL)`;
  const centsScale = `max(CASE WHEN ${centsColumn} % 100 = 0 THEN 0 WHEN ${centsColumn} % 10 = 0 THEN 1 WHEN ${centsColumn} IS NOT NULL THEN 2 END)`;
  return `round(coalesce(sum(${centsColumn}), 0) * 0.01 + coalesce(${others}, 0),
                greatest(coalesce(${centsScale}, 0), coalesce(scale(${others}), 0)))`;
}

/**
 * Seals reach the last ended hour instead of the last ended day (src/import/sample-seal.ts), so
 * today's readings before the current hour are in today's day block too. A new organization has
 * no readings: its sealed history starts at the hour it was created, and the readings its first
 * import writes for earlier hours go straight to the blocks.
 *
 * The block insert trigger sums whole-cent readings as integer cents, blocks decode with a float8
 * running sum of their steps and encode their steps without subscripting: the same aggregates,
 * times and steps, written and read faster.
 */
export class HourlySeal1763800029000 implements MigrationInterface {
  name = 'HourlySeal1763800029000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(sealedFromNewOrganization('hour'));
    await queryRunner.query(blocksInsertedTrigger(true));
    await queryRunner.query(unpackSamples('float8'));
    await queryRunner.query(SAMPLE_STEPS_PAIRED);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(sealedFromNewOrganization('day'));
    await queryRunner.query(blocksInsertedTrigger(false));
    await queryRunner.query(unpackSamples('bigint'));
    await queryRunner.query(SAMPLE_STEPS_SUBSCRIPTED);
  }
}

/**
 * A block's readings with their times. The running sum of the steps in float8 is exact (a day has
 * fewer microseconds than 2^53) and cheap: a bigint sum is numeric, and numeric times an interval
 * converts through text on every reading.
 */
function unpackSamples(stepSum: 'float8' | 'bigint'): string {
  const step = stepSum === 'float8' ? 'u.step::float8' : 'u.step';
  return `
    CREATE OR REPLACE FUNCTION gpucap_unpack_samples(day_start timestamptz, step_us bigint[], g float8[], m float8[], t float8[], p float8[])
    RETURNS TABLE (sampled_at timestamptz, gpu_utilization float8, memory_utilization float8, temperature float8, power_usage float8)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT day_start + sum(${step}) OVER (ORDER BY u.i ROWS UNBOUNDED PRECEDING) * interval '1 microsecond', u.g, u.m, u.t, u.p
      FROM unnest(step_us, g, m, t, p) WITH ORDINALITY AS u(step, g, m, t, p, i)
    $fn$;`;
}

/**
 * A day's reading times as microsecond steps from the previous one (the first from the day's
 * start): each time paired with the one before it by one unnest of two arrays. Subscripting the
 * array once per reading decompressed it once per reading when it came in compressed.
 */
const SAMPLE_STEPS_PAIRED = `
  CREATE OR REPLACE FUNCTION gpucap_sample_steps(day_start timestamptz, times timestamptz[]) RETURNS bigint[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT array_agg(round(date_part('epoch', u.t - u.p) * 1000000)::bigint)
    FROM unnest(times, array_prepend(day_start, times[:cardinality(times) - 1])) AS u(t, p)
  $fn$;`;

const SAMPLE_STEPS_SUBSCRIPTED = `
  CREATE OR REPLACE FUNCTION gpucap_sample_steps(day_start timestamptz, times timestamptz[]) RETURNS bigint[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT array_agg(round(date_part('epoch', times[i] - CASE WHEN i = 1 THEN day_start ELSE times[i - 1] END) * 1000000)::bigint ORDER BY i)
    FROM generate_subscripts(times, 1) AS i
  $fn$;`;

function sealedFromNewOrganization(unit: 'hour' | 'day'): string {
  return `
    CREATE OR REPLACE FUNCTION gpucap_seal_watermark_new_organization() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO sample_seal_watermarks (organization_id, sealed_before)
      SELECT organization_id, date_trunc('${unit}', now(), 'UTC') FROM new_rows
      ON CONFLICT (organization_id) DO NOTHING;
      RETURN NULL;
    END
    $fn$;`;
}

/** INSERT on metric_sample_days: each block's summary read straight off its arrays. */
function blocksInsertedTrigger(withCents: boolean): string {
  const sum = (m: string) => (withCents ? exactSum(`u.${m}`, `u.${m}_cents`) : `sum(u.${m}::numeric)`);
  const centsColumns = withCents ? METRICS.map((m) => `, ${cents(`u.${m}`)} AS ${m}_cents`).join('') : '';
  return `
    CREATE OR REPLACE FUNCTION gpucap_sample_days_inserted() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $fn$
    BEGIN
      IF gpucap_sealing() THEN
        RETURN NULL;
      END IF;
      INSERT INTO metric_aggregates AS a (${AGGREGATE_COLUMNS})
      SELECT b.organization_id, b.workload_id, sum(b.n)::bigint, min(b.first_at), max(b.last_at),
             ${METRICS.map(
               (m) =>
                 `sum(b.${m}_sum), min(b.${m}_min), max(b.${m}_max), (array_agg(b.${m}_last ORDER BY b.last_at DESC))[1]`,
             ).join(',\n             ')}
      FROM new_rows d CROSS JOIN LATERAL (
        SELECT d.organization_id, d.workload_id, count(*) AS n,
               d.day_start + d.step_us[1] * interval '1 microsecond' AS first_at,
               d.day_start + sum(u.st) * interval '1 microsecond' AS last_at,
               ${METRICS.map(
                 (m) =>
                   `${sum(m)} AS ${m}_sum, min(u.${m}) AS ${m}_min, max(u.${m}) AS ${m}_max, d.${m}[cardinality(d.step_us)] AS ${m}_last`,
               ).join(',\n               ')}
        -- OFFSET 0 keeps the subquery: each reading's cents are computed once, not per use.
        FROM (
          SELECT u.*${centsColumns}
          FROM unnest(d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage)
            AS u(st, gpu_utilization, memory_utilization, temperature, power_usage)
          OFFSET 0
        ) u
      ) b
      GROUP BY b.organization_id, b.workload_id
      ${MERGE_AGGREGATES};
      RETURN NULL;
    END
    $fn$;`;
}
