import { Fixtures, ORGANIZATION_ID } from './fixtures';

export type Role = 'ORG_ADMIN' | 'MEMBER';
export type Section = 'workloads' | 'metrics' | 'capacity';

/** How a server is called: its base URL and the headers of each role. */
export interface Target {
  name: 'service' | 'baseline';
  baseUrl: string;
  headers: Record<Role, Record<string, string>>;
}

export interface Scenario {
  name: string;
  section: Section;
  endpoint: string;
  role: Role;
  /** Request paths drawn at random per request; cursors are per server, hence a function of the target. */
  paths: (target: Target) => Promise<string[]>;
  /** Also driven against the raw baseline (list and detail). */
  baseline: boolean;
  /** Part of the scaling table (run on every dataset size, not only the main one). */
  scaling: boolean;
  /** Sent besides the role's credentials (e.g. `Accept: text/csv`). */
  headers?: Record<string, string>;
}

const CSV = { Accept: 'text/csv' };

export const STATS_GROUPS = ['none', 'initiative_id', 'submitted_by', 'instance_type'] as const;
export const SORT_KEYS = ['gpu_utilization', 'memory_utilization', 'power_usage', 'gpu_hours'] as const;
const ROLES: Role[] = ['ORG_ADMIN', 'MEMBER'];
const PAGE_LIMIT = 20;

export function buildScenarios(fixtures: Fixtures, cursorPage: number): Scenario[] {
  return ROLES.flatMap((role) => [
    ...workloadScenarios(fixtures, role, cursorPage),
    ...metricScenarios(fixtures, role),
    ...capacityScenarios(fixtures, role),
  ]);
}

function daysAgo(days: number): string {
  return new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);
}

function fixed(paths: string[]): (target: Target) => Promise<string[]> {
  return () => Promise.resolve(paths);
}

function roleKey(role: Role): 'admin' | 'member' {
  return role === 'ORG_ADMIN' ? 'admin' : 'member';
}

/** Filters a dashboard sends: each alone, some combined, scoped to what the role may see. */
function listFilters(fixtures: Fixtures, role: Role): string[] {
  const initiatives =
    role === 'ORG_ADMIN' ? fixtures.initiatives.slice(0, 4).map((i) => i.id) : [fixtures.memberInitiative];
  const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
  return [
    'status=running',
    'status=completed',
    'status=failed',
    'is_managed=true',
    `start_date=${monthAgo}`,
    ...fixtures.submitters.slice(0, 5).map((user) => `submitted_by=${encodeURIComponent(user)}`),
    ...initiatives.map((id) => `initiative_id=${id}`),
    ...initiatives.map((id) => `initiative_id=${id}&status=completed`),
  ];
}

function workloadScenarios(fixtures: Fixtures, role: Role, cursorPage: number): Scenario[] {
  const base = { section: 'workloads' as const, role, baseline: true, scaling: false };
  const statsBase = {
    ...base,
    endpoint: 'GET /v1/workloads/stats',
    baseline: false,
    scaling: role === 'ORG_ADMIN',
  };
  const deepFilters = ['', 'status=completed', `initiative_id=${fixtures.memberInitiative}`];
  return [
    { ...base, name: 'list page 1', endpoint: 'GET /v1/workloads', paths: fixed(['/v1/workloads']) },
    {
      ...base,
      name: 'list page 1, filtered',
      endpoint: 'GET /v1/workloads',
      paths: fixed(listFilters(fixtures, role).map((query) => `/v1/workloads?${query}`)),
    },
    {
      ...base,
      name: `list page ${cursorPage} via cursor`,
      endpoint: 'GET /v1/workloads',
      paths: (target) => deepPagePaths(target, role, deepFilters, cursorPage),
    },
    {
      ...base,
      name: 'detail',
      endpoint: 'GET /v1/workloads/{id}',
      paths: fixed(
        fixtures.workloadIds[roleKey(role)].map((id) => `/v1/workloads/${encodeURIComponent(id)}`),
      ),
    },
    ...STATS_GROUPS.map((group) => ({
      ...statsBase,
      name: `stats last_30_days, group_by ${group}`,
      paths: fixed([
        `/v1/workloads/stats?time_range=last_30_days${group === 'none' ? '' : `&group_by=${group}`}`,
      ]),
    })),
    {
      ...statsBase,
      scaling: false,
      name: 'stats timeline last_30_days, interval=day, group_by initiative_id',
      paths: fixed(['/v1/workloads/stats?time_range=last_30_days&interval=day&group_by=initiative_id']),
    },
    {
      ...statsBase,
      scaling: false,
      name: 'stats timeline last_7_days, interval=hour',
      paths: fixed(['/v1/workloads/stats?time_range=last_7_days&interval=hour']),
    },
    {
      ...base,
      baseline: false,
      name: 'list as CSV, status=failed, last 30 days (whole set)',
      endpoint: 'GET /v1/workloads (CSV)',
      headers: CSV,
      paths: fixed([`/v1/workloads?status=failed&start_date=${daysAgo(30)}`]),
    },
  ];
}

function metricScenarios(fixtures: Fixtures, role: Role): Scenario[] {
  const base = { section: 'metrics' as const, role, baseline: false, scaling: false };
  const sampled = fixtures.sampledIds[roleKey(role)];
  const perWorkload = (range: string) =>
    sampled.map((id) => `/v1/workloads/${encodeURIComponent(id)}/metrics?time_range=${range}`);
  const scenarios: Scenario[] = ['last_24h', 'job_lifetime'].map((range) => ({
    ...base,
    name: `workload metrics ${range}`,
    endpoint: 'GET /v1/workloads/{id}/metrics',
    paths: fixed(perWorkload(range)),
  }));
  scenarios.push({
    ...base,
    name: 'workload series last_24h, step=5m (289 points)',
    endpoint: 'GET /v1/workloads/{id}/metrics',
    paths: fixed(perWorkload('last_24h&step=5m')),
  });
  if (role === 'ORG_ADMIN' && fixtures.longestJob) {
    scenarios.push({
      ...base,
      name: `workload metrics job_lifetime, longest job (${fixtures.longestJob.days.toFixed(1)} days)`,
      endpoint: 'GET /v1/workloads/{id}/metrics',
      paths: fixed([
        `/v1/workloads/${encodeURIComponent(fixtures.longestJob.id)}/metrics?time_range=job_lifetime`,
      ]),
    });
  }
  return [
    ...scenarios,
    ...SORT_KEYS.map((key) => ({
      ...base,
      name: `ranked sort_by ${key}`,
      endpoint: 'GET /v1/workloads/metrics',
      scaling: role === 'ORG_ADMIN',
      paths: fixed([`/v1/workloads/metrics?sort_by=${key}`]),
    })),
    {
      ...base,
      name: 'ranked sort_by idle_gpu_hours, status=running',
      endpoint: 'GET /v1/workloads/metrics',
      paths: fixed(['/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running']),
    },
    {
      ...base,
      name: 'ranked as CSV, sort_by gpu_efficiency, limit 100',
      endpoint: 'GET /v1/workloads/metrics (CSV)',
      headers: CSV,
      paths: fixed(['/v1/workloads/metrics?sort_by=gpu_efficiency&limit=100']),
    },
  ];
}

function capacityScenarios(fixtures: Fixtures, role: Role): Scenario[] {
  const base = { section: 'capacity' as const, role, endpoint: 'GET /v1/capacity', baseline: false };
  const scenarios: Scenario[] = [
    { ...base, name: 'capacity', scaling: role === 'ORG_ADMIN', paths: fixed(['/v1/capacity']) },
    {
      ...base,
      name: 'capacity burn-down, interval=day',
      scaling: false,
      paths: fixed(['/v1/capacity?interval=day']),
    },
  ];
  if (role === 'ORG_ADMIN' && fixtures.pools.length > 0) {
    const filtered = [
      ...fixtures.pools.map((pool) => `/v1/capacity?pool_id=${pool}`),
      ...fixtures.initiatives.map((initiative) => `/v1/capacity?initiative_id=${initiative.id}`),
    ];
    scenarios.push({
      ...base,
      name: 'capacity, filtered by pool or initiative',
      scaling: false,
      paths: fixed(filtered),
    });
  }
  return scenarios;
}

interface ListBody {
  metadata?: { next_token?: string | null; total_count?: number };
}

/**
 * Walks each filter set page by page (limit 20) to collect the cursors of page N, as a client
 * paging that deep would hold them. Filter sets with fewer than N pages are left out.
 */
async function deepPagePaths(
  target: Target,
  role: Role,
  filterSets: string[],
  page: number,
): Promise<string[]> {
  const walked = await Promise.all(filterSets.map((filters) => walkToPage(target, role, filters, page)));
  const paths = walked.filter((path): path is string => path !== null);
  if (paths.length === 0) throw new Error(`no filter set reaches page ${page} on ${target.name} as ${role}`);
  return paths;
}

async function walkToPage(target: Target, role: Role, filters: string, page: number): Promise<string | null> {
  const params = new URLSearchParams(filters);
  params.set('limit', String(PAGE_LIMIT));
  for (let current = 1; current < page; current++) {
    const response = await fetch(`${target.baseUrl}/v1/workloads?${params.toString()}`, {
      headers: target.headers[role],
    });
    if (!response.ok) throw new PathError(response.status, `/v1/workloads?${params.toString()}`);
    const body = (await response.json()) as ListBody;
    if (current === 1 && (body.metadata?.total_count ?? 0) < page * PAGE_LIMIT) return null;
    const next = body.metadata?.next_token;
    if (!next) return null;
    params.set('next_token', next);
  }
  return `/v1/workloads?${params.toString()}`;
}

/** A non-2xx answer while preparing a scenario's requests. */
export class PathError extends Error {
  constructor(
    readonly status: number,
    readonly path: string,
  ) {
    super(`${path} answered ${status}`);
  }
}

export function roleHeaders(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}`, 'x-organization-id': ORGANIZATION_ID };
}
