import { Client } from 'pg';
import request from 'supertest';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { createTestApp, testDatabaseUrl, type TestApp } from '../../support/test-app';

/*
 * Aggregate reads take turns ("cold reads that don't pile up"): with
 * AGGREGATE_READ_CONCURRENCY=1, a statistics read held up inside PostgreSQL (its rollup table locked
 * by the test) keeps the next statistics and capacity reads waiting in the service, not in the
 * database, while a workload's detail is still answered. Released, every one of them answers with
 * its figures.
 */

const DAY_MS = 86_400_000;

function gauge(body: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(body);
  if (!match) throw new Error(`${name} is not exposed`);
  return Number(match[1]);
}

describe('aggregate reads take turns', () => {
  let t: TestApp;
  let org: string;
  let admin: Record<string, string>;
  let locker: Client;

  beforeAll(async () => {
    t = await createTestApp({ AGGREGATE_READ_CONCURRENCY: '1' });
    org = await seedOrganization(t.dataSource);
    admin = authHeaders(await createApiToken(t.dataSource, org, { role: 'ORG_ADMIN' }), org);
    const now = Date.now();
    await insertWorkloads(
      t.dataSource,
      org,
      [2, 3, 4].map((days) => ({
        workloadId: `done-${days}`,
        status: 'completed' as const,
        gpuCount: 2,
        submittedAt: new Date(now - days * DAY_MS),
        startedAt: new Date(now - days * DAY_MS),
        completedAt: new Date(now - days * DAY_MS + 3_600_000),
      })),
    );
    locker = new Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
  });

  afterAll(async () => {
    await locker.end();
    await t.close();
  });

  async function gateGauges(): Promise<{ running: number; waiting: number }> {
    const { text } = await request(t.server).get('/metrics').expect(200);
    return {
      running: gauge(text, 'gpucap_aggregate_reads_running'),
      waiting: gauge(text, 'gpucap_aggregate_reads_waiting'),
    };
  }

  async function gaugesReach(expected: { running: number; waiting: number }): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      if (JSON.stringify(await gateGauges()) === JSON.stringify(expected)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await gateGauges()).toEqual(expected);
  }

  it('runs one at a time, in the service, while light reads go on', async () => {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE workload_period_rollups IN ACCESS EXCLUSIVE MODE');
    const held = request(t.server).get('/v1/workloads/stats?time_range=last_30_days').set(admin).then();
    await gaugesReach({ running: 1, waiting: 0 });
    const grouped = request(t.server)
      .get('/v1/workloads/stats?time_range=last_30_days&group_by=instance_type')
      .set(admin)
      .then();
    const capacity = request(t.server).get('/v1/capacity').set(admin).then();
    await gaugesReach({ running: 1, waiting: 2 });

    const { rows } = await locker.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'gpucap' AND wait_event_type = 'Lock'`,
    );
    expect(rows[0].waiting).toBe(1);
    const detail = await request(t.server).get('/v1/workloads/done-2').set(admin);
    expect([detail.status, detail.body.data.workload_id]).toEqual([200, 'done-2']);

    await locker.query('COMMIT');
    const [first, second, third] = await Promise.all([held, grouped, capacity]);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    expect(first.body.data.summary.total_workloads).toBe(3);
    expect(first.body.data.summary.total_gpu_hours).toBe(6);
    expect(second.body.data.grouped.map((group: { workload_count: number }) => group.workload_count)).toEqual(
      [3],
    );
    expect(third.body.data).toHaveProperty('summary');
    expect(await gateGauges()).toEqual({ running: 0, waiting: 0 });
  });
});
