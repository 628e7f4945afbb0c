import type { DataSource } from 'typeorm';
import request from 'supertest';
import type { Role } from '../../../src/core/roles';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  type WorkloadSeed,
  writeAs,
} from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/**
 * Walks every GET operation of the served OpenAPI document, so an endpoint added later is covered
 * without anyone writing a test for it. Two organizations hold the same teams in scope, workload for
 * workload; only the first also holds a team outside the caller's scope, with data built to move
 * every figure (many GPUs, long runs, old pending workloads, big allocations, other utilisation).
 * The second names everything with its own ids (TWIN), and a third organization, which nobody asks,
 * holds the first one's ids (teams, workloads, pools, instance types, clusters, alerts) with other
 * figures: a join that drops organization_id finds its rows beside the first organization's and
 * none beside the second's. A MEMBER and a TEAM_LEAD of each of the two ask every operation with
 * every documented filter filled in turn, as JSON and, where offered, as CSV: the two answers must
 * be the same, so nothing outside the scope or the organization (a row, a name, an id, a count, a
 * sum, an average) can have reached either.
 */
const HOUR = 3_600_000;
const NOW = Date.now();
const at = (hoursAgo: number) => new Date(NOW - hoursAgo * HOUR).toISOString();
/** Fixed for every operation that takes it, so running workloads accrue to the same instant. */
const AS_OF = new Date(Math.floor(NOW / 1000) * 1000).toISOString();

const IN_SCOPE: WorkloadSeed[] = [
  {
    workloadId: 'wl-in-done',
    initiativeId: 'team-in',
    status: 'completed',
    gpuCount: 2,
    instanceType: 'a100',
    submittedBy: 'in@example.com',
    clusterId: 'cl-1',
    submittedAt: at(30),
    startedAt: at(29),
    completedAt: at(26),
    exitCode: 0,
  },
  {
    workloadId: 'wl-in-failed',
    initiativeId: 'team-in',
    status: 'failed',
    gpuCount: 1,
    instanceType: 'h100',
    submittedBy: 'in@example.com',
    clusterId: 'cl-2',
    submittedAt: at(20),
    startedAt: at(19),
    completedAt: at(18),
    exitCode: 1,
  },
  {
    workloadId: 'wl-in-running',
    initiativeId: 'team-in',
    status: 'running',
    gpuCount: 1,
    instanceType: 'l4',
    submittedBy: 'lead@example.com',
    clusterId: 'cl-1',
    submittedAt: at(6),
    startedAt: at(5),
    completedAt: null,
    exitCode: null,
    gpuShare: 0.5,
    gpuSharing: { mode: 'time-slicing', replicas: 2 },
  },
  {
    workloadId: 'wl-in-pending',
    initiativeId: 'team-in',
    status: 'pending',
    gpuCount: 4,
    instanceType: 'a100',
    submittedBy: 'in@example.com',
    clusterId: 'cl-1',
    submittedAt: at(2),
    startedAt: null,
    completedAt: null,
    exitCode: null,
  },
  {
    workloadId: 'wl-in-cancelled',
    initiativeId: 'team-in',
    status: 'cancelled',
    gpuCount: 1,
    instanceType: 'h100',
    submittedBy: 'in@example.com',
    clusterId: 'cl-2',
    submittedAt: at(12),
    startedAt: null,
    completedAt: at(11),
    exitCode: null,
  },
  {
    workloadId: 'wl-in2-done',
    initiativeId: 'team-in-2',
    status: 'completed',
    gpuCount: 1,
    instanceType: 'h100',
    submittedBy: 'lead@example.com',
    clusterId: 'cl-2',
    submittedAt: at(50),
    startedAt: at(49),
    completedAt: at(40),
    exitCode: 0,
  },
  {
    workloadId: 'wl-in2-running',
    initiativeId: 'team-in-2',
    status: 'running',
    gpuCount: 2,
    instanceType: 'a100',
    submittedBy: 'lead@example.com',
    clusterId: 'cl-1',
    submittedAt: at(9),
    startedAt: at(8),
    completedAt: null,
    exitCode: null,
  },
];

const OUTSIDE: WorkloadSeed[] = [
  {
    workloadId: 'wl-out-done',
    initiativeId: 'team-out',
    status: 'completed',
    gpuCount: 64,
    instanceType: 'a100',
    submittedBy: 'out@example.com',
    name: 'outside-done',
    clusterId: 'cl-1',
    submittedAt: at(300),
    startedAt: at(200),
    completedAt: at(100),
    exitCode: 0,
  },
  {
    workloadId: 'wl-out-running',
    initiativeId: 'team-out',
    status: 'running',
    gpuCount: 32,
    instanceType: 'h100',
    submittedBy: 'out@example.com',
    name: 'outside-running',
    clusterId: 'cl-2',
    submittedAt: at(240),
    startedAt: at(220),
    completedAt: null,
    exitCode: null,
  },
  {
    workloadId: 'wl-out-pending',
    initiativeId: 'team-out',
    status: 'pending',
    gpuCount: 16,
    instanceType: 'l4',
    submittedBy: 'out@example.com',
    name: 'outside-pending',
    clusterId: 'cl-out',
    submittedAt: at(230),
    startedAt: null,
    completedAt: null,
    exitCode: null,
  },
  {
    workloadId: 'wl-out-failed',
    initiativeId: 'team-out',
    status: 'failed',
    gpuCount: 8,
    instanceType: 'l4',
    submittedBy: 'in@example.com',
    name: 'outside-failed',
    clusterId: 'cl-1',
    submittedAt: at(25),
    startedAt: at(24),
    completedAt: at(3),
    exitCode: 2,
  },
];

function samplesOf(workloads: WorkloadSeed[], utilization: number) {
  return workloads
    .filter((workload) => workload.startedAt)
    .flatMap((workload) => {
      const start = new Date(workload.startedAt as string).getTime();
      const end = workload.completedAt ? new Date(workload.completedAt).getTime() : NOW - HOUR / 6;
      return [0, 0.25, 0.5, 0.75, 1].map((fraction) => ({
        workloadId: workload.workloadId as string,
        at: new Date(start + (end - start) * fraction),
        gpuUtilization: utilization,
        memoryUtilization: utilization / 2,
        temperature: 40 + utilization / 5,
        powerUsage: 100 + utilization * 3,
      }));
    });
}

/** What the second organization puts before every id of the first one's: its own ids, the same figures. */
const TWIN = 'twin-';

/** Every id of the walk's data, as the first organization (and the decoy) names it. */
const IDS = new Set([
  'team-in',
  'team-in-2',
  'team-out',
  'pool-1',
  'pool-2',
  'a100',
  'h100',
  'l4',
  ...[...IN_SCOPE, ...OUTSIDE].flatMap((workload) => [
    workload.workloadId as string,
    workload.submittedBy as string,
    workload.clusterId as string,
  ]),
]);

/** How an organization of the walk holds its data. */
interface Holding {
  /** Also holds the team outside the callers' scope. */
  outside: boolean;
  /** Its name for an id of IDS. */
  id: (id: string) => string;
  /** The decoy: the same ids with other figures. */
  decoy?: boolean;
}

const FIRST: Holding = { outside: true, id: (id) => id };
const SECOND: Holding = { outside: false, id: (id) => `${TWIN}${id}` };
const DECOY: Holding = { outside: true, id: (id) => id, decoy: true };

/** The workloads as `holding` names them; the decoy's run earlier, on other GPU counts and teams. */
function workloadsOf(holding: Holding, workloads: WorkloadSeed[]): WorkloadSeed[] {
  const earlier = <T>(instant: T): T =>
    typeof instant === 'string' ? (new Date(Date.parse(instant) - 7 * HOUR).toISOString() as T) : instant;
  return workloads.map((workload, index) => {
    const named = {
      ...workload,
      workloadId: holding.id(workload.workloadId as string),
      initiativeId: holding.id(workload.initiativeId as string),
      instanceType: holding.id(workload.instanceType as string),
      submittedBy: holding.id(workload.submittedBy as string),
      clusterId: holding.id(workload.clusterId as string),
    };
    if (!holding.decoy) return named;
    return {
      ...named,
      initiativeId: index % 2 === 0 ? named.initiativeId : 'team-in-2',
      gpuCount: 3 * (workload.gpuCount ?? 1) + 1,
      gpuShare: undefined,
      gpuSharing: null,
      submittedAt: earlier(workload.submittedAt),
      startedAt: earlier(workload.startedAt),
      completedAt: earlier(workload.completedAt),
    };
  });
}

async function seedScopeOrganization(dataSource: DataSource, holding: Holding): Promise<string> {
  const { id, decoy = false } = holding;
  const organizationId = await seedOrganization(dataSource, {
    timezone: decoy ? 'Asia/Kolkata' : 'UTC',
    initiatives: ['team-in', 'team-in-2', 'team-out'].map(id),
    pools: [
      { poolId: id('pool-1'), instanceTypes: (decoy ? ['l4'] : ['a100', 'h100']).map(id) },
      { poolId: id('pool-2'), instanceTypes: (decoy ? ['a100', 'h100'] : ['l4']).map(id) },
    ],
    allocations: [
      { initiativeId: id('team-in'), poolId: id('pool-1'), allocatedGpuHours: decoy ? 7_700 : 500 },
      { initiativeId: id('team-in-2'), poolId: id('pool-2'), allocatedGpuHours: decoy ? 6_600 : 300 },
      ...(holding.outside
        ? [
            { initiativeId: id('team-out'), poolId: id('pool-1'), allocatedGpuHours: 90_000 },
            { initiativeId: id('team-out'), poolId: id('pool-2'), allocatedGpuHours: 70_000 },
          ]
        : []),
    ],
  });
  if (decoy) {
    await dataSource.query(`UPDATE initiatives SET name = 'Decoy ' || name WHERE organization_id = $1`, [
      organizationId,
    ]);
  }
  const inScope = workloadsOf(holding, IN_SCOPE);
  const outside = holding.outside ? workloadsOf(holding, OUTSIDE) : [];
  await insertWorkloads(dataSource, organizationId, [...inScope, ...outside]);
  await insertSamples(dataSource, organizationId, [
    ...samplesOf(inScope, decoy ? 70 : 30),
    ...samplesOf(outside, decoy ? 5 : 95),
  ]);
  await seedAlerts(dataSource, organizationId, holding);
  // The same prices in the two that are asked: they belong to the organization, and cost every
  // team's workloads. The decoy's are other prices in another currency.
  await writeAs(
    dataSource,
    `INSERT INTO gpu_prices (organization_id, instance_type, effective_from, effective_to, price_per_gpu_hour,
                             currency, minor_units, pricing_model)
     VALUES ($1, $4, $2, NULL, $6 * 2.5, $7, 2, 'on_demand'), ($1, $5, $2, $3, $6 * 0.75, $7, 2, 'spot'),
            ($1, $5, $3, NULL, $6 * 0.8, $7, 2, 'reserved')`,
    [organizationId, at(1000), at(48), id('a100'), id('l4'), decoy ? 9 : 1, decoy ? 'USD' : 'EUR'],
  );
  return organizationId;
}

/**
 * Alerts as `gpucap alerts` records them: one team in scope, and (only beside the team outside) that
 * team's budget and idle workload, a pool's forecast and a sync source, which no MEMBER may see.
 */
async function seedAlerts(dataSource: DataSource, organizationId: string, holding: Holding) {
  const { id } = holding;
  const alerts: { initiativeId: string | null; labels: Record<string, string> }[] = [
    {
      initiativeId: id('team-in'),
      labels: {
        alertname: 'GpuWorkloadIdle',
        initiative_id: id('team-in'),
        workload_id: id('wl-in-running'),
      },
    },
    ...(holding.outside
      ? [
          {
            initiativeId: id('team-out'),
            labels: {
              alertname: 'GpuBudgetThresholdCrossed',
              kind: 'initiative',
              initiative_id: id('team-out'),
            },
          },
          {
            initiativeId: id('team-out'),
            labels: {
              alertname: 'GpuWorkloadIdle',
              initiative_id: id('team-out'),
              workload_id: id('wl-out-running'),
            },
          },
          {
            initiativeId: null,
            labels: { alertname: 'GpuBudgetExhaustionForecast', kind: 'pool', pool_id: id('pool-1') },
          },
          { initiativeId: null, labels: { alertname: 'GpucapSyncStale', source: 'outside-prometheus' } },
        ]
      : []),
  ];
  for (const [index, alert] of alerts.entries()) {
    await dataSource.query(
      `INSERT INTO alert_states (organization_id, fingerprint, alertname, initiative_id, labels, annotations, starts_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        organizationId,
        `fingerprint-${index}`,
        alert.labels.alertname,
        alert.initiativeId,
        {
          ...alert.labels,
          organization_id: organizationId,
          severity: holding.decoy ? 'critical' : 'warning',
        },
        {
          summary: `${holding.decoy ? 'decoy' : 'about'} ${alert.labels.workload_id ?? alert.labels.initiative_id ?? alert.labels.pool_id}`,
        },
        new Date(Date.UTC(2026, holding.decoy ? 8 : 9, 2)),
      ],
    );
  }
}

interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header';
  required?: boolean;
  schema?: { type?: string; enum?: unknown[]; format?: string; minimum?: number; example?: unknown };
  example?: unknown;
}
interface Operation {
  parameters?: Parameter[];
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: unknown[];
}

/** The values each filter is tried with: inside the scope, outside it, and the edges of its type. */
function candidates(parameter: Parameter): string[] {
  const { name } = parameter;
  const schema = parameter.schema ?? {};
  if (schema.enum) return schema.enum.map(String);
  if (schema.type === 'boolean') return ['true', 'false'];
  if (schema.type === 'integer' || schema.type === 'number') return [String(schema.minimum ?? 1), '50'];
  if (name === 'as_of') return [AS_OF];
  if (schema.format === 'date-time' || /(^|_)(from|to|start|end|since|until|date)$/.test(name)) {
    return /(to|end|until)(_date)?$/.test(name) ? [AS_OF] : [at(72)];
  }
  if (name.includes('initiative')) return ['team-in', 'team-in-2', 'team-out'];
  if (name.includes('submitted_by')) return ['in@example.com', 'out@example.com'];
  if (name.includes('pool')) return ['pool-1', 'pool-2'];
  if (name.includes('cluster')) return ['cl-1', 'cl-out'];
  if (name.includes('instance_type')) return ['a100', 'l4'];
  if (name.includes('workload')) return ['wl-in-running', 'wl-out-running'];
  if (name === 'step') return ['1h'];
  if (/cursor|page_token/.test(name)) return [];
  const example = parameter.example ?? schema.example;
  if (typeof example === 'string' || typeof example === 'number' || typeof example === 'boolean') {
    return [String(example)];
  }
  return [];
}

/**
 * Every request to try on one operation: its required filters at their first value, then each filter
 * in turn; ids as `holding` names them.
 */
function requestsOf(path: string, operation: Operation, holding: Holding): string[] {
  const valuesOf = (parameter: Parameter) =>
    candidates(parameter).map((value) => (IDS.has(value) ? holding.id(value) : value));
  const parameters = (operation.parameters ?? []).filter((parameter) => parameter.in !== 'header');
  const pathParameters = parameters.filter((parameter) => parameter.in === 'path');
  const query = parameters.filter((parameter) => parameter.in === 'query');
  const paths = pathParameters.reduce(
    (expanded, parameter) =>
      expanded.flatMap((partial) =>
        valuesOf(parameter).map((value) => partial.replace(`{${parameter.name}}`, encodeURIComponent(value))),
      ),
    [path],
  );
  const base = new URLSearchParams();
  for (const parameter of query) {
    const first = valuesOf(parameter)[0];
    if ((parameter.required || parameter.name === 'as_of') && first !== undefined)
      base.set(parameter.name, first);
  }
  const variants = [base];
  for (const parameter of query) {
    for (const value of valuesOf(parameter)) {
      const variant = new URLSearchParams(base);
      variant.set(parameter.name, value);
      variants.push(variant);
    }
  }
  return paths.flatMap((expanded) =>
    [...new Set(variants.map((variant) => variant.toString()))].map((text) =>
      text ? `${expanded}?${text}` : expanded,
    ),
  );
}

/** What differs between the two organizations by construction: their ids, request ids, page tokens. */
function normalise(value: unknown, organizations: [string, string], key = ''): unknown {
  if (typeof value === 'string') {
    if (/request_id|cursor|token|etag/i.test(key)) return '<varies>';
    return value.split(organizations[1]).join(organizations[0]).split(TWIN).join('');
  }
  if (Array.isArray(value)) return value.map((item) => normalise(item, organizations, key));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([entryKey, entry]) => [entryKey, normalise(entry, organizations, entryKey)]),
    );
  }
  return value;
}

/**
 * Differences beyond what the instants between the two requests can explain (rounded GPU-hours of
 * running work; the waits of pending work, in seconds). A leaked row moves a count by one and a sum
 * or an average by far more than this.
 */
function differences(a: unknown, b: unknown, where: string, found: string[]): void {
  if (/cost/.test(where) && isAmount(a) && isAmount(b)) {
    // A running workload's cost accrues between the two requests (a cent every few seconds here); a
    // leaked workload moves an amount by tens of units.
    if (Math.abs(Number(a) - Number(b)) > 1) found.push(`${where}: ${String(a)} vs ${String(b)}`);
    return;
  }
  if (typeof a === 'number' && typeof b === 'number') {
    const slack = /seconds/.test(where) ? 2 : 1e-3 + 1e-6 * Math.max(Math.abs(a), Math.abs(b));
    if (Math.abs(a - b) > slack) found.push(`${where}: ${a} vs ${b}`);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) found.push(`${where}: ${a.length} items vs ${b.length}`);
    a.slice(0, b.length).forEach((item, index) => differences(item, b[index], `${where}[${index}]`, found));
    return;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) {
      differences(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${where}.${key}`,
        found,
      );
    }
    return;
  }
  if (typeof a === 'string' && typeof b === 'string' && ISO_INSTANT.test(a) && ISO_INSTANT.test(b)) {
    // The clock moves between the two requests (as_of, projections from burn rates, which a running
    // workload's accrual moves by minutes under load); a leak moves a projection by days.
    const slack = /projected/.test(where) ? 3_600_000 : 60_000;
    if (Math.abs(Date.parse(a) - Date.parse(b)) > slack) found.push(`${where}: ${a} vs ${b}`);
    return;
  }
  if (a !== b) found.push(`${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
}

function isAmount(value: unknown): boolean {
  return typeof value === 'number' || (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value));
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A CSV as rows of cells keyed by column, numbers as numbers, so it compares like JSON. */
function csvRows(text: string): Record<string, unknown>[] {
  const lines = text
    .trim()
    .split(/\r?\n/)
    .map((line) => parseCsvLine(line));
  const [header = [], ...rows] = lines;
  return rows.map((cells) =>
    Object.fromEntries(
      header.map((column, index) => {
        const cell = cells[index] ?? '';
        return [column, cell !== '' && Number.isFinite(Number(cell)) ? Number(cell) : cell];
      }),
    ),
  );
}

function parseCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let index = 0; index < line.length; index += 1) {
    const char = line[index];
    if (quoted && char === '"' && line[index + 1] === '"') {
      cell += '"';
      index += 1;
    } else if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      cells.push(cell);
      cell = '';
    } else cell += char;
  }
  cells.push(cell);
  return cells;
}

/** In a full answer (an error may repeat the caller's own filter back), any of these is a leak. */
const OUTSIDE_NAMES = ['wl-out-', 'outside-', 'out@example.com', 'team-out'];

describe('scope, on every GET operation of the OpenAPI document', () => {
  let testApp: TestApp;
  let organizations: [string, string];
  let operations: { path: string; operation: Operation; csv: boolean }[];
  const tokens: Record<string, [string, string]> = {};
  const callers: { role: Role; initiativeIds: string[] }[] = [
    { role: 'MEMBER', initiativeIds: ['team-in'] },
    { role: 'TEAM_LEAD', initiativeIds: ['team-in', 'team-in-2'] },
  ];

  beforeAll(async () => {
    testApp = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    organizations = [
      await seedScopeOrganization(testApp.dataSource, FIRST),
      await seedScopeOrganization(testApp.dataSource, SECOND),
    ];
    await seedScopeOrganization(testApp.dataSource, DECOY);
    for (const caller of callers) {
      tokens[caller.role] = [
        await createApiToken(testApp.dataSource, organizations[0], caller),
        await createApiToken(testApp.dataSource, organizations[1], {
          ...caller,
          initiativeIds: caller.initiativeIds.map(SECOND.id),
        }),
      ];
    }
    const document = (await request(testApp.server).get('/v1/openapi.json')).body as {
      paths: Record<string, { get?: Operation }>;
    };
    operations = Object.entries(document.paths)
      .filter(([, item]) => item.get && (item.get.security === undefined || item.get.security.length > 0))
      .map(([path, item]) => ({
        path,
        operation: item.get as Operation,
        csv: Object.values(item.get?.responses ?? {}).some((response) => response.content?.['text/csv']),
      }));
  }, 120_000);

  afterAll(async () => {
    await testApp?.close();
  });

  it('finds the operations to walk in the served document', () => {
    const paths = operations.map(({ path }) => path);
    expect(paths).toEqual(expect.arrayContaining(['/v1/workloads', '/v1/workloads/stats', '/v1/capacity']));
    expect(operations.filter(({ csv }) => csv).length).toBeGreaterThanOrEqual(3);
  });

  it.each(callers.map((caller) => [caller.role]))(
    'gives a %s the same answers whether or not the organization holds data outside its scope',
    async (role) => {
      const found: string[] = [];
      const answered = new Map<string, number>();
      for (const { path, operation, csv } of operations) {
        const twins = requestsOf(path, operation, SECOND);
        for (const [index, url] of requestsOf(path, operation, FIRST).entries()) {
          for (const accept of csv ? ['application/json', 'text/csv'] : ['application/json']) {
            const [withOutside, without] = await Promise.all(
              organizations.map((organizationId, which) =>
                request(testApp.server)
                  .get(which === 0 ? url : twins[index])
                  .set(authHeaders(tokens[role][which], organizationId))
                  .set('Accept', accept),
              ),
            );
            const where = `${role} ${accept} ${url}`;
            if (withOutside.status !== without.status) {
              found.push(`${where}: status ${withOutside.status} vs ${without.status}`);
              continue;
            }
            if (withOutside.status === 200) {
              answered.set(path, (answered.get(path) ?? 0) + 1);
              for (const name of OUTSIDE_NAMES) {
                if (withOutside.text.includes(name)) found.push(`${where}: names ${name}`);
              }
            }
            const isCsv = (withOutside.headers['content-type'] ?? '').startsWith('text/csv');
            const [a, b] = isCsv
              ? [csvRows(withOutside.text), csvRows(without.text)]
              : [withOutside.body as unknown, without.body as unknown];
            differences(normalise(a, organizations), normalise(b, organizations), where, found);
          }
        }
      }
      expect(found).toEqual([]);
      // Not walked in vain: every operation answered some of its requests in full.
      expect(operations.filter(({ path }) => !answered.get(path)).map(({ path }) => path)).toEqual([]);
    },
    300_000,
  );
});
