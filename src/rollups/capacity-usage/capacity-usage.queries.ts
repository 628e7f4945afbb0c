import { GPU_SHARE_UNITS } from '../../common/gpu-sharing';
import { aggregateLookupSql, idleSharesSql } from '../metric-aggregates/metric-aggregates.queries';

/*
 * What readers take of the capacity usage rollup: GPU-time as exact integers, and the use from a
 * UTC midnight up to any instant (a cut), read from the daily and hourly rows and the raw runs of
 * the cut's own hour (docs/architecture.md, "Capacity's edge instants").
 */

/**
 * GPU-microseconds of `gpus` share units held over [from, to) (constant SQL, never input). Float
 * epoch arithmetic (numeric `extract` costs more per row), rounded to whole microseconds, times the
 * units as numeric: every amount is then an integer, as the rollups' are, and sums of them are
 * exact, so a first day taken whole less the morning before the window nets to exactly 0 for a
 * group that used nothing after it, and seven 1g instances make exactly one GPU.
 */
export function gpuMicrosecondsSql(gpus: string, from: string, to: string): string {
  return `${gpus}::numeric * round(date_part('epoch', ${to} - ${from}) * 1e6)::numeric`;
}

/**
 * Summed share-unit microseconds as GPU-hours: units first (exact for whole GPUs, so their figures
 * are the float division they always were), then the float division by an hour's microseconds.
 */
export function gpuHoursSql(unitMicroseconds: string): string {
  return `(${unitMicroseconds} / ${GPU_SHARE_UNITS})::float8 / 3.6e9`;
}

/**
 * What a read takes beside each GPU-time amount: its sampled and busy parts (the idle figures), and
 * with them its energy (the run's energy spread over its GPU-time, gpucap_energy_share): the prefixes
 * of the rollups' columns.
 */
export type UsageParts = readonly ('sampled_' | 'busy_' | 'energy_')[];
export const NO_PARTS: UsageParts = [];
export const IDLE_PARTS: UsageParts = ['sampled_', 'busy_'];
export const IDLE_AND_ENERGY_PARTS: UsageParts = ['sampled_', 'busy_', 'energy_'];

/** The names of `parts` as columns of a usage row: sampled_us, busy_us, energy_us. */
export function partColumns(parts: UsageParts): string[] {
  return parts.map((part) => `${part}us`);
}

/**
 * The parts of `us` GPU-microseconds of finished workload `w` (its aggregate aliased `a`), or with
 * `runningUntil` (a placeholder: now) of running workload `w`, whose energy is its samples' so far
 * (its aggregate's) over its GPU-time so far.
 */
export function usagePartsSql(us: string, parts: UsageParts, runningUntil?: string): string[] {
  const [sampled, busy] = idleSharesSql(`(${us})::numeric`, 'a');
  const energy = runningUntil
    ? `gpucap_energy_share((${us})::numeric, a.energy_microjoules, w.gpu_share_units, w.started_at, ${runningUntil}::timestamptz)`
    : `gpucap_energy_share((${us})::numeric, w.energy_microjoules, w.gpu_share_units, w.started_at, w.completed_at)`;
  return parts.map((part) => (part === 'sampled_' ? sampled : part === 'busy_' ? busy : energy));
}

const AGGREGATE_OF_WORKLOAD_SQL = aggregateLookupSql('w', 'a');

/**
 * The cuts (`instants`: the placeholder of their instants) with what reading G at them needs: the UTC day and hour they fall
 * in, whether they fall on the hour, and their offset from midnight in microseconds.
 */
export function cutsSql(instants: string): string {
  return `SELECT (c.ordinal - 1)::int AS cut_index, c.at, t.at_utc::date AS day,
              extract(hour FROM t.at_utc)::int AS hour, date_trunc('hour', t.at_utc) = t.at_utc AS on_hour,
              t.at_utc::date::timestamp AT TIME ZONE 'UTC' AS day_start,
              date_trunc('hour', t.at_utc) AT TIME ZONE 'UTC' AS hour_start,
              (date_trunc('hour', t.at_utc) + interval '1 hour') AT TIME ZONE 'UTC' AS hour_end,
              (extract(epoch FROM t.at_utc - t.at_utc::date::timestamp) * 1000000)::bigint AS offset_us
       FROM unnest(${instants}::timestamptz[]) WITH ORDINALITY AS c (at, ordinal)
       CROSS JOIN LATERAL (SELECT c.at AT TIME ZONE 'UTC' AS at_utc) AS t`;
}

/**
 * A bucket's use from midnight up to cut `c` (its columns prefixed `prefix`: '', or a part's): whole
 * when it ended before the cut's hour, else held from its start to the cut. Exact integers (numeric
 * for busy and energy) until the final float.
 */
function bucketUsageSql(prefix: string): string {
  return `(CASE WHEN h.end_hour < c.hour THEN h.${prefix}gpu_microseconds
                ELSE h.${prefix}gpus * c.offset_us::numeric - h.${prefix}gpu_start_offset END)::numeric`;
}

/** A raw run's GPU-microseconds from `from` up to the cut, with its `parts`. */
function rawUsageSql(from: string, parts: UsageParts): string {
  const us = gpuMicrosecondsSql('w.gpu_share_units', from, 'least(w.completed_at, c.at)');
  return [us, ...usagePartsSql(us, parts)].join(', ');
}

/**
 * G at each cut of `cuts` (a CTE of cutsSql) per initiative and instance type, for the organization
 * bound at `organization` and the rows `inScope` lets through (its filter on a table alias): (cut_index,
 * initiative_id, instance_type, us, and the columns of `parts`). Each cut reads its own day's rows by
 * index (OFFSET 0, or the buckets' GROUP BY, keeps the planner from hashing a whole rollup for a
 * few dozen cuts, and, with an initiative filter, from scanning that initiative's ~100k workloads
 * at 1M rather than one hour of runs: 200 ms against 1 ms). From midnight to the cut, in hour k:
 * - runs spanning the day: their GPUs (daily rollup) × the cut's offset;
 * - the others' buckets (hourly rollup) that start before hour k, except those ending inside it,
 *   summed per initiative and instance type inside the cut's own read (a few hundred buckets a day
 *   become a few dozen rows before the outer grouping: the usage statement 17.4 → 15.6 ms at 1M);
 * - raw rows, only when the cut is not on the hour: runs starting in hour k before the cut (after
 *   midnight) and runs ending in hour k that started before it (or at or before midnight), each an
 *   index range of one hour.
 */
export function usageToCutsSql(
  parts: UsageParts,
  organization: string,
  inScope: (alias: string) => string,
): string {
  const spanning = ['', ...parts]
    .map((prefix) => `r.${prefix}spanning_gpus * c.offset_us::numeric`)
    .join(',\n              ');
  const aggregate = parts.length > 0 ? AGGREGATE_OF_WORKLOAD_SQL : '';
  const sums = ['', ...parts].map((prefix) => `sum(${bucketUsageSql(prefix)})`).join(',\n              ');
  // Only the finished-run indexes' columns, so the burn-down's reads are index-only.
  const runColumns = ['initiative_id', 'instance_type', 'gpu_share_units', 'started_at', 'completed_at']
    .concat(parts.length > 0 ? ['organization_id', 'workload_id'] : [])
    .concat(parts.includes('energy_') ? ['energy_microjoules'] : [])
    .map((column) => `w.${column}`)
    .join(', ');
  return `
         SELECT c.cut_index, r.initiative_id, r.instance_type, ${spanning}
         FROM cuts c
         CROSS JOIN LATERAL (
           SELECT * FROM capacity_usage_daily r
           WHERE r.organization_id = ${organization} AND r.usage_day = c.day AND r.spanning_gpus <> 0 AND ${inScope('r')}
           OFFSET 0
         ) r
         UNION ALL
         SELECT c.cut_index, h.*
         FROM cuts c
         CROSS JOIN LATERAL (
           SELECT h.initiative_id, h.instance_type, ${sums}
           FROM capacity_usage_hourly h
           WHERE h.organization_id = ${organization} AND h.usage_day = c.day AND h.start_hour < c.hour
             AND (h.end_hour <> c.hour OR c.on_hour) AND ${inScope('h')}
           GROUP BY h.initiative_id, h.instance_type
         ) h
         UNION ALL
         SELECT c.cut_index, w.initiative_id, w.instance_type, ${rawUsageSql('w.started_at', parts)}
         FROM cuts c
         CROSS JOIN LATERAL (
           SELECT ${runColumns} FROM workloads w
           WHERE w.organization_id = ${organization} AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
             AND w.started_at >= c.hour_start AND w.started_at < c.at AND w.started_at > c.day_start
             AND ${inScope('w')}
           OFFSET 0
         ) w
         ${aggregate}
         UNION ALL
         SELECT c.cut_index, w.initiative_id, w.instance_type, ${rawUsageSql('greatest(w.started_at, c.day_start)', parts)}
         FROM cuts c
         CROSS JOIN LATERAL (
           SELECT ${runColumns} FROM workloads w
           WHERE w.organization_id = ${organization} AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
             AND w.completed_at >= c.hour_start AND w.completed_at < c.hour_end AND w.completed_at > c.day_start
             AND (w.started_at < c.hour_start OR w.started_at <= c.day_start) AND ${inScope('w')}
           OFFSET 0
         ) w
         ${aggregate}
         WHERE NOT c.on_hour`;
}
