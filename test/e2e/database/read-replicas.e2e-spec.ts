import { request as httpRequest } from 'node:http';
import { createServer, connect, type Server } from 'node:net';
import request from 'supertest';
import { migrate } from '../../../src/database/database-target';
import { ReadReplicas } from '../../../src/database/read-replicas';
import { authHeaders, createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { redisAvailableForTests, TEST_REDIS_URL } from '../../support/redis';
import { runGpucap, type ServeProcess, startServe } from '../../support/serve-process';
import { replicasAvailableForTests, StreamingPair } from '../../support/streaming-replica';
import { createTestApp, type TestApp } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';

interface ListBody {
  data: { workloads: { workload_id: string; initiative_id: string }[] };
  metadata: { as_of: string; data_as_of: string; next_token: string | null };
}

const MAX_LAG_SECONDS = 3;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Against a real primary and streaming standby (Debian's PostgreSQL 15, `pg_basebackup -R`): which
 * server each request reads, what its answer says of its freshness, and that no replica trouble
 * (lag, a stop, a recovery conflict) ever reaches a caller as an error.
 */
describe('reads on streaming replicas', () => {
  let available = false;
  let pair: StreamingPair;
  let testApp: TestApp;
  let organizationId: string;
  let admin: Record<string, string>;
  let memberOfA: Record<string, string>;
  let submitted = 0;

  const replicas = () => testApp.app.get(ReadReplicas);
  const routedTo = (server: string) => replicas().routed.get(server) ?? 0;
  const list = () => request(testApp.server).get('/v1/workloads?limit=100').set(admin);
  const ids = (body: ListBody) => body.data.workloads.map((workload) => workload.workload_id);
  const replicaInUse = async () => {
    const health = await request(testApp.server).get('/v1/health');
    return (health.body as { data: { checks: { replicas: { in_use: boolean }[] } } }).data.checks.replicas[0]
      .in_use;
  };

  /** Writes a workload; returns the primary's clock just before and just after the commit. */
  async function write(workloadId: string): Promise<{ before: number; after: number }> {
    const [{ now: before }] = await pair.onPrimary<{ now: Date }>('SELECT clock_timestamp() AS now');
    submitted += 1;
    await insertWorkloads(testApp.dataSource, organizationId, [
      {
        workloadId,
        initiativeId: 'init-a',
        submittedAt: new Date(Date.UTC(2026, 10, 1) + submitted * 60_000),
      },
    ]);
    const [{ now: after }] = await pair.onPrimary<{ now: Date }>('SELECT clock_timestamp() AS now');
    return { before: before.getTime(), after: after.getTime() };
  }

  beforeAll(async () => {
    available = replicasAvailableForTests(
      'read-replicas.e2e-spec.ts (lag bound, data_as_of, a stopped standby, recovery conflicts, two processes behind a balancer)',
    );
    if (!available) return;
    pair = new StreamingPair();
    await pair.start((url) => migrate(url).then(() => undefined));
    testApp = await createTestApp(
      {
        DATABASE_READ_URLS: pair.standby.url,
        READ_REPLICA_MAX_LAG_SECONDS: String(MAX_LAG_SECONDS),
        // Every request runs its statements: a kept answer would hide which server a request read.
        RESPONSE_CACHE_TTL_SECONDS: '0',
      },
      pair.primary.url,
    );
    organizationId = await seedOrganization(testApp.dataSource);
    admin = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
    memberOfA = authHeaders(
      await createApiToken(testApp.dataSource, organizationId, { role: 'MEMBER', initiativeIds: ['init-a'] }),
      organizationId,
    );
    await insertWorkloads(
      testApp.dataSource,
      organizationId,
      Array.from({ length: 300 }, (_, index) => ({
        workloadId: `w-${String(index).padStart(3, '0')}`,
        initiativeId: index % 2 === 0 ? 'init-a' : 'init-b',
        submittedAt: new Date(Date.UTC(2026, 9, 1) + index * 60_000),
      })),
    );
    await waitFor(replicaInUse, 20_000);
  }, 120_000);

  afterAll(async () => {
    await testApp?.close();
    await pair?.stop();
  });

  it('within the bound, answers state the standby older data_as_of and never show a write they claim to predate', async () => {
    if (!available) return;
    const health = await request(testApp.server).get('/v1/health').expect(200);
    expect(health.body.data.checks.replicas).toEqual([
      { replica: 1, lag_seconds: expect.any(Number), in_use: true },
    ]);
    pair.standby.configure({ recovery_min_apply_delay: '1500ms' });
    await sleep(300);
    const fromReplica = routedTo('replica-1');
    const committed = await write('w-late');
    let sawOlder = false;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      const response = await list().expect(200);
      const body = response.body as ListBody;
      const dataAsOf = Date.parse(body.metadata.data_as_of);
      expect(response.headers['x-data-as-of']).toBe(body.metadata.data_as_of);
      const shows = ids(body).includes('w-late');
      if (!shows) {
        // Without the write, the answer must say its data is from before it was committed.
        expect(dataAsOf).toBeLessThan(committed.after);
        sawOlder = true;
      }
      if (dataAsOf >= committed.after) expect(shows).toBe(true);
      if (shows) break;
      await sleep(100);
    }
    expect(sawOlder).toBe(true);
    expect(routedTo('replica-1')).toBeGreaterThan(fromReplica);
    expect(ids((await list().expect(200)).body as ListBody)).toContain('w-late');

    // A detail the standby does not have yet is asked of the primary before it is a 404.
    await write('w-detail');
    const detail = await request(testApp.server).get('/v1/workloads/w-detail').set(admin).expect(200);
    expect(detail.body.data.workload_id).toBe('w-detail');
    // Nor does this process go back to the standby's older data for this organization afterwards.
    expect(ids((await list().expect(200)).body as ListBody)).toContain('w-detail');
    pair.standby.configure({ recovery_min_apply_delay: '0' });
  }, 30_000);

  it('beyond the bound, every answer comes from the primary, until the standby catches up', async () => {
    if (!available) return;
    await waitFor(replicaInUse, 20_000);
    pair.standby.configure({ recovery_min_apply_delay: '60s' });
    await sleep(300);
    const committed = await write('w-delayed');
    await waitFor(async () => !(await replicaInUse()), 20_000);
    const health = await request(testApp.server).get('/v1/health').expect(200);
    expect(health.body.data.checks.replicas[0].lag_seconds).toBeGreaterThan(MAX_LAG_SECONDS);
    const fromReplica = routedTo('replica-1');
    for (let index = 0; index < 10; index++) {
      const body = (await list().expect(200)).body as ListBody;
      expect(ids(body)).toContain('w-delayed');
      expect(Date.parse(body.metadata.data_as_of)).toBeGreaterThanOrEqual(committed.after);
    }
    expect(routedTo('replica-1')).toBe(fromReplica);
    pair.standby.configure({ recovery_min_apply_delay: '0' });
    await waitFor(replicaInUse, 20_000);
    const fresh = (await list().expect(200)).body as ListBody;
    expect(ids(fresh)).toContain('w-delayed');
    expect(routedTo('replica-1')).toBeGreaterThan(fromReplica);
  }, 60_000);

  it('retries a request whose statement a recovery conflict cancelled on the primary: 0 non-2xx', async () => {
    if (!available) return;
    await waitFor(replicaInUse, 20_000);
    pair.standby.configure({ max_standby_streaming_delay: '0' });
    await sleep(300);
    let running = true;
    // Each replayed ACCESS EXCLUSIVE lock cancels the standby's statements reading the table at once.
    const locker = (async () => {
      while (running) {
        await pair.onPrimary(
          'DO $$ BEGIN LOCK TABLE workloads IN ACCESS EXCLUSIVE MODE; PERFORM pg_sleep(0.005); END $$',
        );
      }
    })();
    const statuses: number[] = [];
    const worker = async () => {
      while (replicas().conflictsRetried === 0 && statuses.length < 2000) {
        statuses.push((await request(testApp.server).get('/v1/workloads/stats').set(admin)).status);
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    running = false;
    await locker;
    pair.standby.configure({ max_standby_streaming_delay: '30s' });
    expect(replicas().conflictsRetried).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const metrics = await request(testApp.server).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/^gpucap_read_conflicts_retried_total [1-9]\d*$/m);
    expect(metrics.text).toMatch(/^gpucap_read_requests_total\{server="replica-1"\} [1-9]\d*$/m);
    expect(metrics.text).toMatch(/^gpucap_read_replica_lag_seconds\{replica="1"\} /m);
  }, 60_000);

  it('two API processes behind one port share rate limits, page tokens, and never serve another scope its answer', async () => {
    if (!available || !(await redisAvailableForTests('two processes behind a balancer, sharing Redis')))
      return;
    await waitFor(replicaInUse, 20_000);
    const env = {
      DATABASE_URL: pair.primary.url,
      DATABASE_READ_URLS: pair.standby.url,
      REDIS_URL: TEST_REDIS_URL,
      CURSOR_SECRET: 'shared-by-both-processes',
      RATE_LIMIT_PER_MINUTE: '40',
    };
    const processes: ServeProcess[] = [];
    const balancer = new RoundRobinBalancer();
    try {
      processes.push(await startServe(env, 60_000, ['--no-migrate']));
      processes.push(await startServe(env, 60_000, ['--no-migrate']));
      const port = await balancer.start(processes.map((serve) => serve.port));
      const get = (path: string, headers: Record<string, string>) => getOnce(port, path, headers);

      const statuses: number[] = [];
      for (let index = 0; index < 8; index++) {
        const asAdmin = await get('/v1/workloads?limit=100', admin);
        const asMember = await get('/v1/workloads?limit=100', memberOfA);
        statuses.push(asAdmin.status, asMember.status);
        const teams = (body: unknown) =>
          new Set((body as ListBody).data.workloads.map((row) => row.initiative_id));
        expect([...teams(asAdmin.body)].sort()).toEqual(['init-a', 'init-b']);
        expect([...teams(asMember.body)]).toEqual(['init-a']);
        expect(asMember.headers['x-data-as-of']).toBe((asMember.body as ListBody).metadata.data_as_of);
      }
      expect(statuses.every((status) => status === 200)).toBe(true);

      // A page token from one process continues on the other.
      const first = await get('/v1/workloads?limit=5', admin);
      const token = (first.body as ListBody).metadata.next_token!;
      const second = await get(`/v1/workloads?limit=5&next_token=${encodeURIComponent(token)}`, admin);
      expect(second.status).toBe(200);
      expect(ids(second.body as ListBody)).toHaveLength(5);
      expect(ids(second.body as ListBody)[0]).not.toBe(ids(first.body as ListBody)[0]);

      // The admin's budget (40 a minute) is counted across both processes: 10 were spent above.
      const more: number[] = [];
      for (let index = 0; index < 32; index++) more.push((await get('/v1/workloads?limit=1', admin)).status);
      expect(more.filter((status) => status === 200)).toHaveLength(40 - 10);
      expect(more.filter((status) => status === 429)).toHaveLength(2);
      expect(balancer.connections.every((count) => count > 10)).toBe(true);
    } finally {
      await balancer.stop();
      for (const serve of processes) {
        serve.child.kill('SIGTERM');
        await serve.exited;
      }
    }
  }, 180_000);

  it('with the primary down, reads go on from the standby stating their freshness, and writers fail clearly', async () => {
    if (!available) return;
    await waitFor(replicaInUse, 20_000);
    const before = (await list().expect(200)).body as ListBody;
    await pair.primary.stop();
    try {
      const stoppedAt = Date.now();
      for (let index = 0; index < 10; index++) {
        const response = await request(testApp.server).get('/v1/workloads?limit=100').set(memberOfA);
        expect(response.status).toBe(200);
        const body = response.body as ListBody;
        expect(body.data.workloads.every((row) => row.initiative_id === 'init-a')).toBe(true);
        // What the primary last wrote, no later than it went away.
        expect(Date.parse(body.metadata.data_as_of)).toBeLessThanOrEqual(stoppedAt);
        expect(response.headers['x-data-as-of']).toBe(body.metadata.data_as_of);
      }
      expect(ids((await list().expect(200)).body as ListBody)).toEqual(ids(before));
      const health = await request(testApp.server).get('/v1/health').expect(200);
      expect(health.body.data).toMatchObject({
        status: 'healthy',
        checks: { database: 'down', replicas: [{ replica: 1, in_use: true }] },
      });
      const writer = await runGpucap(['tokens', 'create', '--org', organizationId, '--role', 'ORG_ADMIN'], {
        DATABASE_URL: pair.primary.url,
      });
      expect(writer.code).not.toBe(0);
      expect(writer.stderr).toMatch(/^gpucap tokens create failed: connect ECONNREFUSED/);
    } finally {
      await pair.primary.start();
    }
    await waitFor(
      async () => (await request(testApp.server).get('/v1/health')).body.data.checks.database === 'ok',
    );
    await waitFor(replicaInUse, 30_000);
  }, 90_000);

  it('goes on from the primary when the standby is stopped mid-run: 0 non-2xx', async () => {
    if (!available) return;
    await waitFor(replicaInUse, 20_000);
    const fromReplica = routedTo('replica-1');
    const statuses: number[] = [];
    let running = true;
    const worker = async () => {
      while (running) statuses.push((await list()).status);
    };
    const workers = Promise.all([worker(), worker(), worker(), worker()]);
    await sleep(1_000);
    expect(routedTo('replica-1')).toBeGreaterThan(fromReplica);
    await pair.standby.stop();
    await sleep(2_000);
    running = false;
    await workers;
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(await replicaInUse()).toBe(false);
    const health = await request(testApp.server).get('/v1/health').expect(200);
    expect(health.body.data.checks).toMatchObject({
      database: 'ok',
      replicas: [{ replica: 1, in_use: false }],
    });
  }, 60_000);
});

/** One GET on a connection of its own, so a round-robin balancer sends consecutive requests to each backend. */
function getOnce(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: JSON.parse(text) as unknown,
        }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** A test load balancer: each new connection goes to the next backend in turn. */
class RoundRobinBalancer {
  private server: Server | null = null;
  connections: number[] = [];

  async start(ports: number[]): Promise<number> {
    this.connections = ports.map(() => 0);
    let next = 0;
    this.server = createServer((client) => {
      const index = next++ % ports.length;
      this.connections[index] += 1;
      const upstream = connect(ports[index], '127.0.0.1');
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
