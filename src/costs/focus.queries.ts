import type { AuthScope } from '../common/auth/auth-scope';
import { scopedInitiativeIds } from '../common/auth/auth-scope';
import { chargedEndSql } from '../common/cost';
import {
  initiativeScopeSql,
  type ScopedStatement,
  scopedStatement,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import { type PricingModel, UNIT_MICROSECONDS_PER_GPU_HOUR } from '../common/money';
import type { KeysetPosition } from '../common/pagination/keyset-cursor';
import {
  MICROJOULE_GRAMS_PER_KWH_PER_KG,
  MICROJOULES_PER_KWH,
} from '../rollups/metric-aggregates/metric-aggregates.queries';

export interface FocusRequest {
  from: Date;
  to: Date;
  asOf: Date;
  initiativeId?: string;
}

/**
 * One page of the FOCUS export: the next `limit` + 1 workloads (keyset on submitted_at, workload_id,
 * like the list) whose run overlaps [from, to), each cut into its charge periods: the UTC days of the
 * range it ran in, split where its price changes, one row each with the exact cost of that part
 * rounded to the currency's minor units, and its energy and carbon: the held parts of the samples
 * whose time falls in it (docs/api.md, "FOCUS export"). A workload with no priced part in the range
 * still yields one row with null period (so the page knows it was read); the caller drops those.
 * Running workloads are charged up to as_of.
 */
export function focusPageQuery(
  scope: AuthScope,
  request: FocusRequest,
  after: KeysetPosition | null,
  limit: number,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const from = params.add(request.from);
  const to = params.add(request.to);
  const asOf = params.add(request.asOf);
  const conditions = [
    `w.organization_id = ${params.organization}`,
    'w.started_at IS NOT NULL',
    `w.submitted_at < ${to}::timestamptz`,
    `w.started_at < ${to}::timestamptz`,
    `${chargedEndSql('w', asOf)} > ${from}::timestamptz`,
  ];
  const initiatives = scopedInitiativeIds(scope);
  if (initiatives !== null) conditions.push(initiativeScopeSql('w.initiative_id', params.add(initiatives)));
  if (request.initiativeId !== undefined)
    conditions.push(`w.initiative_id = ${params.add(request.initiativeId)}`);
  if (after) {
    conditions.push(
      `(w.submitted_at, w.workload_id) > (${params.add(after.key)}::timestamptz, ${params.add(after.id)})`,
    );
  }
  const text = `WITH page AS MATERIALIZED (
      SELECT listed.organization_id, listed.workload_id, listed.name, listed.initiative_id, listed.instance_type,
             listed.submitted_by, listed.cluster_id, listed.gpu_share_units, listed.submitted_at, listed.submitted_at_key,
             listed.charged_from, listed.charged_to, r.samples_before, coalesce(m.sample_count, 0) > 0 AS sampled,
             energy.starts AS energy_starts, energy.microjoules AS energy_microjoules, energy.carbon AS energy_carbon,
             energy.uncovered AS energy_uncovered
      FROM (
        SELECT w.organization_id, w.workload_id, w.name, w.initiative_id, w.instance_type, w.submitted_by,
               w.cluster_id, w.gpu_share_units, w.submitted_at, w.submitted_at::text AS submitted_at_key, w.completed_at,
               greatest(w.started_at, ${from}::timestamptz) AS charged_from,
               least(${chargedEndSql('w', asOf)}, ${to}::timestamptz) AS charged_to
        FROM workloads w
        WHERE ${conditions.join(' AND ')}
        ORDER BY w.submitted_at, w.workload_id
        LIMIT ${params.add(limit + 1)}
      ) AS listed
      JOIN organizations o ON o.organization_id = listed.organization_id
      -- A key lookup per workload (OFFSET 0: never a hash join over every aggregate of the organization).
      LEFT JOIN LATERAL (
        SELECT a.sample_count, a.latest_sampled_at, a.power_usage_latest FROM metric_aggregates a
        WHERE a.organization_id = listed.organization_id AND a.workload_id = listed.workload_id OFFSET 0
      ) AS m ON true
      LEFT JOIN sample_retention r ON r.organization_id = listed.organization_id
      ${recordEnergySql('listed', 'o', 'm')}
    ),
    parts AS (
      SELECT page.workload_id, p.price_per_gpu_hour, p.currency, p.minor_units, p.pricing_model,
             ${recordStartSql('page.charged_from', 'p.effective_from', 'day.start')} AS period_start,
             least(page.charged_to, coalesce(p.effective_to, 'infinity'::timestamptz), day.start + interval '1 day') AS period_end
      FROM page
      JOIN gpu_prices p ON p.organization_id = page.organization_id AND p.instance_type = page.instance_type
        AND p.effective_from < page.charged_to
        AND coalesce(p.effective_to, 'infinity'::timestamptz) > page.charged_from
      CROSS JOIN LATERAL (
        SELECT generate_series(
                 date_trunc('day', greatest(page.charged_from, p.effective_from) AT TIME ZONE 'UTC'),
                 least(page.charged_to, coalesce(p.effective_to, 'infinity'::timestamptz)) AT TIME ZONE 'UTC' - interval '1 microsecond',
                 interval '1 day') AT TIME ZONE 'UTC' AS start
      ) AS day
    )
    SELECT page.workload_id, page.name, page.initiative_id, i.name AS initiative_name, page.instance_type,
           page.submitted_by, page.cluster_id, page.submitted_at_key,
           parts.period_start, parts.period_end, parts.currency, parts.pricing_model,
           parts.price_per_gpu_hour::text AS unit_price,
           round(page.gpu_share_units * extract(epoch FROM parts.period_end - parts.period_start) * 1000000
                 / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, 6)::text AS gpu_hours,
           round(page.gpu_share_units * parts.price_per_gpu_hour * extract(epoch FROM parts.period_end - parts.period_start) * 1000000
                 / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, parts.minor_units)::text AS cost,
           CASE WHEN ${KNOWN_ENERGY} THEN round(coalesce(sums.microjoules, 0) / ${MICROJOULES_PER_KWH}, 6)::text END AS energy_kwh,
           CASE WHEN ${KNOWN_ENERGY} AND coalesce(sums.uncovered, 0) = 0
                THEN round(coalesce(sums.carbon, 0) / ${MICROJOULE_GRAMS_PER_KWH_PER_KG}, 6)::text END AS carbon_kg
    FROM page
    JOIN initiatives i ON i.organization_id = page.organization_id AND i.initiative_id = page.initiative_id
    LEFT JOIN parts ON parts.workload_id = page.workload_id AND parts.period_end > parts.period_start
    -- The record's sums, when a sample falls in it (a binary search: the starts are sorted).
    LEFT JOIN LATERAL (
      SELECT page.energy_microjoules[k] AS microjoules, page.energy_carbon[k] AS carbon, page.energy_uncovered[k] AS uncovered
      FROM width_bucket(parts.period_start, page.energy_starts) AS k
      WHERE page.energy_starts[k] = parts.period_start
    ) AS sums ON true
    ORDER BY page.submitted_at, page.workload_id, parts.period_start`;
  return scopedStatement(scope, text, params.values);
}

/**
 * Where a record starts: the latest of the workload's charged start, its price period's start and its
 * UTC day's. The cost rows and the energy sums both key records by it.
 */
function recordStartSql(chargedFrom: string, priceFrom: string, day: string): string {
  return `greatest(${chargedFrom}, ${priceFrom}, ${day})`;
}

/** Unknown, not 0, without samples, or where a prune has dropped the record's samples. */
const KNOWN_ENERGY = "page.sampled AND parts.period_start >= coalesce(page.samples_before, '-infinity')";

/**
 * Joins each listed workload (alias `listed`, with charged_from and charged_to; its organization
 * `organization` and metric aggregate `aggregate`) to the energy of its records as `energy`: the
 * sorted starts of the records that have samples, and per start the held µJ, carbon-weighted µJ and
 * uncovered µJ (energy.definitions.ts). A record starts at the latest of charged_from, its price's
 * effective_from and its UTC day, as the parts are cut; a sample's part, even held across its record's
 * end, stays with the record its time falls in, at the intensity of that time. The samples are read
 * once, over the priced span, and summed per price, day and intensity period before they are weighed,
 * as the triggers do. Arrays, not rows: no join of the page's records with its samples' sums can
 * become a nested loop over both.
 */
function recordEnergySql(listed: string, organization: string, aggregate: string): string {
  const cap = `${organization}.max_sample_gap_seconds`;
  return `LEFT JOIN LATERAL (
        SELECT array_agg(${recordStartSql(`${listed}.charged_from`, 'prices.froms[g.price]', 'g.day')} ORDER BY g.day, g.price) AS starts,
               array_agg(g.microjoules ORDER BY g.day, g.price) AS microjoules,
               array_agg(g.carbon ORDER BY g.day, g.price) AS carbon,
               array_agg(g.uncovered ORDER BY g.day, g.price) AS uncovered
        FROM (
          SELECT array_agg(p.effective_from ORDER BY p.effective_from) AS froms,
                 array_agg(p.effective_to ORDER BY p.effective_from) AS tos,
                 greatest(${listed}.charged_from, min(p.effective_from)) AS low,
                 least(${listed}.charged_to, max(coalesce(p.effective_to, 'infinity'::timestamptz))) AS high
          FROM gpu_prices p
          WHERE p.organization_id = ${listed}.organization_id AND p.instance_type = ${listed}.instance_type
            AND p.effective_from < ${listed}.charged_to
            AND coalesce(p.effective_to, 'infinity'::timestamptz) > ${listed}.charged_from
        ) AS prices
        CROSS JOIN LATERAL gpucap_carbon_periods(${listed}.organization_id, ${listed}.cluster_id, prices.low, prices.high) AS c
        CROSS JOIN LATERAL (
          SELECT x.price, x.day, sum(x.microjoules) AS microjoules,
                 coalesce(sum(x.microjoules * c.intensities[x.period]) FILTER (WHERE x.covered), 0) AS carbon,
                 coalesce(sum(x.microjoules) FILTER (WHERE NOT x.covered), 0) AS uncovered
          FROM (
            SELECT k.price, k.day, k.period,
                   k.period > 0 AND (c.tos[k.period] IS NULL OR h.sampled_at < c.tos[k.period]) AS covered,
                   sum(h.microjoules) AS microjoules
            FROM (
              SELECT held.sampled_at, held.microjoules
              FROM gpucap_held_parts(${listed}.organization_id, ${listed}.workload_id, prices.low, prices.high, ${cap}) AS held
              UNION ALL
              -- A finished run's last sample holds until completed_at.
              SELECT ${aggregate}.latest_sampled_at,
                     gpucap_energy_tail_microjoules(${aggregate}.latest_sampled_at, ${aggregate}.power_usage_latest,
                                                    ${listed}.completed_at, ${cap})
            ) AS h
            CROSS JOIN LATERAL (
              SELECT width_bucket(h.sampled_at, prices.froms) AS price, date_trunc('day', h.sampled_at, 'UTC') AS day,
                     coalesce(width_bucket(h.sampled_at, c.froms), 0) AS period
            ) AS k
            WHERE k.price > 0 AND (prices.tos[k.price] IS NULL OR h.sampled_at < prices.tos[k.price])
              AND h.sampled_at >= ${listed}.charged_from AND h.sampled_at < ${listed}.charged_to
            GROUP BY k.price, k.day, k.period, covered
          ) AS x
          GROUP BY x.price, x.day
        ) AS g
        WHERE ${aggregate}.sample_count > 0 AND prices.froms IS NOT NULL
      ) AS energy ON true`;
}

export interface FocusRow {
  workload_id: string;
  name: string;
  initiative_id: string;
  initiative_name: string;
  instance_type: string;
  submitted_by: string;
  cluster_id: string;
  submitted_at_key: string;
  /** Null on the one row of a workload with no priced part in the range. */
  period_start: Date | null;
  period_end: Date | null;
  currency: string | null;
  pricing_model: PricingModel | null;
  unit_price: string | null;
  gpu_hours: string | null;
  cost: string | null;
  /** Null without samples, or where a prune has dropped the record's samples. */
  energy_kwh: string | null;
  /** Null also while part of the record's energy has no carbon intensity. */
  carbon_kg: string | null;
}
