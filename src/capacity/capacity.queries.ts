import { AuthScope, scopedInitiativeIds } from '../common/auth/auth-scope';
import {
  organizationStatement,
  type ScopedStatement,
  scopedStatement,
} from '../common/database/scoped-statement';
import { DaySplit, PartialDay, splitByUtcDay, UsageWindow } from './usage-window';
import { aggregateLookupSql, idleSharesSql } from '../common/idle-gpu';

export interface CapacityFilters {
  initiativeId: string | null;
  poolId: string | null;
}

export interface BudgetPeriod {
  start: Date;
  end: Date;
}

/**
 * What one initiative draws on one pool (pool null: an instance type no pool owns): GPU hours used
 * in the period so far and in the burn window, and GPUs held by its running workloads now.
 */
export interface UsageRow {
  initiative_id: string;
  pool_id: string | null;
  used_gpu_hours: number;
  burn_window_gpu_hours: number;
  active_gpus: number;
  /** Of the period's use: the part with samples and its busy part (src/common/idle-gpu.ts). */
  sampled_gpu_seconds: number;
  busy_gpu_seconds: number;
}

/** Both windows end at or before the request's `now`; the burn window ends at it. */
export interface UsageWindows {
  period: UsageWindow;
  burn: UsageWindow;
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

/**
 * GPU-microseconds of `gpus` held over [from, to) (constant SQL, never input). Float epoch
 * arithmetic: the sums are floats anyway, and numeric `extract` costs more per row.
 */
function gpuMicrosecondsSql(gpus: string, from: string, to: string): string {
  return `${gpus} * date_part('epoch', ${to} - ${from}) * 1e6`;
}

/** A finished run's GPU-microseconds inside an edge day's part `e`. */
const EDGE_OVERLAP_GPU_MICROSECONDS_SQL = gpuMicrosecondsSql(
  'w.gpu_count',
  'greatest(w.started_at, e.part_from)',
  'least(w.completed_at, e.part_to)',
);

/** The sampled and busy parts of `us` GPU-microseconds of workload `w` (its aggregate aliased `a`). */
function idlePartsSql(us: string): string {
  return idleSharesSql(`(${us})::numeric`, 'a')
    .map((part) => `${part}::float8`)
    .join(',\n              ');
}

const AGGREGATE_OF_WORKLOAD_SQL = aggregateLookupSql('w', 'a');

export function budgetPeriodQuery(scope: AuthScope): ScopedStatement {
  return organizationStatement(
    scope,
    `SELECT budget_period_start AS start, budget_period_end AS end
     FROM organizations WHERE organization_id = $1`,
    [scope.organizationId],
  );
}

/**
 * Usage in both windows in one statement (so the running workloads are read once), and of the
 * period's its sampled and busy parts (idle figures): whole UTC days from the rollup; each edge day as the runs spanning it (rollup) plus the runs
 * starting inside it, plus those ending inside it that started before it (raw rows: a day's worth,
 * each half an index-only range scan); running workloads' accrual up to each window's end.
 */
export function usageByInitiativeAndPoolQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindows,
): ScopedStatement {
  const period = splitNonEmpty(windows.period);
  const burn = splitNonEmpty(windows.burn);
  const edges = mergeEdges(period.partialDays, burn.partialDays);
  return scopedStatement(
    scope,
    `WITH edge_days AS (
       SELECT e.in_period, e.in_burn, e.day, e.part_from, e.part_to,
              e.day::timestamp AT TIME ZONE 'UTC' AS day_start,
              (e.day + 1)::timestamp AT TIME ZONE 'UTC' AS day_end
       FROM unnest($5::boolean[], $6::boolean[], $7::date[], $8::timestamptz[], $9::timestamptz[])
         AS e (in_period, in_burn, day, part_from, part_to)
     ),
     usage AS (
       SELECT r.initiative_id, r.instance_type,
              CASE WHEN r.usage_day >= $10::date AND r.usage_day < $11::date
                   THEN r.gpu_microseconds ELSE 0 END::double precision AS period_us,
              CASE WHEN r.usage_day >= $12::date AND r.usage_day < $13::date
                   THEN r.gpu_microseconds ELSE 0 END::double precision AS burn_us,
              0 AS active_gpus,
              CASE WHEN r.usage_day >= $10::date AND r.usage_day < $11::date
                   THEN r.sampled_gpu_microseconds ELSE 0 END::double precision AS period_sampled_us,
              CASE WHEN r.usage_day >= $10::date AND r.usage_day < $11::date
                   THEN r.busy_gpu_microseconds ELSE 0 END::double precision AS period_busy_us
       FROM capacity_usage_daily r
       WHERE r.organization_id = $1 AND ${initiativeScopeSql('r')}
         AND ((r.usage_day >= $10::date AND r.usage_day < $11::date)
              OR (r.usage_day >= $12::date AND r.usage_day < $13::date))
       UNION ALL
       SELECT part.initiative_id, part.instance_type,
              CASE WHEN part.in_period THEN part.us ELSE 0 END, CASE WHEN part.in_burn THEN part.us ELSE 0 END, 0,
              CASE WHEN part.in_period THEN part.sampled_us ELSE 0 END,
              CASE WHEN part.in_period THEN part.busy_us ELSE 0 END
       FROM (
         SELECT e.in_period, e.in_burn, r.initiative_id, r.instance_type,
                ${gpuMicrosecondsSql('r.spanning_gpus', 'e.part_from', 'e.part_to')} AS us,
                ${gpuMicrosecondsSql('r.sampled_spanning_gpus', 'e.part_from', 'e.part_to')},
                ${gpuMicrosecondsSql('r.busy_spanning_gpus::float8', 'e.part_from', 'e.part_to')}
         FROM edge_days e
         JOIN capacity_usage_daily r ON r.organization_id = $1 AND r.usage_day = e.day
         WHERE r.spanning_gpus <> 0 AND ${initiativeScopeSql('r')}
         UNION ALL
         SELECT e.in_period, e.in_burn, w.initiative_id, w.instance_type,
                ${EDGE_OVERLAP_GPU_MICROSECONDS_SQL}, ${idlePartsSql(EDGE_OVERLAP_GPU_MICROSECONDS_SQL)}
         FROM edge_days e
         JOIN workloads w ON w.organization_id = $1
           AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
           AND w.started_at > e.day_start AND w.started_at < e.day_end
         ${AGGREGATE_OF_WORKLOAD_SQL}
         WHERE w.started_at < e.part_to AND w.completed_at > e.part_from AND ${initiativeScopeSql('w')}
         UNION ALL
         SELECT e.in_period, e.in_burn, w.initiative_id, w.instance_type,
                ${EDGE_OVERLAP_GPU_MICROSECONDS_SQL}, ${idlePartsSql(EDGE_OVERLAP_GPU_MICROSECONDS_SQL)}
         FROM edge_days e
         JOIN workloads w ON w.organization_id = $1
           AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
           AND w.completed_at > e.day_start AND w.completed_at < e.day_end
         ${AGGREGATE_OF_WORKLOAD_SQL}
         WHERE w.started_at <= e.day_start AND w.completed_at > e.part_from AND ${initiativeScopeSql('w')}
       ) part (in_period, in_burn, initiative_id, instance_type, us, sampled_us, busy_us)
       UNION ALL
       SELECT w.initiative_id, w.instance_type, running.period_us,
              w.gpu_count * greatest(0, date_part('epoch', $17::timestamptz - greatest(w.started_at, $16::timestamptz))) * 1e6,
              w.gpu_count, ${idlePartsSql('running.period_us')}
       FROM workloads w
       CROSS JOIN LATERAL (
         SELECT w.gpu_count * greatest(0, date_part('epoch', $15::timestamptz - greatest(w.started_at, $14::timestamptz))) * 1e6
           AS period_us
       ) running
       ${AGGREGATE_OF_WORKLOAD_SQL}
       WHERE w.organization_id = $1 AND w.status = 'running' AND ${initiativeScopeSql('w')}
     ),
     usage_by_type AS (
       SELECT initiative_id, instance_type,
              sum(period_us) AS period_us, sum(burn_us) AS burn_us, sum(active_gpus) AS active_gpus,
              sum(period_sampled_us) AS period_sampled_us, sum(period_busy_us) AS period_busy_us
       FROM usage
       GROUP BY initiative_id, instance_type
     )
     SELECT u.initiative_id, p.pool_id,
            sum(u.period_us) / 3.6e9 AS used_gpu_hours,
            sum(u.burn_us) / 3.6e9 AS burn_window_gpu_hours,
            sum(u.active_gpus)::integer AS active_gpus,
            sum(u.period_sampled_us) / 1e6 AS sampled_gpu_seconds,
            sum(u.period_busy_us) / 1e6 AS busy_gpu_seconds
     FROM usage_by_type u
     LEFT JOIN pool_instance_types p ON p.organization_id = $1 AND p.instance_type = u.instance_type
     WHERE $4::text IS NULL OR p.pool_id = $4::text
     GROUP BY u.initiative_id, p.pool_id`,
    [
      ...scopeParameters(scope, filters),
      edges.map((edge) => edge.inPeriod),
      edges.map((edge) => edge.inBurn),
      edges.map((edge) => edge.day),
      edges.map((edge) => edge.from),
      edges.map((edge) => edge.to),
      period.fullDaysFrom,
      period.fullDaysTo,
      burn.fullDaysFrom,
      burn.fullDaysTo,
      windows.period.from,
      windows.period.to,
      windows.burn.from,
      windows.burn.to,
    ],
  );
}

interface Edge extends PartialDay {
  inPeriod: boolean;
  inBurn: boolean;
}

/** The period's last edge day is usually the burn window's too (today, up to now): read it once. */
function mergeEdges(periodEdges: PartialDay[], burnEdges: PartialDay[]): Edge[] {
  const edges = new Map<string, Edge>();
  const add = (part: PartialDay, window: 'inPeriod' | 'inBurn') => {
    const key = `${part.from.getTime()}/${part.to.getTime()}`;
    const edge = edges.get(key) ?? { ...part, inPeriod: false, inBurn: false };
    edge[window] = true;
    edges.set(key, edge);
  };
  periodEdges.forEach((part) => add(part, 'inPeriod'));
  burnEdges.forEach((part) => add(part, 'inBurn'));
  return [...edges.values()];
}

/** An empty window (a period that has not begun) contributes no whole day and no edge. */
function splitNonEmpty(window: UsageWindow): DaySplit {
  if (window.to.getTime() > window.from.getTime()) return splitByUtcDay(window);
  const day = window.from.toISOString().slice(0, 10);
  return { fullDaysFrom: day, fullDaysTo: day, partialDays: [] };
}

export function allocationsQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  return scopedStatement(
    scope,
    `SELECT a.initiative_id, a.pool_id, a.allocated_gpu_hours
     FROM allocations a
     WHERE a.organization_id = $1 AND ${initiativeScopeSql('a')}
       AND ($4::text IS NULL OR a.pool_id = $4::text)`,
    scopeParameters(scope, filters),
  );
}

/** Every initiative in scope (only the filtered one with `initiative_id`), ordered by id. */
export function initiativesQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  return scopedStatement(
    scope,
    `SELECT i.initiative_id, i.name
     FROM initiatives i
     WHERE i.organization_id = $1 AND ${initiativeScopeSql('i')}
     ORDER BY i.initiative_id COLLATE "C"`,
    scopeParameters(scope, filters).slice(0, 3),
  );
}

/** The organization's pools (only the filtered one with `pool_id`) with their instance types. */
export function poolsQuery(scope: AuthScope, filters: CapacityFilters): ScopedStatement {
  return organizationStatement(
    scope,
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

/** GPU hours one initiative drew on one pool inside window `window_index` (pool null: no pool owns the type). */
export interface WindowUsageRow {
  window_index: number;
  initiative_id: string;
  pool_id: string | null;
  used_gpu_hours: number;
}

/**
 * Usage in each of several windows in one statement (the days of a burn-down): every window is cut
 * along UTC days like the period in usageByInitiativeAndPoolQuery — whole days from the rollup, edge
 * days from the runs spanning them plus the runs starting or ending inside them — and running
 * workloads accrue up to `now` inside each window. Windows whose bounds are UTC midnights read only
 * the rollup; local days of other time zones read each UTC day's starts and ends once.
 */
export function usageByWindowQuery(
  scope: AuthScope,
  filters: CapacityFilters,
  windows: UsageWindow[],
  now: Date,
): ScopedStatement {
  const whole: { index: number; from: string; to: string }[] = [];
  const edges: { index: number; part: PartialDay }[] = [];
  windows.forEach((window, index) => {
    const split = splitNonEmpty(window);
    if (split.fullDaysFrom < split.fullDaysTo)
      whole.push({ index, from: split.fullDaysFrom, to: split.fullDaysTo });
    for (const part of split.partialDays) edges.push({ index, part });
  });
  return scopedStatement(
    scope,
    `WITH edge_days AS (
       SELECT e.window_index, e.day, e.part_from, e.part_to,
              e.day::timestamp AT TIME ZONE 'UTC' AS day_start,
              (e.day + 1)::timestamp AT TIME ZONE 'UTC' AS day_end
       FROM unnest($5::int[], $6::date[], $7::timestamptz[], $8::timestamptz[])
         AS e (window_index, day, part_from, part_to)
     ),
     usage AS (
       SELECT f.window_index, r.initiative_id, r.instance_type, r.gpu_microseconds::double precision AS us
       FROM unnest($9::int[], $10::date[], $11::date[]) AS f (window_index, from_day, to_day)
       JOIN capacity_usage_daily r ON r.organization_id = $1
         AND r.usage_day >= f.from_day AND r.usage_day < f.to_day
       WHERE ${initiativeScopeSql('r')}
       UNION ALL
       SELECT e.window_index, r.initiative_id, r.instance_type,
              ${gpuMicrosecondsSql('r.spanning_gpus', 'e.part_from', 'e.part_to')}
       FROM edge_days e
       JOIN capacity_usage_daily r ON r.organization_id = $1 AND r.usage_day = e.day
       WHERE r.spanning_gpus <> 0 AND ${initiativeScopeSql('r')}
       UNION ALL
       SELECT e.window_index, w.initiative_id, w.instance_type, ${EDGE_OVERLAP_GPU_MICROSECONDS_SQL}
       FROM edge_days e
       JOIN workloads w ON w.organization_id = $1
         AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
         AND w.started_at > e.day_start AND w.started_at < e.day_end
       WHERE w.started_at < e.part_to AND w.completed_at > e.part_from AND ${initiativeScopeSql('w')}
       UNION ALL
       SELECT e.window_index, w.initiative_id, w.instance_type, ${EDGE_OVERLAP_GPU_MICROSECONDS_SQL}
       FROM edge_days e
       JOIN workloads w ON w.organization_id = $1
         AND w.started_at IS NOT NULL AND w.completed_at IS NOT NULL
         AND w.completed_at > e.day_start AND w.completed_at < e.day_end
       WHERE w.started_at <= e.day_start AND w.completed_at > e.part_from AND ${initiativeScopeSql('w')}
       UNION ALL
       SELECT (x.ordinal - 1)::int, w.initiative_id, w.instance_type,
              ${gpuMicrosecondsSql('w.gpu_count', 'greatest(w.started_at, x.window_from)', 'least($14::timestamptz, x.window_to)')}
       FROM unnest($12::timestamptz[], $13::timestamptz[]) WITH ORDINALITY AS x (window_from, window_to, ordinal)
       JOIN workloads w ON w.organization_id = $1 AND w.status = 'running'
         AND w.started_at < least($14::timestamptz, x.window_to)
       WHERE ${initiativeScopeSql('w')}
     )
     SELECT u.window_index, u.initiative_id, p.pool_id, sum(u.us) / 3.6e9 AS used_gpu_hours
     FROM usage u
     LEFT JOIN pool_instance_types p ON p.organization_id = $1 AND p.instance_type = u.instance_type
     WHERE $4::text IS NULL OR p.pool_id = $4::text
     GROUP BY u.window_index, u.initiative_id, p.pool_id`,
    [
      ...scopeParameters(scope, filters),
      edges.map((edge) => edge.index),
      edges.map((edge) => edge.part.day),
      edges.map((edge) => edge.part.from),
      edges.map((edge) => edge.part.to),
      whole.map((range) => range.index),
      whole.map((range) => range.from),
      whole.map((range) => range.to),
      windows.map((window) => window.from),
      windows.map((window) => window.to),
      now,
    ],
  );
}
