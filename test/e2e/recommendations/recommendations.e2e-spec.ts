import { parse } from 'csv-parse/sync';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { runAlertCycle } from '../../../src/alerts/alert-cycle';
import { alertsConfigOf } from '../../../src/alerts/alerts-config';
import { Clock } from '../../../src/common/clock';
import { ScopedDatabase } from '../../../src/common/database/scoped-database';
import { DatabaseStallWatch } from '../../../src/database/database-stall-watch';
import type { Role } from '../../../src/core/roles';
import { authHeaders, createApiToken, importDocument, uniqueId } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/*
 * The advice recomputed by hand from synthetic samples whose percentiles are known: each workload is
 * built for one case of the rule (docs/api.md, "Could run smaller"), imported through the real
 * importer (so the older readings sit in day blocks, the rest in rows), and every figure of every
 * recommendation is stated exactly, for an ORG_ADMIN, a TEAM_LEAD and a MEMBER.
 */

const HOUR = 3_600_000;
const BASE = Date.parse('2026-11-18T00:00:00.000Z');
const NOW = BASE + 20 * HOUR;
const RANGE = { start_date: '2026-11-18T00:00:00Z', end_date: '2026-11-19T00:00:00Z' };
const iso = (ms: number) => new Date(ms).toISOString();

interface Case {
  workload_id: string;
  initiative_id: 'team-a' | 'team-b' | 'team-c';
  instance_type: string;
  gpu_count: number;
  gpu_sharing?: Record<string, unknown>;
  started: number;
  /** null: still running. */
  completed: number | null;
  /** [instant, gpu_utilization, memory_utilization] */
  samples: [number, number, number][];
}

/** `count` readings from `from` to `to`, both included, evenly spaced; `peak` picks readings to replace. */
function readings(
  from: number,
  to: number,
  count: number,
  gpu: number,
  memory: number,
  peak: (index: number) => number | null = () => null,
): [number, number, number][] {
  return Array.from({ length: count }, (_, index) => [
    Math.round(from + ((to - from) * index) / (count - 1)),
    gpu,
    peak(index) ?? memory,
  ]);
}

const START = BASE + 2 * HOUR;
const TEN_HOURS = START + 10 * HOUR;

const CASES: Case[] = [
  // A whole H100 at 8 % and 6 GiB (7.5 % of 80): 1g.10gb, saving 6/7 of its GPU-hours.
  {
    workload_id: 'wl-h100-small',
    initiative_id: 'team-a',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 8, 7.5),
  },
  // Eight A100 40GB at a steady 20 % and 30 % memory: 96 GiB used, 115.2 GiB needed, 3 GPUs.
  {
    workload_id: 'wl-a100-eight',
    initiative_id: 'team-b',
    instance_type: 'p4d.24xlarge',
    gpu_count: 8,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 20, 30),
  },
  // At 90 %: it needs 1.08 GPUs, not smaller than its one.
  {
    workload_id: 'wl-busy',
    initiative_id: 'team-a',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 90, 50),
  },
  // 10 samples: too few.
  {
    workload_id: 'wl-few',
    initiative_id: 'team-b',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 10, 8, 7.5),
  },
  // A MIG 3g.40gb slice using 5 GiB (12.5 % of 40) at 10 %: 1g.10gb, saving 2/7 of a GPU.
  {
    workload_id: 'wl-mig-3g',
    initiative_id: 'team-c',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    gpu_sharing: { mode: 'mig', profile: '3g.40gb' },
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 10, 12.5),
  },
  // 200 samples at 6 GiB, 4 of them (2 %) at 12 GiB: the 99th percentile lands on the peaks, 1g.20gb.
  {
    workload_id: 'wl-peaks-4',
    initiative_id: 'team-a',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: START + 7 * HOUR,
    samples: readings(START, START + 7 * HOUR, 200, 8, 7.5, (i) =>
      [50, 100, 150, 199].includes(i) ? 15 : null,
    ),
  },
  // The same with 1 peak (0.5 %): the 99th percentile stays at 6 GiB, 1g.10gb with risk 0.005.
  {
    workload_id: 'wl-peak-1',
    initiative_id: 'team-b',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: START + 14 * HOUR,
    samples: readings(START, START + 14 * HOUR, 200, 8, 7.5, (i) => (i === 100 ? 15 : null)),
  },
  // An instance type known nowhere.
  {
    workload_id: 'wl-unknown',
    initiative_id: 'team-a',
    instance_type: 'onprem-x',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 8, 7.5),
  },
  // Time-sliced replicas already share a GPU.
  {
    workload_id: 'wl-sliced',
    initiative_id: 'team-c',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    gpu_sharing: { mode: 'time-slicing', replicas: 4 },
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 8, 7.5),
  },
  // An A100 40GB profile on an H100: not a profile of its GPU.
  {
    workload_id: 'wl-mig-odd',
    initiative_id: 'team-c',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    gpu_sharing: { mode: 'mig', profile: '1g.5gb' },
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 8, 7.5),
  },
  // On an instance type the organization imported: its own profiles.
  {
    workload_id: 'wl-onprem-a100',
    initiative_id: 'team-c',
    instance_type: 'onprem-a100',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 40, 8, 7.5),
  },
  // 40 samples in the first 2 of 10 hours: coverage 0.2.
  {
    workload_id: 'wl-sparse',
    initiative_id: 'team-b',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, START + 2 * HOUR, 40, 8, 7.5),
  },
  // 29 readings at 1 GiB and one at 45 GiB: p99 × 1.2 = 38.69 GiB fits 3g.40gb, the peak (1/30) does not.
  {
    workload_id: 'wl-spiky',
    initiative_id: 'team-a',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: START,
    completed: TEN_HOURS,
    samples: readings(START, TEN_HOURS, 30, 8, 1.25, (i) => (i === 29 ? 56.25 : null)),
  },
  // Running since before the range, busy before it: only its 20 hours and readings inside count.
  // Its last day (the alert's window) holds only the quiet readings.
  {
    workload_id: 'wl-running',
    initiative_id: 'team-a',
    instance_type: 'p5.48xlarge',
    gpu_count: 1,
    started: BASE - 5 * HOUR,
    completed: null,
    samples: [
      ...readings(BASE - 5 * HOUR, BASE - 4.5 * HOUR, 20, 90, 90),
      ...readings(BASE, NOW, 40, 8, 7.5),
    ],
  },
];

const ONPREM_A100 = {
  instance_type: 'onprem-a100',
  gpu_model: 'A100 80GB PCIe',
  gpu_memory_gib: 80,
  mig_capable: true,
  mig_profiles: [
    { profile: '1g.10gb', memory_gib: 10, compute_slices: 1 },
    { profile: '2g.20gb', memory_gib: 20, compute_slices: 2 },
    { profile: '3g.40gb', memory_gib: 40, compute_slices: 3 },
    { profile: '7g.80gb', memory_gib: 80, compute_slices: 7 },
  ],
};

function document(organizationId: string) {
  const org = { organization_id: organizationId };
  return {
    organizations: [
      {
        ...org,
        name: 'Advice',
        budget_period_start: '2026-10-01T00:00:00Z',
        budget_period_end: '2027-01-01T00:00:00Z',
      },
    ],
    initiatives: ['team-a', 'team-b', 'team-c'].map((id) => ({ ...org, initiative_id: id, name: id })),
    prices: [
      {
        ...org,
        instance_type: 'p5.48xlarge',
        price_per_gpu_hour: '12.50',
        currency: 'EUR',
        pricing_model: 'on_demand',
        effective_from: '2026-10-01T00:00:00Z',
      },
    ],
    instance_types: [{ ...org, ...ONPREM_A100 }],
    workloads: CASES.map((c) => ({
      ...org,
      workload_id: c.workload_id,
      initiative_id: c.initiative_id,
      name: c.workload_id.slice(3),
      status: c.completed === null ? 'running' : 'completed',
      submitted_by: `${c.initiative_id}@example.com`,
      instance_type: c.instance_type,
      gpu_count: c.gpu_count,
      ...(c.gpu_sharing ? { gpu_sharing: c.gpu_sharing } : {}),
      is_managed: true,
      cluster_id: c.workload_id === 'wl-a100-eight' ? 'cl-2' : 'cl-1',
      namespace: 'ml',
      submitted_at: iso(c.started - 60_000),
      started_at: iso(c.started),
      completed_at: c.completed === null ? null : iso(c.completed),
      exit_code: c.completed === null ? null : 0,
    })),
    metric_samples: CASES.flatMap((c) =>
      c.samples.map(([at, gpu, memory]) => ({
        ...org,
        workload_id: c.workload_id,
        timestamp: iso(at),
        gpu_utilization: gpu,
        memory_utilization: memory,
        temperature: 50,
        power_usage: 300,
      })),
    ),
  };
}

const WHOLE_H100 = { gpu_count: 1, gpu_share: 1, gpu_sharing: null, memory_gib: 80 };
const mig = (profile: string, share: number, memory: number) => ({
  gpu_count: 1,
  gpu_share: share,
  gpu_sharing: { mode: 'mig', profile },
  memory_gib: memory,
});
/** 8 % and 6 GiB of a whole 80 GiB GPU. */
const SMALL = {
  coverage: 1,
  p95_gpu_utilization: 8,
  p99_memory_used_gib: 6,
  memory_need_gib: 7.2,
  compute_need_gpus: 0.096,
};

function item(c: string, fields: Record<string, unknown>) {
  const seed = CASES.find((candidate) => candidate.workload_id === c)!;
  return {
    workload_id: c,
    name: c.slice(3),
    initiative_id: seed.initiative_id,
    submitted_by: `${seed.initiative_id}@example.com`,
    status: seed.completed === null ? 'running' : 'completed',
    instance_type: seed.instance_type,
    cluster_id: c === 'wl-a100-eight' ? 'cl-2' : 'cl-1',
    gpu_model: 'H100 80GB',
    ...fields,
  };
}

/** Every recommendation of the organization, in rank order (GPU-hours saved, then workload_id). */
const EXPECTED = [
  item('wl-a100-eight', {
    gpu_model: 'A100 40GB',
    current: { gpu_count: 8, gpu_share: 8, gpu_sharing: null, memory_gib: 320 },
    recommended: { gpu_count: 3, gpu_share: 3, gpu_sharing: null, memory_gib: 120 },
    evidence: {
      samples: 40,
      coverage: 1,
      p95_gpu_utilization: 20,
      p99_memory_used_gib: 96,
      memory_need_gib: 115.2,
      compute_need_gpus: 1.92,
    },
    risk: 0,
    gpu_hours_saved: 50,
    cost_saved: null,
  }),
  item('wl-running', {
    current: WHOLE_H100,
    recommended: mig('1g.10gb', 0.1429, 10),
    evidence: { samples: 40, ...SMALL },
    risk: 0,
    // 6/7 of the 20 hours inside the range at 12.50.
    gpu_hours_saved: 17.1429,
    cost_saved: '214.29',
  }),
  item('wl-peak-1', {
    current: WHOLE_H100,
    recommended: mig('1g.10gb', 0.1429, 10),
    evidence: { samples: 200, ...SMALL },
    risk: 0.005,
    gpu_hours_saved: 12,
    cost_saved: '150.00',
  }),
  item('wl-h100-small', {
    current: WHOLE_H100,
    recommended: mig('1g.10gb', 0.1429, 10),
    evidence: { samples: 40, ...SMALL },
    risk: 0,
    gpu_hours_saved: 8.5714,
    cost_saved: '107.14',
  }),
  item('wl-onprem-a100', {
    gpu_model: 'A100 80GB PCIe',
    current: WHOLE_H100,
    recommended: mig('1g.10gb', 0.1429, 10),
    evidence: { samples: 40, ...SMALL },
    risk: 0,
    gpu_hours_saved: 8.5714,
    cost_saved: null,
  }),
  item('wl-peaks-4', {
    current: WHOLE_H100,
    recommended: mig('1g.20gb', 0.1429, 20),
    evidence: { ...SMALL, samples: 200, p99_memory_used_gib: 12, memory_need_gib: 14.4 },
    risk: 0,
    gpu_hours_saved: 6,
    cost_saved: '75.00',
  }),
  item('wl-mig-3g', {
    current: mig('3g.40gb', 0.4286, 40),
    recommended: mig('1g.10gb', 0.1429, 10),
    evidence: {
      samples: 40,
      coverage: 1,
      p95_gpu_utilization: 10,
      p99_memory_used_gib: 5,
      memory_need_gib: 6,
      compute_need_gpus: 0.0514,
    },
    risk: 0,
    gpu_hours_saved: 2.8571,
    cost_saved: '35.71',
  }),
];

const NO_ADVICE = {
  unknown_instance_type: 0,
  shared_gpu: 0,
  unknown_mig_profile: 0,
  too_few_samples: 0,
  low_coverage: 0,
  not_smaller: 0,
  risk_above_limit: 0,
};

const TEAM_TOTALS = {
  'team-a': {
    initiative_id: 'team-a',
    recommendations: 3,
    gpu_hours_saved: 31.7143,
    cost_saved: '396.43',
    unpriced_gpu_hours_saved: 0,
  },
  'team-b': {
    initiative_id: 'team-b',
    recommendations: 2,
    gpu_hours_saved: 62,
    cost_saved: '150.00',
    unpriced_gpu_hours_saved: 50,
  },
  'team-c': {
    initiative_id: 'team-c',
    recommendations: 2,
    gpu_hours_saved: 11.4286,
    cost_saved: '35.71',
    unpriced_gpu_hours_saved: 8.5714,
  },
};

describe('GET /v1/recommendations', () => {
  let t: TestApp;
  let organizationId: string;
  const tokens = {} as Record<Role, string>;
  const scopes: Record<Role, string[] | null> = {
    ORG_ADMIN: null,
    TEAM_LEAD: ['team-a', 'team-b'],
    MEMBER: ['team-a'],
  };

  const get = (role: Role, query: Record<string, string | number> = {}, accept?: string) => {
    const call = request(t.server)
      .get('/v1/recommendations')
      .query({ ...RANGE, ...query })
      .set(authHeaders(tokens[role], organizationId));
    return accept ? call.set('Accept', accept) : call;
  };

  beforeAll(async () => {
    t = await createTestApp({ RESPONSE_CACHE_TTL_SECONDS: '0' });
    jest.spyOn(t.app.get(Clock), 'now').mockImplementation(() => new Date(NOW));
    organizationId = uniqueId('org-advice');
    await importDocument(t.dataSource, document(organizationId));
    for (const role of Object.keys(scopes) as Role[]) {
      tokens[role] = await createApiToken(t.dataSource, organizationId, {
        role,
        initiativeIds: scopes[role] ?? [],
      });
    }
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it.each([
    [
      'ORG_ADMIN' as const,
      { ...NO_ADVICE, unknown_instance_type: 1, shared_gpu: 1, unknown_mig_profile: 1, too_few_samples: 1 },
      { low_coverage: 1, not_smaller: 1, risk_above_limit: 1 },
    ],
    [
      'TEAM_LEAD' as const,
      { ...NO_ADVICE, unknown_instance_type: 1, too_few_samples: 1 },
      { low_coverage: 1, not_smaller: 1, risk_above_limit: 1 },
    ],
    ['MEMBER' as const, { ...NO_ADVICE, unknown_instance_type: 1 }, { not_smaller: 1, risk_above_limit: 1 }],
  ])('gives %s every figure of the advice in its scope, ranked', async (role, without, more) => {
    const response = await get(role, { limit: 100 }).expect(200);
    const teams = scopes[role];
    const expected = EXPECTED.filter((entry) => teams === null || teams.includes(entry.initiative_id));
    expect(response.body.data).toEqual({
      range: { time_range: 'custom', start: '2026-11-18T00:00:00.000Z', end: '2026-11-19T00:00:00.000Z' },
      recommendations: expected,
    });
    expect(response.body.metadata).toEqual({
      next_token: null,
      total_count: expected.length,
      currency: 'EUR',
      as_of: iso(NOW),
      data_as_of: expect.any(String),
      totals_by_initiative: Object.values(TEAM_TOTALS).filter(
        (total) => teams === null || teams.includes(total.initiative_id),
      ),
      without_advice: { ...without, ...more },
      unknown_instance_types: ['onprem-x'],
    });
  });

  it('pages by GPU-hours saved, ties by workload_id, with tokens bound to the filters', async () => {
    const first = await get('ORG_ADMIN', { limit: 4 }).expect(200);
    expect(first.body.data.recommendations.map((r: { workload_id: string }) => r.workload_id)).toEqual([
      'wl-a100-eight',
      'wl-running',
      'wl-peak-1',
      'wl-h100-small',
    ]);
    expect(first.body.metadata.total_count).toBe(7);
    const token = first.body.metadata.next_token as string;
    const second = await get('ORG_ADMIN', { limit: 4, next_token: token }).expect(200);
    expect(second.body.data.recommendations).toEqual(EXPECTED.slice(4));
    expect(second.body.metadata.next_token).toBeNull();
    const other = await get('ORG_ADMIN', { limit: 4, next_token: token, min_gpu_hours_saved: 1 }).expect(400);
    expect(other.body.error.details).toEqual([
      expect.objectContaining({ field: 'next_token', location: 'query' }),
    ]);
  });

  it('filters by instance type, cluster, team and GPU-hours saved', async () => {
    const ids = async (query: Record<string, string | number>, role: Role = 'ORG_ADMIN') =>
      ((await get(role, query).expect(200)).body.data.recommendations as { workload_id: string }[]).map(
        (r) => r.workload_id,
      );
    expect(await ids({ instance_type: 'p4d.24xlarge' })).toEqual(['wl-a100-eight']);
    expect(await ids({ cluster_id: 'cl-2' })).toEqual(['wl-a100-eight']);
    expect(await ids({ initiative_id: 'team-c' })).toEqual(['wl-onprem-a100', 'wl-mig-3g']);
    expect(await ids({ min_gpu_hours_saved: 12 })).toEqual(['wl-a100-eight', 'wl-running', 'wl-peak-1']);
    expect(await ids({ min_gpu_hours_saved: '8.5' }, 'MEMBER')).toEqual(['wl-running', 'wl-h100-small']);
    const unknown = await get('ORG_ADMIN', { instance_type: 'onprem-x' }).expect(200);
    expect(unknown.body.data.recommendations).toEqual([]);
    expect(unknown.body.metadata.without_advice).toEqual({ ...NO_ADVICE, unknown_instance_type: 1 });
    expect(unknown.body.metadata.unknown_instance_types).toEqual(['onprem-x']);
  });

  it('reads a named range up to now', async () => {
    const named = (query: string) =>
      request(t.server)
        .get(`/v1/recommendations?time_range=last_7_days&${query}`)
        .set(authHeaders(tokens.MEMBER, organizationId));
    const response = await named('instance_type=p4d.24xlarge').expect(200);
    expect(response.body.data).toEqual({
      range: { time_range: 'last_7_days', start: iso(NOW - 168 * HOUR), end: iso(NOW) },
      recommendations: [],
    });
    // The running workload's whole run of 25 hours is inside now, its busy readings too: p95 90 %.
    const member = await named('limit=100').expect(200);
    expect(member.body.data.recommendations.map((r: { workload_id: string }) => r.workload_id)).toEqual([
      'wl-h100-small',
      'wl-peaks-4',
    ]);
    expect(member.body.metadata.without_advice).toEqual({
      ...NO_ADVICE,
      unknown_instance_type: 1,
      not_smaller: 2,
      risk_above_limit: 1,
    });
    const dates = await named(`start_date=${RANGE.start_date}`).expect(400);
    expect(dates.body.error.details).toEqual([
      expect.objectContaining({ field: 'start_date', issue: expect.stringContaining('time_range=custom') }),
    ]);
  });

  it('refuses what the contract refuses', async () => {
    const cases: [Role, Record<string, string>, number, string][] = [
      ['MEMBER', { initiative_id: 'team-b' }, 403, 'FORBIDDEN'],
      ['ORG_ADMIN', { min_gpu_hours_saved: '-1' }, 400, 'min_gpu_hours_saved'],
      ['ORG_ADMIN', { min_gpu_hours_saved: '1e3' }, 400, 'min_gpu_hours_saved'],
      ['ORG_ADMIN', { limit: '0' }, 400, 'limit'],
      ['ORG_ADMIN', { start_date: '2026-11-19', end_date: '2026-11-18' }, 400, 'start_date'],
      ['ORG_ADMIN', { next_token: 'forged.token' }, 400, 'next_token'],
      ['ORG_ADMIN', { instance_typo: 'x' }, 400, 'instance_typo'],
    ];
    for (const [role, query, status, what] of cases) {
      const response = await get(role, query).expect(status);
      const named =
        status === 403
          ? response.body.error.code
          : response.body.error.details.map((detail: { field: string }) => detail.field).join();
      expect({ query, named }).toEqual({ query, named: what });
    }
  });

  it('exports the ranked set as CSV', async () => {
    const response = await get('TEAM_LEAD', { limit: 1 }, 'text/csv').expect(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    const rows = parse<Record<string, string>>(response.text, { columns: true });
    expect(rows.map((row) => row.workload_id)).toEqual([
      'wl-a100-eight',
      'wl-running',
      'wl-peak-1',
      'wl-h100-small',
      'wl-peaks-4',
    ]);
    expect(rows[2]).toEqual({
      workload_id: 'wl-peak-1',
      name: 'peak-1',
      initiative_id: 'team-b',
      submitted_by: 'team-b@example.com',
      status: 'completed',
      instance_type: 'p5.48xlarge',
      cluster_id: 'cl-1',
      gpu_model: 'H100 80GB',
      current_gpu_count: '1',
      current_gpu_share: '1',
      current_gpu_sharing_mode: '',
      current_gpu_sharing_profile: '',
      current_memory_gib: '80',
      recommended_gpu_count: '1',
      recommended_gpu_share: '0.1429',
      recommended_gpu_sharing_mode: 'mig',
      recommended_gpu_sharing_profile: '1g.10gb',
      recommended_memory_gib: '10',
      evidence_samples: '200',
      evidence_coverage: '1',
      evidence_p95_gpu_utilization: '8',
      evidence_p99_memory_used_gib: '6',
      evidence_memory_need_gib: '7.2',
      evidence_compute_need_gpus: '0.096',
      risk: '0.005',
      gpu_hours_saved: '12',
      cost_saved: '150.00',
    });
  });

  it('fires GpuWorkloadOversized for the running workload, the recommendation in its annotations', async () => {
    const posted: { labels: Record<string, string>; annotations: Record<string, string> }[][] = [];
    const receiver: Server = createServer((incoming, response) => {
      let body = '';
      incoming.on('data', (chunk: Buffer) => (body += chunk.toString()));
      incoming.on('end', () => {
        posted.push(JSON.parse(body) as (typeof posted)[number]);
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const config = alertsConfigOf(
        {
          organization_id: organizationId,
          alertmanager: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}` },
          dashboard_url: 'https://gpucap.example.com/',
          rules: { oversized_workload: { min_gpu_hours_saved_per_day: 20 } },
        },
        '/',
      );
      const database = new ScopedDatabase(t.dataSource, new DatabaseStallWatch(t.dataSource));
      const report = await runAlertCycle(database, config, new Date(NOW), null);
      expect(report).toEqual({ organization_id: organizationId, firing: 1, resolved: 0 });
      expect(posted).toHaveLength(1);
      const [alert] = posted[0];
      expect(alert.labels).toEqual({
        alertname: 'GpuWorkloadOversized',
        organization_id: organizationId,
        initiative_id: 'team-a',
        workload_id: 'wl-running',
        submitted_by: 'team-a@example.com',
        severity: 'info',
      });
      // The window [now − 24 h, now) holds 39 readings spanning 19.5 of its 24 hours; 6/7 of a GPU freed a day.
      expect(alert.annotations).toEqual({
        summary:
          "Workload 'wl-running' of team 'team-a' could run on 1 × MIG 1g.10gb instead of 1 × H100 80GB, saving 20.5714 GPU-hours a day",
        description:
          "Workload 'wl-running' (team 'team-a', submitted by team-a@example.com) on p5.48xlarge used at most " +
          '8 % GPU utilization (p95) and 6 GiB of its 80 GiB of GPU memory (p99) over the last 24 hours ' +
          '(39 samples covering 81.2 % of its run there). 1 × MIG 1g.10gb (10 GiB) covers both with 20 % ' +
          'headroom; 0 % of the samples used more memory than that.',
        current: '1 × H100 80GB',
        recommended: '1 × MIG 1g.10gb',
        gpu_hours_saved_per_day: '20.5714',
        risk: '0',
      });
      const firing = await request(t.server)
        .get('/v1/alerts')
        .set(authHeaders(tokens.MEMBER, organizationId))
        .expect(200);
      expect(firing.body.data.alerts.map((entry: { alertname: string }) => entry.alertname)).toEqual([
        'GpuWorkloadOversized',
      ]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
