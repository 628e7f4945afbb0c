import type { DataSource } from 'typeorm';
import { AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import { splitByUtcDay, UsageWindow } from './usage-window';

export interface CapacityFilters {
  initiativeId: string | null;
  poolId: string | null;
}

export interface BudgetPeriod {
  start: Date;
  end: Date;
}

/** GPU hours used by one initiative on one pool (null: an instance type no pool owns). */
export interface UsageRow {
  initiative_id: string;
  pool_id: string | null;
  used_gpu_hours: number;
}

export interface AllocationRow {
  initiative_id: string;
  pool_id: string;
  allocated_gpu_hours: number;
}

export interface InitiativeRow {
  initiative_id: string;
  name: string;
}

export interface PoolRow {
  pool_id: string;
  name: string;
  instance_types: string[];
}

/**
 * The parameters every scoped query below starts with: $1 organization, $2 the caller's initiatives
 * (null: all), $3 the initiative filter, $4 the pool filter (nulls: none).
 */
function scopeParameters(scope: AuthScope, filters: CapacityFilters): unknown[] {
  const initiativeIds = scopedInitiativeIds(scope);
  return [
    scope.organizationId,
    initiativeIds === null ? null : [...initiativeIds],
    filters.initiativeId,
    filters.poolId,
  ];
}

/** Scope and initiative filter on a row source aliased `alias` (constant SQL, never input). */
function initiativeScopeSql(alias: string): string {
  return `($2::text[] IS NULL OR ${alias}.initiative_id = ANY ($2::text[]))
    AND ($3::text IS NULL OR ${alias}.initiative_id = $3::text)`;
}

export async function findBudgetPeriod(dataSource: DataSource, scope: AuthScope): Promise<BudgetPeriod> {
  const rows: { start: Date; end: Date }[] = await dataSource.query(
    `SELECT budget_period_start AS start, budget_period_end AS end
     FROM organizations WHERE organization_id = $1`,
    [scope.organizationId],
  );
  if (rows.length === 0) throw new Error(`Organization ${scope.organizationId} vanished during the request`);
  return rows[0];
}

/**
 * GPU hours used inside `window` (which must end at or before `now`), by initiative and pool:
 * whole UTC days from the rollup; each edge day as the runs spanning it (rollup) plus the runs
 * starting or ending inside it (raw rows, a day's worth through an index); running workloads'
 * accrual up to the window's end.
 */
export async function usageByInitiativeAndPool(
  dataSource: DataSource,
  scope: AuthScope,
  filters: CapacityFilters,
  window: UsageWindow,
): Promise<UsageRow[]> {
  if (window.to.getTime() <= window.from.getTime()) return [];
  const split = splitByUtcDay(window);
  const rows: UsageRow[] = await dataSource.query(
    `WITH edge_days AS (
       SELECT e.day, e.part_from, e.part_to,
              e.day::timestamp AT TIME ZONE 'UTC' AS day_start,
              (e.day + 1)::timestamp AT TIME ZONE 'UTC' AS day_end
       FROM unnest($5::date[], $6::timestamptz[], $7::timestamptz[]) AS e (day, part_from, part_to)
     ),
     usage AS (
       SELECT r.initiative_id, r.instance_type, r.gpu_microseconds::double precision AS gpu_microseconds
       FROM capacity_usage_daily r
       WHERE r.organization_id = $1 AND r.usage_day >= $8::date AND r.usage_day < $9::date
         AND ${initiativeScopeSql('r')}
       UNION ALL
       SELECT r.initiative_id, r.instance_type,
              r.spanning_gpus * extract(epoch FROM e.part_to - e.part_from)::double precision * 1e6
       FROM edge_days e
       JOIN capacity_usage_daily r ON r.organization_id = $1 AND r.usage_day = e.day
       WHERE r.spanning_gpus <> 0 AND ${initiativeScopeSql('r')}
       UNION ALL
       SELECT w.initiative_id, w.instance_type,
              w.gpu_count * extract(epoch FROM least(w.completed_at, e.part_to)
                                             - greatest(w.started_at, e.part_from))::double precision * 1e6
       FROM edge_days e
       JOIN workloads w ON w.organization_id = $1
         AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
         AND ((w.started_at > e.day_start AND w.started_at < e.day_end)
              OR (w.completed_at > e.day_start AND w.completed_at < e.day_end))
       WHERE w.started_at < e.part_to AND w.completed_at > e.part_from AND ${initiativeScopeSql('w')}
       UNION ALL
       SELECT w.initiative_id, w.instance_type,
              w.gpu_count * extract(epoch FROM $11::timestamptz - greatest(w.started_at, $10::timestamptz))::double precision * 1e6
       FROM workloads w
       WHERE w.organization_id = $1 AND w.status = 'running' AND w.started_at < $11::timestamptz
         AND ${initiativeScopeSql('w')}
     )
     SELECT u.initiative_id, p.pool_id, sum(u.gpu_microseconds) / 3.6e9 AS used_gpu_hours
     FROM usage u
     LEFT JOIN pool_instance_types p ON p.organization_id = $1 AND p.instance_type = u.instance_type
     WHERE $4::text IS NULL OR p.pool_id = $4::text
     GROUP BY u.initiative_id, p.pool_id`,
    [
      ...scopeParameters(scope, filters),
      split.partialDays.map((part) => part.day),
      split.partialDays.map((part) => part.from),
      split.partialDays.map((part) => part.to),
      split.fullDaysFrom,
      split.fullDaysTo,
      window.from,
      window.to,
    ],
  );
  return rows;
}

export async function findAllocations(
  dataSource: DataSource,
  scope: AuthScope,
  filters: CapacityFilters,
): Promise<AllocationRow[]> {
  return dataSource.query(
    `SELECT a.initiative_id, a.pool_id, a.allocated_gpu_hours
     FROM allocations a
     WHERE a.organization_id = $1 AND ${initiativeScopeSql('a')}
       AND ($4::text IS NULL OR a.pool_id = $4::text)`,
    scopeParameters(scope, filters),
  );
}

/** Every initiative in scope (only the filtered one with `initiative_id`), ordered by id. */
export async function findInitiatives(
  dataSource: DataSource,
  scope: AuthScope,
  filters: CapacityFilters,
): Promise<InitiativeRow[]> {
  return dataSource.query(
    `SELECT i.initiative_id, i.name
     FROM initiatives i
     WHERE i.organization_id = $1 AND ${initiativeScopeSql('i')}
     ORDER BY i.initiative_id COLLATE "C"`,
    scopeParameters(scope, filters).slice(0, 3),
  );
}

/** The organization's pools (only the filtered one with `pool_id`) with their instance types. */
export async function findPools(
  dataSource: DataSource,
  scope: AuthScope,
  filters: CapacityFilters,
): Promise<PoolRow[]> {
  return dataSource.query(
    `SELECT p.pool_id, p.name,
            coalesce(array_agg(t.instance_type ORDER BY t.instance_type COLLATE "C")
                       FILTER (WHERE t.instance_type IS NOT NULL), '{}') AS instance_types
     FROM capacity_pools p
     LEFT JOIN pool_instance_types t ON t.organization_id = p.organization_id AND t.pool_id = p.pool_id
     WHERE p.organization_id = $1 AND ($2::text IS NULL OR p.pool_id = $2::text)
     GROUP BY p.pool_id, p.name`,
    [scope.organizationId, filters.poolId],
  );
}

/** GPUs held right now by running workloads in scope and filters. */
export async function countActiveGpus(
  dataSource: DataSource,
  scope: AuthScope,
  filters: CapacityFilters,
): Promise<number> {
  const rows: { active_gpus: number }[] = await dataSource.query(
    `SELECT coalesce(sum(w.gpu_count), 0)::integer AS active_gpus
     FROM workloads w
     WHERE w.organization_id = $1 AND w.status = 'running' AND ${initiativeScopeSql('w')}
       AND ($4::text IS NULL OR EXISTS (
         SELECT 1 FROM pool_instance_types p
         WHERE p.organization_id = $1 AND p.instance_type = w.instance_type AND p.pool_id = $4::text))`,
    scopeParameters(scope, filters),
  );
  return rows[0].active_gpus;
}
