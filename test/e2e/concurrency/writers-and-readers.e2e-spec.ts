import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { pruneSamples } from '../../../src/cli/commands/prune.command';
import { sealSamples } from '../../../src/import/sample-seal';
import { projectRoot } from '../../../src/core/project-root';
import { authHeaders, createApiToken, importDocument, seedOrganization } from '../../support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import {
  aggregateDifferences,
  dailyUsageDifferences,
  hourlyUsageDifferences,
  settledEnergyDifferences,
  statusTotalsDifferences,
  rankedTotalsDifferences,
  rollupResidue,
  workloadSummaryDifferences,
} from '../../support/rollup-residue';
import { createTestApp, type TestApp } from '../../support/test-app';
import { ALL_SAMPLES_SQL } from '../../support/samples';

/**
 * Several writers into one organization at once — imports that move workloads between teams and
 * through their lifecycle, re-sent overlapping samples with new extremes, `prune`, a seal of
 * later days into day blocks, and two `gpucap import` processes — while readers poll every endpoint as MEMBER, TEAM_LEAD and ORG_ADMIN.
 * Readers must never see a row, count or average from outside their scope; afterwards every rollup
 * must equal its recomputation from raw rows. Workloads hold whole GPUs, MIG slices or shared
 * replicas, and writers change them from one to another. Prune reaches every organization: own database.
 */

const DAY = 86_400_000;
const MINUTE = 60_000;
const ROUNDS = 6;
const INITIATIVES = ['i-1', 'i-2', 'i-3'];
const MOVERS = Array.from({ length: 8 }, (_, k) => `mover-${k}`);
const LIFECYCLE = Array.from({ length: 6 }, (_, k) => `life-${k}`);
const AGED = ['aged-0', 'aged-1'];
/** Workloads whose first samples arrive in the very round another writer moves them to another team. */
const freshOf = (round: number) => Array.from({ length: 6 }, (_, k) => `fresh-${round}-${k}`);
const FRESH = Array.from({ length: ROUNDS }, (_, r) => freshOf(r + 1)).flat();
/** Team i-3's own workloads draw far more power than anything else: a leak shows in an average. */
const I3_POWER = 5000;
const MAX_OTHER_POWER = 500;

type Role = 'admin' | 'lead' | 'member';
const SCOPES: Record<Role, string[] | null> = { admin: null, lead: ['i-2'], member: ['i-1'] };

const now = Date.now();
const base = now - 5 * DAY;

/**
 * How a workload's devices are shared, by index: whole GPUs, MIG 1g and 3g (derived by the importer),
 * four time-sliced or MPS replicas, and a MIG 2g slice given as an explicit gpu_share.
 */
function shareFields(gpuCount: number, kind: number): Record<string, unknown> {
  switch (kind % 6) {
    case 1:
      return { gpu_sharing: { mode: 'mig', profile: '1g.10gb' } };
    case 2:
      return { gpu_sharing: { mode: 'time-slicing', replicas: 4 } };
    case 3:
      return { gpu_sharing: { mode: 'mig', profile: '3g.40gb' } };
    case 4:
      return { gpu_sharing: { mode: 'mps', replicas: 4 } };
    case 5:
      return { gpu_sharing: { mode: 'mig', profile: '2g.20gb' }, gpu_share: (gpuCount * 2) / 7 };
    default:
      return {};
  }
}

function workload(org: string, id: string, initiative: string, status: string, offset = 0, share = offset) {
  const submitted = base + offset * MINUTE;
  const started = status === 'pending' ? null : submitted + MINUTE;
  const finished = status === 'completed' || status === 'failed' ? submitted + 90 * MINUTE : null;
  return {
    workload_id: id,
    organization_id: org,
    initiative_id: initiative,
    name: `job ${id}`,
    status,
    submitted_by: `${initiative}@example.com`,
    instance_type: 'p5.48xlarge',
    gpu_count: 1 + (offset % 8),
    ...shareFields(1 + (offset % 8), share),
    is_managed: offset % 2 === 0,
    cluster_id: 'c1',
    namespace: 'ns',
    submitted_at: new Date(submitted).toISOString(),
    started_at: started === null ? null : new Date(started).toISOString(),
    completed_at: finished === null ? null : new Date(finished).toISOString(),
    exit_code: finished === null ? null : status === 'completed' ? 0 : 1,
  };
}

function sample(org: string, id: string, at: number, gpu: number, power: number) {
  return {
    organization_id: org,
    workload_id: id,
    timestamp: new Date(at).toISOString(),
    gpu_utilization: gpu,
    memory_utilization: (gpu * 7) % 100,
    temperature: 40 + (gpu % 30),
    power_usage: power,
  };
}

const agedSampleTimes = Array.from({ length: 6 }, (_, week) => now - (215 - week * 7) * DAY);

/** Lets the writers that race on purpose start each round together. */
class RoundBarrier {
  private readonly arrived = new Map<number, { count: number; release: () => void; opened: Promise<void> }>();

  constructor(private readonly parties: number) {}

  async arrive(round: number): Promise<void> {
    let entry = this.arrived.get(round);
    if (!entry) {
      let release = () => {};
      const opened = new Promise<void>((resolve) => (release = resolve));
      entry = { count: 0, release, opened };
      this.arrived.set(round, entry);
    }
    entry.count += 1;
    if (entry.count === this.parties) entry.release();
    await entry.opened;
  }
}

/** A writer's failure is recorded, not thrown: the others must still meet it at every round. */
async function recorded(failures: string[], what: string, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
  } catch (error) {
    failures.push(`${what} failed: ${(error as Error).message}`);
  }
}

describe('writers at once while readers poll every endpoint', () => {
  let db: OwnDatabase;
  let t: TestApp;
  let org: string;
  const headers = {} as Record<Role, Record<string, string>>;
  const violations: string[] = [];
  let readerRounds = 0;

  beforeAll(async () => {
    db = await createOwnDatabase('concurrency', 8);
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1000000' }, db.url);
    org = await seedOrganization(db.dataSource, {
      initiatives: INITIATIVES,
      pools: [{ poolId: 'p5', instanceTypes: ['p5.48xlarge'] }],
      allocations: INITIATIVES.map((initiativeId) => ({
        initiativeId,
        poolId: 'p5',
        allocatedGpuHours: 1000,
      })),
    });
    headers.admin = authHeaders(await createApiToken(db.dataSource, org, { role: 'ORG_ADMIN' }), org);
    headers.lead = authHeaders(
      await createApiToken(db.dataSource, org, { role: 'TEAM_LEAD', initiativeIds: ['i-2'] }),
      org,
    );
    headers.member = authHeaders(
      await createApiToken(db.dataSource, org, { role: 'MEMBER', initiativeIds: ['i-1'] }),
      org,
    );
    const statics = INITIATIVES.flatMap((initiative, i) =>
      [0, 1, 2].map((k) => workload(org, `static-${initiative}-${k}`, initiative, 'completed', 10 * i + k)),
    );
    await importDocument(db.dataSource, {
      workloads: [
        ...statics,
        ...MOVERS.map((id, k) => workload(org, id, 'i-1', 'running', 40 + k)),
        ...LIFECYCLE.map((id, k) => workload(org, id, INITIATIVES[k % 3], 'pending', 60 + k)),
        ...AGED.map((id, k) => workload(org, id, 'i-1', 'completed', 70 + k)),
        ...FRESH.map((id, k) => workload(org, id, 'i-1', 'running', 100 + k)),
      ],
      metric_samples: [
        ...statics.flatMap((w) =>
          [0, 1, 2].map((j) =>
            sample(
              org,
              w.workload_id,
              base + (2 + j) * MINUTE,
              30 + j,
              w.initiative_id === 'i-3' ? I3_POWER : 200,
            ),
          ),
        ),
        ...AGED.flatMap((id) => agedSampleTimes.map((at, j) => sample(org, id, at, 10 + j, 100))),
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const racing = new RoundBarrier(4);

  /**
   * Moves every mover to another team and through running → completed → failed each round, and this
   * round's fresh workloads to team i-3 while their first samples arrive.
   */
  async function moveTeams(): Promise<void> {
    for (let round = 1; round <= ROUNDS; round += 1) {
      const status = ['running', 'completed', 'failed'][round % 3];
      await racing.arrive(round);
      await recorded(violations, `move round ${round}`, () =>
        importDocument(db.dataSource, {
          workloads: [
            ...freshOf(round).map((id, k) => workload(org, id, 'i-3', 'completed', 100, 101 + k)),
            ...MOVERS.map((id, k) =>
              workload(org, id, INITIATIVES[(round + k) % 3], status, 40 + k, round + k),
            ),
          ],
        }),
      );
    }
  }

  /**
   * A spike on every mover at its own instants, racing the overlapping re-sends below, and two
   * readings of a later day: the sealer below begins that day's block with the earlier one, and a
   * round later moves the other into the begun block while others re-send it.
   */
  async function spikeSamples(): Promise<void> {
    for (let round = 1; round <= ROUNDS; round += 1) {
      await racing.arrive(round);
      await recorded(violations, `spike round ${round}`, () =>
        importDocument(db.dataSource, {
          metric_samples: MOVERS.flatMap((id) => [
            sample(org, id, base + (20 + round) * MINUTE, 95 + (round % 5), 480),
            sample(org, id, sealedDay(round) - 180 * MINUTE, 30 + round, 310),
            sample(org, id, sealedDay(round) - 90 * MINUTE, 20 + round, 300),
          ]),
        }),
      );
    }
  }

  /** The end of the day sealed in `round`, days ahead: writers put readings on either side of it. */
  const sealedDay = (round: number) => Math.floor(now / DAY) * DAY + round * DAY;

  /**
   * Seals up to two hours before that day's end each round, in batches of a few readings, as the
   * writers run: the day's last hours wait for the next round, which adds them to the begun block.
   */
  async function sealDays(): Promise<void> {
    for (let round = 1; round <= ROUNDS; round += 1) {
      await racing.arrive(round);
      await recorded(violations, `seal round ${round}`, () =>
        sealSamples(db.dataSource, {
          organizationIds: [org],
          before: new Date(sealedDay(round) - 120 * MINUTE),
          batchReadings: 3,
        }),
      );
    }
  }

  /** Pending → running → completed/failed, and a new workload each round. */
  async function runLifecycles(): Promise<void> {
    for (let round = 1; round <= ROUNDS; round += 1) {
      const status = ['pending', 'running', round % 2 === 0 ? 'completed' : 'failed'][round % 3];
      await importDocument(db.dataSource, {
        workloads: [
          ...LIFECYCLE.map((id, k) => workload(org, id, INITIATIVES[k % 3], status, 60 + k, round + k)),
          workload(org, `new-${round}`, INITIATIVES[round % 3], 'completed', 80 + round),
        ],
      });
    }
  }

  /** Overlapping samples of the movers with a new extreme each round, and the aged ones re-sent. */
  async function resendSamples(): Promise<void> {
    for (let round = 1; round <= ROUNDS; round += 1) {
      await racing.arrive(round);
      await recorded(violations, `samples round ${round}`, () =>
        importDocument(db.dataSource, {
          metric_samples: [
            ...freshOf(round).map((id) => sample(org, id, base + 5 * MINUTE, 40, 200)),
            ...MOVERS.flatMap((id) =>
              Array.from({ length: 8 }, (_, j) =>
                sample(
                  org,
                  id,
                  base + (2 + j + round) * MINUTE,
                  j === round % 8 ? 90 + round : (round * 7 + j * 13) % 80,
                  100 + ((round + j) % 5) * 80,
                ),
              ),
            ),
            ...AGED.flatMap((id) => agedSampleTimes.map((at, j) => sample(org, id, at, 10 + j, 100))),
            // The spike writer's later-day reading, sealed or not by now, with another value.
            ...MOVERS.map((id) => sample(org, id, sealedDay(round) - 90 * MINUTE, 70 - round, 260)),
          ],
        }),
      );
    }
  }

  async function pruneOldWeeks(): Promise<void> {
    for (let round = 0; round < 3; round += 1) {
      await pruneSamples(db.dataSource, new Date(now - (200 - round * 7) * DAY));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Two `gpucap import` processes, each moving the movers to team i-2 with a few samples. */
  async function importProcesses(): Promise<void> {
    const runs = [0, 1].map((n) => {
      const file = join(tmpdir(), `gpucap-concurrency-${process.pid}-${n}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          workloads: MOVERS.map((id, k) => workload(org, id, 'i-2', 'completed', 40 + k, 3 * n + k)),
          metric_samples: MOVERS.map((id) => sample(org, id, base + (30 + n) * MINUTE, 50 + n, 150)),
        }),
      );
      return new Promise<string>((resolve) => {
        const child = spawn(process.execPath, ['bin/gpucap.js', 'import', file], {
          cwd: projectRoot(),
          env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' },
        });
        let output = '';
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('close', (code) => resolve(code === 0 ? '' : `gpucap import exited ${code}: ${output}`));
      });
    });
    for (const failure of await Promise.all(runs)) if (failure) violations.push(failure);
  }

  function inScope(role: Role, initiative: unknown): boolean {
    const scope = SCOPES[role];
    return scope === null || scope.includes(initiative as string);
  }

  async function get(role: Role, path: string, query: Record<string, string | number> = {}) {
    const res = await request(t.server).get(path).query(query).set(headers[role]);
    if (res.status !== 200 && res.status !== 404) {
      violations.push(`${role} ${path} ${JSON.stringify(query)} answered ${res.status}`);
    }
    return res;
  }

  /** One pass over every endpoint as `role`, recording whatever falls outside its scope. */
  async function readAll(role: Role): Promise<void> {
    const note = (what: string) => violations.push(`${role}: ${what}`);
    const list = await get(role, '/v1/workloads', { limit: 100 });
    for (const w of list.body.data?.workloads ?? []) {
      if (!inScope(role, w.initiative_id)) note(`list shows ${w.workload_id} of ${w.initiative_id}`);
    }
    for (const id of MOVERS.slice(0, 3)) {
      const detail = await get(role, `/v1/workloads/${id}`);
      if (detail.status === 200 && !inScope(role, detail.body.data.initiative_id)) {
        note(`detail shows ${id} of ${detail.body.data.initiative_id}`);
      }
      await get(role, `/v1/workloads/${id}/metrics`, { time_range: 'job_lifetime' });
    }
    const stats = await get(role, '/v1/workloads/stats', {
      time_range: 'last_30_days',
      group_by: 'initiative_id',
    });
    for (const group of stats.body.data?.grouped ?? []) {
      if (!inScope(role, group.initiative_id)) note(`stats group ${JSON.stringify(group)}`);
    }
    for (const sortBy of ['power_usage', 'gpu_utilization', 'gpu_hours', 'idle_gpu_hours']) {
      const ranked = await get(role, '/v1/workloads/metrics', { sort_by: sortBy, limit: 50 });
      for (const w of ranked.body.data?.workloads ?? []) {
        if (!inScope(role, w.initiative_id))
          note(`ranked ${sortBy} shows ${w.workload_id} of ${w.initiative_id}`);
        if (sortBy === 'power_usage' && role !== 'admin' && w.power_usage.avg > MAX_OTHER_POWER) {
          note(`ranked power of ${w.workload_id} is ${w.power_usage.avg}`);
        }
      }
      const average = ranked.body.data?.scope_average?.power_usage;
      if (sortBy === 'power_usage' && role !== 'admin' && average > MAX_OTHER_POWER) {
        note(`ranked power scope_average ${average}`);
      }
    }
    const capacity = await get(role, '/v1/capacity');
    for (const initiative of capacity.body.data?.initiatives ?? []) {
      if (!inScope(role, initiative.initiative_id)) note(`capacity lists ${initiative.initiative_id}`);
    }
  }

  it('keeps every answer in scope during the run and every rollup exact after it', async () => {
    let writing = true;
    const readers = (['admin', 'lead', 'member'] as Role[]).map(async (role) => {
      while (writing) {
        await readAll(role);
        readerRounds += 1;
      }
    });
    const writers = Promise.allSettled([
      moveTeams(),
      spikeSamples(),
      runLifecycles(),
      resendSamples(),
      pruneOldWeeks(),
      importProcesses(),
      sealDays(),
    ]);
    const settled = await writers;
    writing = false;
    await Promise.all(readers);

    for (const result of settled) {
      if (result.status === 'rejected') violations.push(`a writer failed: ${String(result.reason)}`);
    }
    expect(violations).toEqual([]);
    expect(readerRounds).toBeGreaterThan(3);

    expect(await aggregateDifferences(db.dataSource, org, AGED)).toEqual([]);
    expect(await rankedTotalsDifferences(db.dataSource, org)).toEqual([]);
    expect(await rollupResidue(db.dataSource, org, AGED)).toEqual({});
    expect(await hourlyUsageDifferences(db.dataSource, org)).toEqual([]);
    expect(await dailyUsageDifferences(db.dataSource, org)).toEqual([]);
    expect(await workloadSummaryDifferences(db.dataSource, org)).toEqual([]);
    // The residue check re-settles energy as it deletes samples: the settled amounts are checked here.
    expect(await settledEnergyDifferences(db.dataSource, org)).toEqual([]);
    expect(await statusTotalsDifferences(db.dataSource, org)).toEqual([]);
    // The writers left every kind of share behind (units per device: MIG 1g/2g/3g, replicas, whole).
    const kinds = await db.dataSource.query(
      `SELECT DISTINCT gpu_share_units / gpu_count AS units FROM workloads WHERE organization_id = $1 ORDER BY 1`,
      [org],
    );
    expect(kinds.map((kind: { units: number }) => kind.units)).toEqual([720, 1260, 1440, 2160, 5040]);
    // Pruned samples stay counted once in the lifetime aggregates, never twice.
    const aged = await db.dataSource.query(
      `SELECT workload_id, sample_count::int FROM metric_aggregates WHERE organization_id = $1 AND workload_id = ANY ($2)
       ORDER BY workload_id`,
      [org, AGED],
    );
    expect(aged).toEqual(AGED.map((workload_id) => ({ workload_id, sample_count: agedSampleTimes.length })));
    const [{ retained }] = await db.dataSource.query(
      `SELECT count(*)::int AS retained FROM ${ALL_SAMPLES_SQL} s WHERE organization_id = $1 AND workload_id = ANY ($2)`,
      [org, AGED],
    );
    expect(retained).toBeLessThan(AGED.length * agedSampleTimes.length);
  }, 300_000);
});
