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
 * rounded to the currency's minor units. A workload with no priced part in the range still yields one
 * row with null period (so the page knows it was read); the caller drops those. Running workloads
 * are charged up to as_of.
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
      SELECT w.organization_id, w.workload_id, w.name, w.initiative_id, w.instance_type, w.submitted_by,
             w.cluster_id, w.gpu_share_units, w.submitted_at, w.submitted_at::text AS submitted_at_key,
             greatest(w.started_at, ${from}::timestamptz) AS charged_from,
             least(${chargedEndSql('w', asOf)}, ${to}::timestamptz) AS charged_to
      FROM workloads w
      WHERE ${conditions.join(' AND ')}
      ORDER BY w.submitted_at, w.workload_id
      LIMIT ${params.add(limit + 1)}
    ),
    parts AS (
      SELECT page.workload_id, p.price_per_gpu_hour, p.currency, p.minor_units, p.pricing_model,
             greatest(page.charged_from, p.effective_from, day.start) AS period_start,
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
                 / ${UNIT_MICROSECONDS_PER_GPU_HOUR}, parts.minor_units)::text AS cost
    FROM page
    JOIN initiatives i ON i.organization_id = page.organization_id AND i.initiative_id = page.initiative_id
    LEFT JOIN parts ON parts.workload_id = page.workload_id AND parts.period_end > parts.period_start
    ORDER BY page.submitted_at, page.workload_id, parts.period_start`;
  return scopedStatement(scope, text, params.values);
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
}
