import { defineFunction, defineTrigger, type Definition } from '../../database/definitions/definition';
import { settleWorkloadEnergyIfAnySql } from '../workload-energy/workload-energy.definitions';

/*
 * Energy and carbon per workload, kept in metric_aggregates by the samples' triggers (docs/api.md,
 * "Energy and carbon"; docs/architecture.md, "Rollups"). A reading's power holds until the workload's next reading, for at
 * most its organization's max_sample_gap_seconds (the cap); that held part is
 * power × held microseconds (µJ), and its carbon µJ × pue × grams CO2e per kWh of the carbon intensity
 * period of the workload's cluster covering the reading's time. The aggregate holds the parts of every
 * reading but the last; the last holds until completed_at (within the cap), added where read
 * (gpucap_energy_tail_microjoules). Every amount is an exact numeric, so what a change subtracts is
 * exactly what was added:
 *
 * - readings appended after a workload's latest add the previous latest's part (now known) and the
 *   new readings' parts but the last, from the statement's rows alone;
 * - any other change re-settles its window (gpucap_energy_resettle): the parts of the readings from
 *   one cap before the earliest changed time to the latest, before (the stored readings less what the
 *   statement added, plus what it removed) against after;
 * - a change of intensity periods, of a workload's cluster or of the cap re-settles the parts it
 *   touches from the stored readings (pruned readings keep what they were settled with).
 *
 * An INSERT … ON CONFLICT DO UPDATE fires its UPDATE statement triggers first, which already see the
 * inserted readings: while a sample INSERT runs (gpucap.sample_insert, set by a BEFORE trigger), the
 * UPDATE triggers leave their energy changes in gpucap_pending_sample_changes, and the INSERT
 * triggers settle them with the inserted readings as one change. A seal (gpucap.sealing) moves
 * readings and changes nothing.
 */

/** The energy columns of metric_aggregates, in the order the deltas are produced. */
export const ENERGY_COLUMNS = [
  'energy_microjoules',
  'carbon_microjoule_grams_per_kwh',
  'uncovered_microjoules',
] as const;

/** A statement's changes to the readings, left by an upsert's UPDATE triggers for its INSERT triggers. */
export const PENDING_SAMPLE_CHANGES = 'gpucap_pending_sample_changes';

/** ON CONFLICT assignments adding the deltas of `excluded` to the aggregate `a`. */
export const ENERGY_CONFLICT_SET = ENERGY_COLUMNS.map(
  (column) => `${column} = a.${column} + excluded.${column}`,
).join(',\n      ');

/**
 * A reading's power `u.p` in whole cents (bigint), when it is one (what collectors report), else null.
 * Below 1e6 W a cent's float reads back as that cent (`p::numeric` is cents / 100), and cents × any
 * held microseconds of one day fit a bigint.
 */
export const WATT_CENTS_SQL =
  'CASE WHEN abs(u.p) < 1e6 AND round(u.p * 100) / 100 = u.p THEN round(u.p * 100)::bigint END';

/**
 * Σ power × held microseconds over rows of `alias` (p: watts, held: µs, cents: WATT_CENTS_SQL), the
 * exact value of Σ p::numeric × held: whole cents multiply and add as integers, other powers convert
 * one by one (a numeric conversion per reading costs more than the trigger's other work on a block).
 */
export function heldEnergySql(alias: string): string {
  return `coalesce(sum(${alias}.cents * ${alias}.held), 0) * 0.01
              + coalesce(sum(${alias}.p::numeric * ${alias}.held) FILTER (WHERE ${alias}.cents IS NULL), 0)`;
}

/** Whether an INSERT into a sample store is under way in this statement (its BEFORE trigger ran). */
export const SAMPLE_INSERT_RUNNING_SQL = "coalesce(current_setting('gpucap.sample_insert', true), '') = 'on'";

/** Clears the flag the BEFORE trigger set: the INSERT's AFTER triggers run. */
export const SAMPLE_INSERT_DONE_SQL = "PERFORM set_config('gpucap.sample_insert', '', true)";

/**
 * The changes that matter to energy between the readings `removed` and `added` (relations with
 * organization_id, workload_id, sampled_at, power_usage): a reading rewritten with the same time and
 * power changes nothing. Rows: sign (1 added, -1 removed), organization_id, workload_id, sampled_at,
 * power_usage.
 */
export function energyChangesSql(added: string, removed: string): string {
  const columns = 'organization_id, workload_id, sampled_at, power_usage';
  return `SELECT 1 AS sign, ${columns} FROM (SELECT ${columns} FROM ${added} EXCEPT ALL SELECT ${columns} FROM ${removed}) AS added
    UNION ALL
    SELECT -1, ${columns} FROM (SELECT ${columns} FROM ${removed} EXCEPT ALL SELECT ${columns} FROM ${added}) AS removed`;
}

/** Leaves `changes` (energyChangesSql's rows) for the INSERT triggers of the same statement. */
export function pendSampleChangesSql(changes: string): string {
  return `INSERT INTO ${PENDING_SAMPLE_CHANGES} (sign, organization_id, workload_id, sampled_at, power_usage)
        SELECT sign, organization_id, workload_id, sampled_at, power_usage FROM (${changes}) AS pending`;
}

/**
 * CTEs (to follow a WITH or another CTE) that end in `energy`: per workload the deltas of
 * ENERGY_COLUMNS that `changes` (energyChangesSql's rows, with the stores already changed) make.
 * Appended readings are settled from the changes alone; other workloads re-settle their window.
 * The previous aggregate is read as the statement found it: in UPDATE and DELETE triggers, whose
 * changes remove readings, it is never used. `computed`: whether `changes` costs more to compute
 * again (an EXCEPT ALL) than to copy (a transition table).
 */
export function energyDeltasSql(changes: string, computed = true): string {
  return `energy_changes AS ${computed ? '' : 'NOT '}MATERIALIZED (${changes}),
        energy_targets AS MATERIALIZED (
          SELECT s.organization_id, s.workload_id, s.low, s.high, w.cluster_id, o.max_sample_gap_seconds AS cap,
                 p.latest_sampled_at AS previous_at, p.power_usage_latest AS previous_power,
                 s.only_added AND (p.latest_sampled_at IS NULL OR s.low > p.latest_sampled_at) AS appended
          FROM (SELECT organization_id, workload_id, min(sampled_at) AS low, max(sampled_at) AS high,
                       bool_and(sign > 0) AS only_added
                FROM energy_changes GROUP BY organization_id, workload_id) AS s
          JOIN organizations o ON o.organization_id = s.organization_id
          LEFT JOIN workloads w ON w.organization_id = s.organization_id AND w.workload_id = s.workload_id
          LEFT JOIN metric_aggregates p ON p.organization_id = s.organization_id AND p.workload_id = s.workload_id
        ),
        -- One look at the periods per cluster: a statement appends a few readings to many workloads.
        energy_periods AS MATERIALIZED (
          SELECT k.organization_id, k.cluster_id, c.froms, c.tos, c.intensities
          FROM (SELECT organization_id, cluster_id, min(least(previous_at, low)) AS low, max(high) AS high
                FROM energy_targets WHERE appended GROUP BY organization_id, cluster_id) AS k
          CROSS JOIN LATERAL gpucap_carbon_periods(k.organization_id, k.cluster_id, k.low, k.high) c
        ),
        -- Appended: each new reading holds until the next, and the previous latest until the first.
        energy_appended_parts AS (
          SELECT c.organization_id, c.workload_id, t.cluster_id, c.sampled_at, c.power_usage AS p,
                 gpucap_held_microseconds(c.sampled_at,
                   lead(c.sampled_at) OVER (PARTITION BY c.organization_id, c.workload_id ORDER BY c.sampled_at), t.cap) AS held
          FROM energy_changes c
          JOIN energy_targets t ON t.organization_id = c.organization_id AND t.workload_id = c.workload_id
          WHERE t.appended
          UNION ALL
          SELECT organization_id, workload_id, cluster_id, previous_at, previous_power,
                 gpucap_held_microseconds(previous_at, low, cap)
          FROM energy_targets WHERE appended AND previous_at IS NOT NULL
        ),
        -- Summed per intensity period before they are weighed: a conversion per reading costs.
        energy_appended AS (
          SELECT x.organization_id, x.workload_id, x.cluster_id, x.period, x.covered, ${heldEnergySql('x')} AS microjoules
          FROM (SELECT u.*, ${WATT_CENTS_SQL} AS cents, k.period,
                       k.period > 0 AND (c.tos[k.period] IS NULL OR u.sampled_at < c.tos[k.period]) AS covered
                FROM energy_appended_parts u
                LEFT JOIN energy_periods c ON c.organization_id = u.organization_id AND c.cluster_id = u.cluster_id
                CROSS JOIN LATERAL (SELECT coalesce(width_bucket(u.sampled_at, c.froms), 0) AS period) AS k
                WHERE u.held IS NOT NULL) AS x
          GROUP BY x.organization_id, x.workload_id, x.cluster_id, x.period, x.covered
        ),
        energy AS (
          SELECT a.organization_id, a.workload_id, sum(a.microjoules) AS energy_microjoules,
                 coalesce(sum(a.microjoules * c.intensities[a.period]) FILTER (WHERE a.covered), 0) AS carbon_microjoule_grams_per_kwh,
                 coalesce(sum(a.microjoules) FILTER (WHERE NOT a.covered), 0) AS uncovered_microjoules
          FROM energy_appended a
          LEFT JOIN energy_periods c ON c.organization_id = a.organization_id AND c.cluster_id = a.cluster_id
          GROUP BY a.organization_id, a.workload_id
          UNION ALL
          SELECT t.organization_id, t.workload_id, r.*
          FROM (SELECT c.organization_id, c.workload_id, array_agg(c.sampled_at) AS times, array_agg(c.sign) AS signs,
                       array_agg(c.power_usage) AS powers
                FROM energy_changes c
                JOIN energy_targets t ON t.organization_id = c.organization_id AND t.workload_id = c.workload_id
                WHERE NOT t.appended
                GROUP BY c.organization_id, c.workload_id) AS g
          JOIN energy_targets t ON t.organization_id = g.organization_id AND t.workload_id = g.workload_id
          CROSS JOIN LATERAL gpucap_energy_resettle(t.organization_id, t.workload_id, t.cluster_id, t.cap, g.times, g.signs, g.powers) r
        )`;
}

/** SET assignments adding the energy columns of `deltas` to the aggregate `a`. */
function addDeltasSql(deltas: string): string {
  return ENERGY_COLUMNS.map((column) => `${column} = a.${column} + ${deltas}.${column}`).join(', ');
}

/** The arrays of gpucap_carbon_periods under a prefix: `previous_froms, previous_tos, …`. */
const CHANGED_PERIODS = ['froms', 'tos', 'intensities'];
const periodArrays = (prefix: string) => CHANGED_PERIODS.map((name) => `${prefix}_${name}`).join(', ');

/**
 * A re-weighing's deltas over held parts `h`, from the periods under prefix `before` to those under
 * `after` (periodArrays): the carbon each part gains, and the uncovered energy, as `carbon` and `uncovered`.
 */
function reweighedSql(before: string, after: string): string {
  const intensity = (prefix: string) => `gpucap_intensity_in(${periodArrays(prefix)}, h.sampled_at)`;
  return `coalesce(sum(h.microjoules * (coalesce(${intensity(after)}, 0) - coalesce(${intensity(before)}, 0))), 0) AS carbon,
               coalesce(sum(h.microjoules * ((${intensity(before)} IS NOT NULL)::int - (${intensity(after)} IS NOT NULL)::int)), 0) AS uncovered`;
}

/** Adds the CTE `deltas` of reweighedSql to the aggregates whose carbon or uncovered energy moved. */
const REWEIGH_SQL = `UPDATE metric_aggregates a
      SET carbon_microjoule_grams_per_kwh = a.carbon_microjoule_grams_per_kwh + d.carbon,
          uncovered_microjoules = a.uncovered_microjoules + d.uncovered
      FROM deltas d
      WHERE a.organization_id = d.organization_id AND a.workload_id = d.workload_id AND (d.carbon <> 0 OR d.uncovered <> 0);`;

/** Per cluster, the span a statement's changed periods cover. */
const CHANGED_SPAN_SQL = "min(effective_from) AS low, max(coalesce(effective_to, 'infinity')) AS high";

/** The changes of one carbon_intensities statement, by event: the transition tables it has. */
const INTENSITY_EVENTS = [
  {
    event: 'INSERT',
    referencing: 'NEW TABLE AS new_rows',
    changed: 'SELECT 1 AS sign, * FROM new_rows',
  },
  {
    event: 'UPDATE',
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
    changed: `SELECT 1 AS sign, * FROM (SELECT * FROM new_rows EXCEPT ALL SELECT * FROM old_rows) AS added
              UNION ALL SELECT -1, * FROM (SELECT * FROM old_rows EXCEPT ALL SELECT * FROM new_rows) AS removed`,
  },
  { event: 'DELETE', referencing: 'OLD TABLE AS old_rows', changed: 'SELECT -1 AS sign, * FROM old_rows' },
];

/** The changes of one workloads statement to the clusters of workloads: (organization, workload, old, new). */
const CLUSTER_EVENTS = [
  {
    event: 'INSERT',
    referencing: 'NEW TABLE AS new_rows',
    moved:
      'SELECT organization_id, workload_id, NULL::text AS old_cluster, cluster_id AS new_cluster FROM new_rows',
  },
  {
    event: 'UPDATE',
    referencing: 'OLD TABLE AS old_rows NEW TABLE AS new_rows',
    // Grouped, not a join of the two tables: hashed whatever their sizes, never a nested loop.
    moved: `SELECT organization_id, workload_id, min(cluster_id) FILTER (WHERE side < 0) AS old_cluster,
                   min(cluster_id) FILTER (WHERE side > 0) AS new_cluster
            FROM (SELECT 1 AS side, organization_id, workload_id, cluster_id FROM new_rows
                  UNION ALL SELECT -1, organization_id, workload_id, cluster_id FROM old_rows) AS sides
            GROUP BY organization_id, workload_id
            HAVING min(cluster_id) FILTER (WHERE side < 0) IS DISTINCT FROM min(cluster_id) FILTER (WHERE side > 0)`,
  },
  {
    event: 'DELETE',
    referencing: 'OLD TABLE AS old_rows',
    moved:
      'SELECT organization_id, workload_id, cluster_id AS old_cluster, NULL::text AS new_cluster FROM old_rows',
  },
];

export const energyDefinitions: Definition[] = [
  // Microseconds from a reading to `to_at`, at most the cap, never negative (a reading after the end
  // holds nothing); null without `to_at` (least and greatest would take the cap for it).
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_held_microseconds(from_at timestamp with time zone, to_at timestamp with time zone, cap_seconds integer) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN to_at - from_at IS NOT NULL
                THEN greatest(0, least(round(date_part('epoch', to_at - from_at) * 1e6)::bigint, cap_seconds * 1000000::bigint)) END
    $$`),
  // What every reader adds to energy_microjoules: a finished workload's last reading held until completed_at.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_energy_tail_microjoules(latest_sampled_at timestamp with time zone, power_usage_latest double precision, completed_at timestamp with time zone, cap_seconds integer) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(power_usage_latest::numeric * gpucap_held_microseconds(latest_sampled_at, completed_at, cap_seconds), 0)
    $$`),
  // The intensity (pue × g/kWh) of the period covering `at` in arrays from gpucap_carbon_periods; null when none does.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_intensity_in(froms timestamp with time zone[], tos timestamp with time zone[], intensities numeric[], at timestamp with time zone) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN width_bucket(at, froms) > 0 AND (tos[width_bucket(at, froms)] IS NULL OR at < tos[width_bucket(at, froms)])
                THEN intensities[width_bucket(at, froms)] END
    $$`),
  // plpgsql, not sql: these are called per row, and a SQL function that is not inlined is planned on every call.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_carbon_periods(org text, cluster text, low timestamp with time zone, high timestamp with time zone,
        OUT froms timestamp with time zone[], OUT tos timestamp with time zone[], OUT intensities numeric[])
      LANGUAGE plpgsql STABLE AS $$
    BEGIN
      -- Periods never overlap: the one starting last at or before low, and those starting up to high.
      SELECT array_agg(c.effective_from ORDER BY c.effective_from), array_agg(c.effective_to ORDER BY c.effective_from),
             array_agg(c.pue * c.grams_co2e_per_kwh ORDER BY c.effective_from)
        INTO froms, tos, intensities
      FROM carbon_intensities c
      WHERE c.organization_id = org AND c.cluster_id = cluster AND c.effective_from <= high
        AND c.effective_from >= coalesce((SELECT p.effective_from FROM carbon_intensities p
                                          WHERE p.organization_id = org AND p.cluster_id = cluster AND p.effective_from <= low
                                          ORDER BY p.effective_from DESC LIMIT 1), low);
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_carbon_intensity_at(org text, cluster text, at timestamp with time zone) RETURNS numeric LANGUAGE plpgsql STABLE AS $$
    DECLARE
      intensity numeric;
    BEGIN
      SELECT CASE WHEN c.effective_to IS NULL OR at < c.effective_to THEN c.pue * c.grams_co2e_per_kwh END INTO intensity
      FROM carbon_intensities c
      WHERE c.organization_id = org AND c.cluster_id = cluster AND c.effective_from <= at
      ORDER BY c.effective_from DESC LIMIT 1;
      RETURN intensity;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_after_exists(org text, wl text, after timestamp with time zone) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
    BEGIN
      RETURN EXISTS (SELECT 1 FROM metric_samples m WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at > after)
          OR EXISTS (SELECT 1 FROM metric_sample_days d
                     WHERE d.organization_id = org AND d.workload_id = wl AND d.day_start >= date_trunc('day', after, 'UTC')
                       AND d.day_start + (SELECT sum(s) FROM unnest(d.step_us) s) * interval '1 microsecond' > after);
    END
    $$`),
  // The held parts of a workload's stored readings in [low, high] with a cap: the next reading is
  // looked for up to one cap past high, and one beyond that means the whole cap.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_held_parts(org text, wl text, low timestamp with time zone, high timestamp with time zone, cap_seconds integer)
      RETURNS TABLE(sampled_at timestamp with time zone, microjoules numeric) LANGUAGE sql STABLE AS $$
    SELECT s.sampled_at,
           s.power_usage::numeric * coalesce(gpucap_held_microseconds(s.sampled_at, s.next_at, cap_seconds),
             CASE WHEN gpucap_sample_after_exists(org, wl, high + cap_seconds * interval '1 second')
                  THEN cap_seconds * 1000000::bigint ELSE 0 END)
    FROM (SELECT w.sampled_at, w.power_usage, lead(w.sampled_at) OVER (ORDER BY w.sampled_at) AS next_at
          FROM gpucap_workload_samples(org, wl, low, high + cap_seconds * interval '1 second') w) AS s
    WHERE s.sampled_at <= high
    $$`),
  // Energy, carbon and uncovered energy of the held parts of a workload's stored readings in [low, high].
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_held_energy(org text, wl text, cluster text, cap_seconds integer, low timestamp with time zone, high timestamp with time zone,
        OUT energy_microjoules numeric, OUT carbon_microjoule_grams_per_kwh numeric, OUT uncovered_microjoules numeric)
      LANGUAGE plpgsql STABLE AS $$
    DECLARE
      periods record;
    BEGIN
      SELECT * INTO periods FROM gpucap_carbon_periods(org, cluster, low, high);
      SELECT coalesce(sum(p.microjoules), 0), coalesce(sum(p.microjoules * p.intensity), 0),
             coalesce(sum(p.microjoules) FILTER (WHERE p.intensity IS NULL), 0)
        INTO energy_microjoules, carbon_microjoule_grams_per_kwh, uncovered_microjoules
      FROM (SELECT h.microjoules, gpucap_intensity_in(periods.froms, periods.tos, periods.intensities, h.sampled_at) AS intensity
            FROM gpucap_held_parts(org, wl, low, high, cap_seconds) h) AS p;
    END
    $$`),
  // The latest stored reading before `before`: rows, or the last of the two latest blocks before it.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_before(org text, wl text, before timestamp with time zone,
        OUT found_at timestamp with time zone, OUT found_power double precision)
      LANGUAGE plpgsql STABLE AS $$
    BEGIN
      SELECT s.sampled_at, s.power_usage INTO found_at, found_power
      FROM ((SELECT m.sampled_at, m.power_usage FROM metric_samples m
             WHERE m.organization_id = org AND m.workload_id = wl AND m.sampled_at < before
             ORDER BY m.sampled_at DESC LIMIT 1)
            UNION ALL
            (SELECT u.sampled_at, u.power_usage
             FROM (SELECT * FROM metric_sample_days d
                   WHERE d.organization_id = org AND d.workload_id = wl AND d.day_start < before
                   ORDER BY d.day_start DESC LIMIT 2) AS d
             CROSS JOIN LATERAL gpucap_unpack_samples(d.day_start, d.step_us, d.gpu_utilization, d.memory_utilization, d.temperature, d.power_usage) u
             WHERE u.sampled_at < before ORDER BY u.sampled_at DESC LIMIT 1)) AS s
      ORDER BY s.sampled_at DESC LIMIT 1;
    END
    $$`),
  // What a statement's changes (times, signs, powers: energyChangesSql's rows of one workload) did to
  // its parts: the window from one cap before the earliest change to the latest, after less before.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_energy_resettle(org text, wl text, cluster text, cap_seconds integer,
        times timestamp with time zone[], signs integer[], powers double precision[],
        OUT energy_microjoules numeric, OUT carbon_microjoule_grams_per_kwh numeric, OUT uncovered_microjoules numeric)
      LANGUAGE plpgsql STABLE AS $$
    DECLARE
      cap interval := cap_seconds * interval '1 second';
      low timestamptz;
      high timestamptz;
      later boolean;
      periods record;
      after_now boolean;
      after_before boolean;
      previous record;
      part numeric;
      intensity numeric;
    BEGIN
      SELECT min(t) - cap, max(t) INTO low, high FROM unnest(times) t;
      -- Unchanged beyond the window: a reading there makes the last one in it hold the whole cap.
      later := gpucap_sample_after_exists(org, wl, high + cap);
      SELECT * INTO periods FROM gpucap_carbon_periods(org, cluster, low, high);
      WITH stored AS MATERIALIZED (
        SELECT s.sampled_at, s.power_usage FROM gpucap_workload_samples(org, wl, low, high + cap) s
      ),
      changes AS (SELECT * FROM unnest(times, signs, powers) AS c(sampled_at, sign, power_usage)),
      sequences AS (
        SELECT 1 AS side, sampled_at, power_usage FROM stored
        UNION ALL
        SELECT -1, s.sampled_at, s.power_usage FROM stored s
        WHERE NOT EXISTS (SELECT 1 FROM changes c WHERE c.sign > 0 AND c.sampled_at = s.sampled_at)
        UNION ALL
        SELECT -1, sampled_at, power_usage FROM changes WHERE sign < 0
      ),
      parts AS (
        SELECT q.side, q.sampled_at,
               q.power_usage::numeric * coalesce(gpucap_held_microseconds(q.sampled_at, q.next_at, cap_seconds),
                 CASE WHEN later THEN cap_seconds * 1000000::bigint ELSE 0 END) AS microjoules
        FROM (SELECT s.*, lead(s.sampled_at) OVER (PARTITION BY s.side ORDER BY s.sampled_at) AS next_at FROM sequences s) q
        WHERE q.sampled_at <= high
      )
      SELECT coalesce(sum(p.side * p.microjoules), 0), coalesce(sum(p.side * p.microjoules * p.intensity), 0),
             coalesce(sum(p.side * p.microjoules) FILTER (WHERE p.intensity IS NULL), 0),
             coalesce((SELECT bool_or(q.side > 0) FROM sequences q), false), coalesce((SELECT bool_or(q.side < 0) FROM sequences q), false)
        INTO energy_microjoules, carbon_microjoule_grams_per_kwh, uncovered_microjoules, after_now, after_before
      FROM (SELECT parts.*, gpucap_intensity_in(periods.froms, periods.tos, periods.intensities, parts.sampled_at) AS intensity
            FROM parts) AS p;
      -- The reading before the window held the whole cap if any reading followed it, else nothing:
      -- it changes only when the statement left no reading after it, or gave it the first one.
      IF NOT later AND after_now <> after_before THEN
        SELECT * INTO previous FROM gpucap_sample_before(org, wl, low);
        IF previous.found_at IS NOT NULL THEN
          part := previous.found_power::numeric * cap_seconds * 1000000::bigint * CASE WHEN after_now THEN 1 ELSE -1 END;
          intensity := gpucap_carbon_intensity_at(org, cluster, previous.found_at);
          energy_microjoules := energy_microjoules + part;
          carbon_microjoule_grams_per_kwh := carbon_microjoule_grams_per_kwh + coalesce(part * intensity, 0);
          uncovered_microjoules := uncovered_microjoules + CASE WHEN intensity IS NULL THEN part ELSE 0 END;
        END IF;
      END IF;
    END
    $$`),
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_insert_begin() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF to_regclass('pg_temp.${PENDING_SAMPLE_CHANGES}') IS NULL THEN
        CREATE TEMPORARY TABLE ${PENDING_SAMPLE_CHANGES} (sign integer, organization_id text, workload_id text,
          sampled_at timestamptz, power_usage double precision) ON COMMIT DELETE ROWS;
      END IF;
      PERFORM set_config('gpucap.sample_insert', 'on', true);
      RETURN NULL;
    END
    $$`),
  // Each changed period adds its intensity to the parts it covers and takes its old one away: periods
  // of one cluster never overlap, so the changes of an upsert's UPDATE and INSERT parts simply add up.
  ...INTENSITY_EVENTS.map(({ event, changed }) =>
    defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_carbon_resettle_${event.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      WITH changed AS (
        SELECT sign, organization_id, cluster_id, effective_from, effective_to, pue * grams_co2e_per_kwh AS intensity
        FROM (${changed}) AS c
      ),
      clusters AS (
        SELECT organization_id, cluster_id, ${CHANGED_SPAN_SQL},
               array_agg(effective_from ORDER BY effective_from) FILTER (WHERE sign > 0) AS added_froms,
               array_agg(effective_to ORDER BY effective_from) FILTER (WHERE sign > 0) AS added_tos,
               array_agg(intensity ORDER BY effective_from) FILTER (WHERE sign > 0) AS added_intensities,
               array_agg(effective_from ORDER BY effective_from) FILTER (WHERE sign < 0) AS removed_froms,
               array_agg(effective_to ORDER BY effective_from) FILTER (WHERE sign < 0) AS removed_tos,
               array_agg(intensity ORDER BY effective_from) FILTER (WHERE sign < 0) AS removed_intensities
        FROM changed GROUP BY organization_id, cluster_id
      ),
      deltas AS (
        SELECT a.organization_id, a.workload_id,
               ${reweighedSql('c.removed', 'c.added')}
        FROM clusters c
        JOIN organizations o ON o.organization_id = c.organization_id
        JOIN workloads w ON w.organization_id = c.organization_id AND w.cluster_id = c.cluster_id
        JOIN metric_aggregates a ON a.organization_id = w.organization_id AND a.workload_id = w.workload_id
        CROSS JOIN LATERAL gpucap_held_parts(a.organization_id, a.workload_id, greatest(c.low, a.first_sampled_at),
                                             least(c.high, a.latest_sampled_at), o.max_sample_gap_seconds) h
        WHERE a.first_sampled_at < c.high AND a.latest_sampled_at >= c.low
        GROUP BY a.organization_id, a.workload_id
      )
      ${REWEIGH_SQL}
      -- A finished workload's last reading holds at its own time's intensity, which the aggregate leaves out.
      ${settleWorkloadEnergyIfAnySql(
        `(SELECT organization_id, cluster_id, ${CHANGED_SPAN_SQL} FROM (${changed}) AS c GROUP BY 1, 2) AS c,
          metric_aggregates a`,
        [
          'o.organization_id = c.organization_id AND o.cluster_id = c.cluster_id',
          'a.organization_id = o.organization_id AND a.workload_id = o.workload_id',
          'a.latest_sampled_at >= c.low AND a.latest_sampled_at < c.high',
        ],
      )};
      RETURN NULL;
    END
    $$`),
  ),
  // A workload's readings take the intensities of its cluster: a new, changed or removed cluster
  // (a reading stored before its workload has none) re-settles their carbon.
  ...CLUSTER_EVENTS.map(({ event, moved }) =>
    defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_workload_clusters_${event.toLowerCase()}() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      WITH moved AS MATERIALIZED (
        SELECT m.*, a.first_sampled_at, a.latest_sampled_at, o.max_sample_gap_seconds AS cap
        FROM (${moved}) AS m
        JOIN metric_aggregates a ON a.organization_id = m.organization_id AND a.workload_id = m.workload_id
        JOIN organizations o ON o.organization_id = m.organization_id
      ),
      periods AS (
        SELECT m.*, ${periodArrays('previous')}, ${periodArrays('next')}
        FROM moved m
        CROSS JOIN LATERAL gpucap_carbon_periods(m.organization_id, m.old_cluster, m.first_sampled_at, m.latest_sampled_at)
          AS previous(previous_froms, previous_tos, previous_intensities)
        CROSS JOIN LATERAL gpucap_carbon_periods(m.organization_id, m.new_cluster, m.first_sampled_at, m.latest_sampled_at)
          AS next(next_froms, next_tos, next_intensities)
      ),
      deltas AS (
        SELECT p.organization_id, p.workload_id,
               ${reweighedSql('p.previous', 'p.next')}
        FROM periods p
        CROSS JOIN LATERAL gpucap_held_parts(p.organization_id, p.workload_id, p.first_sampled_at, p.latest_sampled_at, p.cap) h
        -- Neither cluster has a period in the workload's span: nothing to move.
        WHERE p.previous_froms IS NOT NULL OR p.next_froms IS NOT NULL
        GROUP BY p.organization_id, p.workload_id
      )
      ${REWEIGH_SQL}
      RETURN NULL;
    END
    $$`),
  ),
  // A changed cap re-settles every stored reading of the organization with the new cap.
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_sample_gap_resettle() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
    BEGIN
      WITH changed AS (
        SELECT n.organization_id, o.max_sample_gap_seconds AS old_cap, n.max_sample_gap_seconds AS new_cap
        FROM new_rows n JOIN old_rows o ON o.organization_id = n.organization_id
        WHERE o.max_sample_gap_seconds <> n.max_sample_gap_seconds
      ),
      deltas AS (
        SELECT a.organization_id, a.workload_id,
               n.energy_microjoules - p.energy_microjoules AS energy_microjoules,
               n.carbon_microjoule_grams_per_kwh - p.carbon_microjoule_grams_per_kwh AS carbon_microjoule_grams_per_kwh,
               n.uncovered_microjoules - p.uncovered_microjoules AS uncovered_microjoules
        FROM changed c
        JOIN metric_aggregates a ON a.organization_id = c.organization_id
        LEFT JOIN workloads w ON w.organization_id = a.organization_id AND w.workload_id = a.workload_id
        CROSS JOIN LATERAL gpucap_held_energy(a.organization_id, a.workload_id, w.cluster_id, c.new_cap, a.first_sampled_at, a.latest_sampled_at) n
        CROSS JOIN LATERAL gpucap_held_energy(a.organization_id, a.workload_id, w.cluster_id, c.old_cap, a.first_sampled_at, a.latest_sampled_at) p
      )
      UPDATE metric_aggregates a SET ${addDeltasSql('d')}
      FROM deltas d
      WHERE a.organization_id = d.organization_id AND a.workload_id = d.workload_id
        AND (d.energy_microjoules <> 0 OR d.carbon_microjoule_grams_per_kwh <> 0 OR d.uncovered_microjoules <> 0);
      -- The last readings' holds until completed_at, which the aggregates leave out, take the cap too.
      ${settleWorkloadEnergyIfAnySql(
        `(SELECT organization_id FROM (SELECT organization_id, max_sample_gap_seconds FROM new_rows
            EXCEPT SELECT organization_id, max_sample_gap_seconds FROM old_rows) AS changed) AS c, metric_aggregates a`,
        [
          'o.organization_id = c.organization_id',
          'a.organization_id = o.organization_id AND a.workload_id = o.workload_id AND a.sample_count > 0',
        ],
      )};
      RETURN NULL;
    END
    $$`),
  ...INTENSITY_EVENTS.map(({ event, referencing }) =>
    defineTrigger(
      `CREATE OR REPLACE TRIGGER carbon_intensities_carbon_${event.toLowerCase()} AFTER ${event} ON carbon_intensities REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION gpucap_carbon_resettle_${event.toLowerCase()}()`,
    ),
  ),
  ...CLUSTER_EVENTS.map(({ event, referencing }) =>
    defineTrigger(
      `CREATE OR REPLACE TRIGGER workloads_carbon_cluster_${event.toLowerCase()} AFTER ${event} ON workloads REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION gpucap_workload_clusters_${event.toLowerCase()}()`,
    ),
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER organizations_sample_gap_update AFTER UPDATE ON organizations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_gap_resettle()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_sample_days_insert_begin BEFORE INSERT ON metric_sample_days FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_insert_begin()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER metric_samples_insert_begin BEFORE INSERT ON metric_samples FOR EACH STATEMENT EXECUTE FUNCTION gpucap_sample_insert_begin()',
  ),
];
