import type { AuthScope } from '../common/auth/auth-scope';
import { scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  constantStatement,
  preparedStatement,
  type ScopedStatement,
  scopedStatement,
  initiativeScopeSql,
  scopedInitiativeRowsSql,
} from '../common/database/scoped-statement';
import { StatementParameters } from '../common/database/statement-parameters';
import type { KeysetPosition } from '../common/pagination/keyset-cursor';
import type { WorkloadStatus } from '../core/workload-status';
import { GPU_SHARE_COLUMNS, type GpuShareColumns } from '../common/gpu-sharing';
import {
  DURATION_SECONDS_SQL,
  FACT_COLUMNS,
  periodFactsSql,
  waitSecondsAtSql,
  workloadCountSql,
} from '../rollups/workload-periods/workload-periods.queries';
import { splitByPeriod } from '../rollups/workload-periods/period-split';
import { idleCostSql, runCostLateralSql, workloadCostSql } from '../common/cost';
import { workloadEnergyLateralSql } from '../rollups/metric-aggregates/metric-aggregates.queries';

/**
 * The workloads SQL, as pure functions returning scoped `{text, values}` (run with ScopedDatabase);
 * workload.responses.ts shapes the rows. Kept free of Nest and TypeORM so a bare node:http + pg server
 * can run the very same statements (the benchmark's baseline).
 */

export interface WorkloadListFilters {
  initiativeId?: string;
  status?: WorkloadStatus;
  submittedBy?: string;
  isManaged?: boolean;
  clusterId?: string;
  /** Inclusive. */
  startDate?: Date;
  /** Exclusive. */
  endDate?: Date;
}

const DAY_MS = 86_400_000;

/** The list's columns; `asOf` is the placeholder of the instant a pending workload's wait runs to. */
function summaryColumns(asOf: string): string {
  return `workload_id, name, status, submitted_by, initiative_id, instance_type, gpu_count,
  ${GPU_SHARE_COLUMNS}, cluster_id, submitted_at, started_at, ${waitSecondsAtSql(asOf)} AS wait_seconds,
  ${workloadCostSql('workloads', asOf, 'price')} AS cost, energy.energy_kwh, energy.carbon_kg,
  submitted_at::text AS submitted_at_key, ${CURRENCY_COLUMN}`;
}

/** metadata.currency on every row the list reads, so no statement of its own asks for it. */
const CURRENCY_COLUMN =
  '(SELECT currency FROM gpu_prices WHERE organization_id = workloads.organization_id LIMIT 1) AS currency';

function detailColumns(asOf: string): string {
  return `workload_id, name, status, submitted_by, initiative_id, instance_type, gpu_count,
  ${GPU_SHARE_COLUMNS}, submitted_at, started_at, ${waitSecondsAtSql(asOf)} AS wait_seconds, completed_at,
  exit_code, is_managed, cluster_id, namespace, ${DURATION_SECONDS_SQL}::bigint::float8 AS finished_duration_seconds,
  ${workloadCostSql('workloads', asOf, 'price')} AS cost, energy.energy_kwh, energy.carbon_kg`;
}

/** workloads with the LATERALs its cost and energy columns read: `price` (runCostLateralSql) and `energy`. */
function workloadsWithPrices(asOf: string): string {
  return `workloads ${runCostLateralSql('workloads', asOf, 'price')}
    ${workloadEnergyLateralSql('workloads', 'energy')}`;
}

/** Equality filters shared by the page and the count (dates are handled per use). */
function attributeConditions(params: StatementParameters, filters: WorkloadListFilters): string[] {
  const conditions: string[] = [];
  if (filters.initiativeId !== undefined)
    conditions.push(`initiative_id = ${params.add(filters.initiativeId)}`);
  if (filters.status !== undefined) conditions.push(`status = ${params.add(filters.status)}`);
  if (filters.submittedBy !== undefined) conditions.push(`submitted_by = ${params.add(filters.submittedBy)}`);
  if (filters.isManaged !== undefined) conditions.push(`is_managed = ${params.add(filters.isManaged)}`);
  if (filters.clusterId !== undefined) conditions.push(`cluster_id = ${params.add(filters.clusterId)}`);
  return conditions;
}

function dateConditions(params: StatementParameters, from: Date | undefined, to: Date | undefined): string[] {
  const conditions: string[] = [];
  if (from !== undefined) conditions.push(`submitted_at >= ${params.add(from)}`);
  if (to !== undefined) conditions.push(`submitted_at < ${params.add(to)}`);
  return conditions;
}

/** The caller's scope as a condition; an empty initiative list matches nothing. */
function scopeCondition(params: StatementParameters, scope: AuthScope): string[] {
  const initiatives = scopedInitiativeIds(scope);
  return initiatives === null ? [] : [initiativeScopeSql('initiative_id', params.add(initiatives))];
}

/**
 * One page of the list, newest first, `limit + 1` rows so the caller knows whether another page exists.
 * A scoped caller without an initiative filter reads each of their initiatives through the
 * (organization, initiative, submitted_at, id) index in order and merges the few rows (LATERAL per
 * initiative): `initiative_id = ANY(...)` alone cannot return index order and would sort.
 */
export function listWorkloadsPageQuery(
  scope: AuthScope,
  filters: WorkloadListFilters,
  after: KeysetPosition | null,
  limit: number,
  asOf: Date,
): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const initiatives = scopedInitiativeIds(scope);
  const mergePerInitiative = initiatives !== null && filters.initiativeId === undefined;
  const conditions = [
    `organization_id = ${organization}`,
    ...attributeConditions(params, filters),
    ...dateConditions(params, filters.startDate, filters.endDate),
  ];
  if (after) {
    conditions.push(
      `(submitted_at, workload_id) < (${params.add(after.key)}::timestamptz, ${params.add(after.id)})`,
    );
  }
  const rows = params.add(limit + 1);
  const asOfParameter = params.add(asOf);
  const columns = summaryColumns(asOfParameter);
  const source = workloadsWithPrices(asOfParameter);
  const order = 'ORDER BY submitted_at DESC, workload_id DESC';
  if (!mergePerInitiative) {
    conditions.push(...scopeCondition(params, scope));
    return scopedStatement(
      scope,
      `SELECT ${columns} FROM ${source} WHERE ${conditions.join(' AND ')} ${order} LIMIT ${rows}`,
      params.values,
    );
  }
  const scoped = params.add(initiatives);
  const text = `SELECT page.* FROM ${scopedInitiativeRowsSql(scoped)}
    CROSS JOIN LATERAL (
      SELECT ${columns} FROM ${source}
      WHERE ${conditions.join(' AND ')} AND workloads.initiative_id = scoped.initiative_id
      ${order} LIMIT ${rows}
    ) AS page
    ${order} LIMIT ${rows}`;
  return scopedStatement(scope, text, params.values);
}

/** Whole UTC days inside [from, to): the rollup answers those, raw rows the partial days at the edges. */
export interface DaySplit {
  /** First whole-day bucket (inclusive), or undefined for an open start. */
  fullFrom?: Date;
  /** End of the last whole-day bucket (exclusive), or undefined for an open end. */
  fullTo?: Date;
  /** Raw edges: [from, fullFrom) and [fullTo, to), present only when not empty. */
  edges: { from?: Date; to: Date }[] | { from: Date; to?: Date }[];
  /** No whole day at all: everything comes from raw rows. */
  rawOnly: boolean;
}

export function splitByUtcDay(from: Date | undefined, to: Date | undefined): DaySplit {
  const fullFrom = from === undefined ? undefined : new Date(Math.ceil(from.getTime() / DAY_MS) * DAY_MS);
  const fullTo = to === undefined ? undefined : new Date(Math.floor(to.getTime() / DAY_MS) * DAY_MS);
  if (fullFrom !== undefined && fullTo !== undefined && fullFrom >= fullTo) {
    return { edges: [{ from, to }] as { from?: Date; to: Date }[], rawOnly: true };
  }
  const edges: { from: Date; to?: Date }[] = [];
  if (from !== undefined && fullFrom !== undefined && from < fullFrom) edges.push({ from, to: fullFrom });
  if (to !== undefined && fullTo !== undefined && fullTo < to) edges.push({ from: fullTo, to });
  return { fullFrom, fullTo, edges, rawOnly: false };
}

function rollupDateConditions(params: StatementParameters, split: DaySplit): string[] {
  const conditions: string[] = [];
  if (split.fullFrom !== undefined) conditions.push(`bucket_start >= ${params.add(split.fullFrom)}`);
  if (split.fullTo !== undefined) conditions.push(`bucket_start < ${params.add(split.fullTo)}`);
  return conditions;
}

/**
 * The exact number of workloads matching the filters and scope, from workload_period_rollups. Without
 * an is_managed filter: day rows, hour rows of the edge days and raw rows of the partial hours at the
 * edges (by nothing, or by submitter). With one: countByManagedDaysQuery.
 */
export function countWorkloadsQuery(scope: AuthScope, filters: WorkloadListFilters): ScopedStatement {
  if (filters.isManaged !== undefined) return countByManagedDaysQuery(scope, filters);
  const params = new StatementParameters(scope);
  const where = [`organization_id = ${params.organization}`, ...scopeCondition(params, scope)];
  if (filters.initiativeId !== undefined) where.push(`initiative_id = ${params.add(filters.initiativeId)}`);
  if (filters.clusterId !== undefined) where.push(`cluster_id = ${params.add(filters.clusterId)}`);
  const submitter = filters.submittedBy === undefined ? undefined : params.add(filters.submittedBy);
  const facts = periodFactsSql(splitByPeriod(filters.startDate, filters.endDate), {
    params,
    where,
    dimension: submitter === undefined ? 'none' : 'submitted_by',
    rollupWhere: submitter === undefined ? [] : [`dimension_value = ${submitter}`],
    rawWhere: submitter === undefined ? [] : [`submitted_by = ${submitter}`],
    rollupKey: 'NULL::text',
    rawKey: 'NULL::text',
  });
  if (facts.length === 0) return constantStatement('SELECT 0::float8 AS total_count');
  return scopedStatement(
    scope,
    `SELECT coalesce(sum(${workloadCountSql(filters.status)}), 0)::float8 AS total_count
      FROM (${facts.join('\n UNION ALL ')}) AS facts(group_key, ${FACT_COLUMNS.join(', ')})`,
    params.values,
  );
}

/**
 * The same count with an is_managed filter: whole UTC days from the day-only rows by managed or
 * unmanaged submitter (all submitters, or the one filtered), the partial first and last day from raw
 * rows through the (organization, …, submitted_at) indexes.
 */
function countByManagedDaysQuery(scope: AuthScope, filters: WorkloadListFilters): ScopedStatement {
  const params = new StatementParameters(scope);
  const organization = params.organization;
  const split = splitByUtcDay(filters.startDate, filters.endDate);
  const parts: string[] = [];
  if (!split.rawOnly) {
    const where = [
      `organization_id = ${organization}`,
      `period = 'day'`,
      `dimension = '${filters.isManaged ? 'managed_submitted_by' : 'unmanaged_submitted_by'}'`,
      ...scopeCondition(params, scope),
      ...rollupDateConditions(params, split),
    ];
    if (filters.initiativeId !== undefined) where.push(`initiative_id = ${params.add(filters.initiativeId)}`);
    if (filters.submittedBy !== undefined) where.push(`dimension_value = ${params.add(filters.submittedBy)}`);
    if (filters.clusterId !== undefined) where.push(`cluster_id = ${params.add(filters.clusterId)}`);
    parts.push(
      `(SELECT coalesce(sum(${workloadCountSql(filters.status)}), 0) FROM workload_period_rollups WHERE ${where.join(' AND ')})`,
    );
  }
  for (const edge of split.edges) {
    const where = [
      `organization_id = ${organization}`,
      ...attributeConditions(params, filters),
      ...scopeCondition(params, scope),
      ...dateConditions(params, edge.from, edge.to),
    ];
    parts.push(`(SELECT count(*) FROM workloads WHERE ${where.join(' AND ')})`);
  }
  return scopedStatement(scope, `SELECT (${parts.join(' + ')})::float8 AS total_count`, params.values);
}

/**
 * One workload by id, within the caller's scope (out of scope reads exactly like unknown), with its
 * lifetime average utilization from metric_aggregates (one primary-key lookup) for the idle figures;
 * null when the workload has no sample.
 */
export function workloadDetailQuery(scope: AuthScope, workloadId: string, asOf: Date): ScopedStatement {
  const params = new StatementParameters(scope);
  const conditions = [
    `organization_id = ${params.organization}`,
    `workload_id = ${params.add(workloadId)}`,
    ...scopeCondition(params, scope),
  ];
  const asOfParameter = params.add(asOf);
  const columns = detailColumns(asOfParameter);
  const idleCost = idleCostSql('workloads', asOfParameter, 'price', 'a');
  return preparedStatement(
    scopedStatement(
      scope,
      `SELECT ${columns}, (a.gpu_utilization_sum / a.sample_count)::float8 AS average_gpu_utilization,
       ${idleCost} AS idle_cost, ${CURRENCY_COLUMN}
     FROM ${workloadsWithPrices(asOfParameter)}
     LEFT JOIN LATERAL (
       SELECT m.sample_count, m.gpu_utilization_sum FROM metric_aggregates m
       WHERE m.organization_id = workloads.organization_id AND m.workload_id = workloads.workload_id
         AND m.sample_count > 0
     ) AS a ON true
     WHERE ${conditions.join(' AND ')}`,
      params.values,
    ),
  );
}

export interface WorkloadSummaryRow extends GpuShareColumns {
  workload_id: string;
  name: string;
  status: WorkloadStatus;
  submitted_by: string;
  initiative_id: string;
  instance_type: string;
  gpu_count: number;
  cluster_id: string;
  submitted_at: Date;
  started_at: Date | null;
  /** Whole seconds; see waitSecondsAtSql. */
  wait_seconds: number | null;
  /** Decimal text in the currency's minor units; null without a price for the whole run. */
  cost: string | null;
  /** kWh, 4 decimals; null without samples. */
  energy_kwh: number | null;
  /** kg CO2e, 4 decimals; null without samples or while part of the energy has no carbon intensity. */
  carbon_kg: number | null;
  submitted_at_key: string;
  /** The organization's currency (metadata.currency). */
  currency: string | null;
}

export interface WorkloadDetailRow extends Omit<WorkloadSummaryRow, 'submitted_at_key'> {
  completed_at: Date | null;
  exit_code: number | null;
  is_managed: boolean;
  namespace: string;
  finished_duration_seconds: number | null;
  /** Percent, over every sample of the workload; null without samples. */
  average_gpu_utilization: number | null;
  /** The cost of the idle part (cost × (1 − average utilization)); null without cost or samples. */
  idle_cost: string | null;
}
