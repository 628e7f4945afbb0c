import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import {
  authHeaders,
  createApiToken,
  insertSamples,
  insertWorkloads,
  seedOrganization,
  uniqueId,
} from '../../support/factories';
import { runGpucap } from '../../support/serve-process';
import { createTestApp, type TestApp, testDatabaseUrl } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';
import { AlertmanagerHarness, alertmanagerAvailableForTests, WebhookReceiver } from './alertmanager-harness';

/*
 * `gpucap alerts` end to end, as an operator runs it (a child process), against a real Alertmanager
 * (Debian's binary) whose webhook receiver is an HTTP server of this test: what arrives there is what
 * Slack, e-mail or PagerDuty would have been told. GET /v1/alerts is read through the real app.
 */

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DASHBOARD = 'https://gpucap.example.com/';
const ROOT = join(__dirname, '..', '..', '..');

describe('gpucap alerts with a real Alertmanager', () => {
  let available = false;
  let app: TestApp;
  let receiver: WebhookReceiver;
  let alertmanager: AlertmanagerHarness;
  let directory: string;
  let organizationId: string;
  const now = Date.now();
  const at = (msAgo: number) => new Date(now - msAgo);

  beforeAll(async () => {
    available = await alertmanagerAvailableForTests(
      'alerts.e2e-spec (threshold notification, resolution, Alertmanager restart, MEMBER scope)',
    );
    if (!available) return;
    app = await createTestApp();
    receiver = new WebhookReceiver();
    await receiver.start();
    alertmanager = new AlertmanagerHarness(`http://127.0.0.1:${receiver.port}/hook`);
    await alertmanager.start();
    directory = mkdtempSync(join(tmpdir(), 'gpucap-alerts-'));
    organizationId = await seedOrganization(app.dataSource, {
      budgetPeriodStart: at(30 * 24 * HOUR),
      budgetPeriodEnd: new Date(now + 30 * 24 * HOUR),
      initiatives: ['team-a', 'team-b'],
      pools: [{ poolId: 'pool-a100', instanceTypes: ['a100'] }],
      allocations: [
        { initiativeId: 'team-a', poolId: 'pool-a100', allocatedGpuHours: 100 },
        { initiativeId: 'team-b', poolId: 'pool-a100', allocatedGpuHours: 400 },
      ],
    });
    await insertWorkloads(app.dataSource, organizationId, [
      // 91 GPU hours of team-a's 100: past 0.9, below 1.0.
      {
        workloadId: 'wl-a-train',
        initiativeId: 'team-a',
        status: 'completed',
        instanceType: 'a100',
        gpuCount: 1,
        submittedBy: 'alice@acme.example',
        submittedAt: at(101 * HOUR),
        startedAt: at(100 * HOUR),
        completedAt: at(9 * HOUR),
        exitCode: 0,
      },
      // Holds 2 GPUs for 2 h at 3 % utilization: idle.
      {
        workloadId: 'wl-b-idle',
        initiativeId: 'team-b',
        status: 'running',
        instanceType: 'a100',
        gpuCount: 2,
        submittedBy: 'bob@acme.example',
        submittedAt: at(2 * HOUR + MINUTE),
        startedAt: at(2 * HOUR),
        completedAt: null,
        exitCode: null,
      },
    ]);
    await insertSamples(
      app.dataSource,
      organizationId,
      Array.from({ length: 24 }, (_, index) => ({
        workloadId: 'wl-b-idle',
        at: at((index + 1) * 5 * MINUTE),
        gpuUtilization: 3,
      })),
    );
    await app.dataSource.query(
      `INSERT INTO sync_watermarks (organization_id, cluster_id, source, read_until, updated_at)
       VALUES ($1, 'gpu-east', 'prometheus', $2, $2), ($1, '', 'kubernetes', $3, $3)`,
      [organizationId, at(2 * HOUR), new Date(now)],
    );
  });

  afterAll(async () => {
    if (!available) return;
    await alertmanager.close();
    await receiver.close();
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  function writeConfig(name: string, alertmanagerUrl: string, rules?: object): string {
    const file = join(directory, name);
    writeFileSync(
      file,
      [
        `organization_id: ${organizationId}`,
        `alertmanager: { url: "${alertmanagerUrl}" }`,
        `dashboard_url: "${DASHBOARD}"`,
        'rules:',
        ...(rules
          ? [`  ${JSON.stringify(rules)}`]
          : [
              '  budget_thresholds: [0.75, 0.9, 1.0]',
              '  exhaustion_forecast: true',
              '  idle_workload: { max_utilization: 10, for_minutes: 60 }',
              '  sync_stale_minutes: 30',
            ]),
        '',
      ].join('\n'),
    );
    return file;
  }

  const env = () => ({ DATABASE_URL: testDatabaseUrl() });
  const teamABudget = () => ({
    alertname: 'GpuBudgetThresholdCrossed',
    organization_id: organizationId,
    kind: 'initiative',
    initiative_id: 'team-a',
    threshold: '0.9',
    severity: 'warning',
  });

  async function capacityOfTeamA(): Promise<{ used_gpu_hours: number; allocated_gpu_hours: number }> {
    const admin = await createApiToken(app.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const response = await request(app.server).get('/v1/capacity').set(authHeaders(admin, organizationId));
    return (response.body.data.initiatives as { initiative_id: string }[]).find(
      (entry) => entry.initiative_id === 'team-a',
    ) as unknown as { used_gpu_hours: number; allocated_gpu_hours: number };
  }

  it('delivers a team crossing 90 %, an idle workload and a stale source as notifications with their labels', async () => {
    if (!available) return;
    const config = writeConfig('alerts.yaml', alertmanager.url);
    const run = await runGpucap(['alerts', '--config', config, '--once'], env());
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^alerts ${organizationId}: \\d+ firing, 0 resolved, sent to Alertmanager\\n$`),
    );

    const budget = await receiver.received(teamABudget(), 'firing');
    expect(budget.labels).toEqual(teamABudget());
    expect(budget.generatorURL).toBe(DASHBOARD);
    expect(budget.annotations.summary).toBe("Team 'team-a' has used 91 % of its GPU-hour budget");
    expect(budget.annotations.description).toContain('has used 91 of its 100 allocated GPU hours');
    // The alert fires at exactly the usage GET /v1/capacity reports.
    expect(await capacityOfTeamA()).toMatchObject({ used_gpu_hours: 91, allocated_gpu_hours: 100 });

    const forecast = await receiver.received(
      { alertname: 'GpuBudgetExhaustionForecast', initiative_id: 'team-a' },
      'firing',
    );
    expect(forecast.labels).toEqual({
      alertname: 'GpuBudgetExhaustionForecast',
      organization_id: organizationId,
      kind: 'initiative',
      initiative_id: 'team-a',
      severity: 'warning',
    });
    // 91 GPU hours in the last 7 days burn 13 a day: the 9 left last 0.6923 days.
    const projected = new Date(forecast.annotations.projected_exhaustion_date).getTime();
    expect(Math.abs(projected - (now + (9 / 13) * 24 * HOUR))).toBeLessThan(5 * MINUTE);

    const idle = await receiver.received({ alertname: 'GpuWorkloadIdle' }, 'firing');
    expect(idle.labels).toEqual({
      alertname: 'GpuWorkloadIdle',
      organization_id: organizationId,
      initiative_id: 'team-b',
      workload_id: 'wl-b-idle',
      submitted_by: 'bob@acme.example',
      severity: 'warning',
    });
    expect(idle.annotations.description).toContain('holds 2 GPU(s) of a100 and averaged 3 % GPU utilization');

    const stale = await receiver.received({ alertname: 'GpucapSyncStale' }, 'firing');
    expect(stale.labels).toEqual({
      alertname: 'GpucapSyncStale',
      organization_id: organizationId,
      source: 'prometheus',
      cluster_id: 'gpu-east',
      severity: 'warning',
    });
    // The fresh kubernetes source is no alert; team-b (under 75 %) has no budget alert.
    const held = await alertmanager.alerts();
    expect(held.filter((alert) => alert.labels.source === 'kubernetes')).toEqual([]);
    expect(
      held.filter(
        (alert) =>
          alert.labels.alertname === 'GpuBudgetThresholdCrossed' && alert.labels.initiative_id === 'team-b',
      ),
    ).toEqual([]);
  });

  it("lists what is firing in GET /v1/alerts, and shows a MEMBER nothing of other teams'", async () => {
    if (!available) return;
    const admin = await createApiToken(app.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const all = await request(app.server)
      .get('/v1/alerts')
      .set(authHeaders(admin, organizationId))
      .expect(200);
    const names = (all.body.data.alerts as { labels: Record<string, string> }[])
      .map(
        (alert) =>
          `${alert.labels.alertname}:${alert.labels.kind ?? ''}:${alert.labels.pool_id ?? alert.labels.initiative_id ?? alert.labels.source}`,
      )
      .sort();
    expect(names).toEqual([
      'GpuBudgetExhaustionForecast:initiative:team-a',
      'GpuBudgetExhaustionForecast:pool:pool-a100',
      'GpuBudgetThresholdCrossed:initiative:team-a',
      'GpuWorkloadIdle::team-b',
      'GpucapSyncStale::prometheus',
    ]);
    expect(all.body.metadata.as_of).toEqual(expect.any(String));

    const member = await createApiToken(app.dataSource, organizationId, {
      role: 'MEMBER',
      initiativeIds: ['team-b'],
    });
    const mine = await request(app.server)
      .get('/v1/alerts')
      .set(authHeaders(member, organizationId))
      .expect(200);
    expect(mine.body.data.alerts).toEqual([
      {
        alertname: 'GpuWorkloadIdle',
        labels: {
          alertname: 'GpuWorkloadIdle',
          organization_id: organizationId,
          initiative_id: 'team-b',
          workload_id: 'wl-b-idle',
          submitted_by: 'bob@acme.example',
          severity: 'warning',
        },
        annotations: expect.objectContaining({ summary: expect.stringContaining("'wl-b-idle'") }),
        starts_at: expect.any(String),
      },
    ]);
    const csv = await request(app.server)
      .get('/v1/alerts')
      .set(authHeaders(member, organizationId))
      .set('Accept', 'text/csv')
      .expect(200)
      .expect('Content-Type', 'text/csv; charset=utf-8');
    const [header, line, ...rest] = csv.text.trimEnd().split('\r\n');
    expect(rest).toEqual([]);
    expect(header.split(',')).toEqual([
      'alertname',
      'labels_alertname',
      'labels_initiative_id',
      'labels_organization_id',
      'labels_severity',
      'labels_submitted_by',
      'labels_workload_id',
      'annotations_summary',
      'annotations_description',
      'starts_at',
    ]);
    expect(
      line.startsWith(
        `GpuWorkloadIdle,GpuWorkloadIdle,team-b,${organizationId},warning,bob@acme.example,wl-b-idle,`,
      ),
    ).toBe(true);
    const outsider = await createApiToken(app.dataSource, organizationId, {
      role: 'MEMBER',
      initiativeIds: [],
    });
    const none = await request(app.server)
      .get('/v1/alerts')
      .set(authHeaders(outsider, organizationId))
      .expect(200);
    expect(none.body.data).toEqual({ alerts: [] });
  });

  it('sends the condition clearing once, as resolved', async () => {
    if (!available) return;
    await app.dataSource.query(
      `UPDATE allocations SET allocated_gpu_hours = 1000 WHERE organization_id = $1 AND initiative_id = 'team-a'`,
      [organizationId],
    );
    const config = writeConfig('alerts.yaml', alertmanager.url);
    const run = await runGpucap(['alerts', '--config', config, '--once'], env());
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/ [1-9]\d* resolved, sent to Alertmanager/);
    const resolved = await receiver.received(teamABudget(), 'resolved');
    expect(resolved.labels).toEqual(teamABudget());
    expect(new Date(resolved.endsAt).getTime()).toBeLessThanOrEqual(Date.now());

    // Delivered once: the next cycle has nothing left to resolve.
    const again = await runGpucap(['alerts', '--config', config, '--once'], env());
    expect(again.stdout).toMatch(/, 0 resolved, sent to Alertmanager/);
    const admin = await createApiToken(app.dataSource, organizationId, { role: 'ORG_ADMIN' });
    const listed = await request(app.server)
      .get('/v1/alerts')
      .set(authHeaders(admin, organizationId))
      .expect(200);
    expect(
      (listed.body.data.alerts as { labels: Record<string, string> }[]).filter(
        (alert) => alert.labels.initiative_id === 'team-a',
      ),
    ).toEqual([]);
  });

  it('fails one cycle in one line while Alertmanager is down, and delivers what fired once it is back', async () => {
    if (!available) return;
    await alertmanager.stop();
    await app.dataSource.query(
      `UPDATE allocations SET allocated_gpu_hours = 100 WHERE organization_id = $1 AND initiative_id = 'team-a'`,
      [organizationId],
    );
    receiver.alerts.length = 0;
    const config = writeConfig('alerts.yaml', alertmanager.url);
    const once = await runGpucap(['alerts', '--config', config, '--once'], env());
    expect(once.code).toBe(1);
    expect(once.stdout).toBe('');
    expect(once.stderr).toBe(`alerts ${organizationId}: Alertmanager unreachable (ECONNREFUSED)\n`);

    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin', 'gpucap.js'), 'alerts', '--config', config, '--every', '1m'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env(), LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await waitFor(async () => log.includes('alerts cycle failed'), 30_000);
      const failure = log.split('\n').find((line) => line.includes('alerts cycle failed'))!;
      expect(JSON.parse(failure)).toMatchObject({
        level: 'warn',
        msg: 'alerts cycle failed: Alertmanager unreachable (ECONNREFUSED)',
        next_attempt_in_s: 5,
      });
      await alertmanager.start();
      const budget = await receiver.received(teamABudget(), 'firing');
      expect(budget.labels).toEqual(teamABudget());
      await waitFor(async () => log.includes('"msg":"alerts sent to Alertmanager"'), 10_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('never duplicates a notification: two processes at once, and a restarted one, are one alert', async () => {
    if (!available) return;
    // team-b's 4 GPU-hours of 5: past 0.75.
    await app.dataSource.query(
      `UPDATE allocations SET allocated_gpu_hours = 5 WHERE organization_id = $1 AND initiative_id = 'team-b'`,
      [organizationId],
    );
    const labels = {
      alertname: 'GpuBudgetThresholdCrossed',
      organization_id: organizationId,
      kind: 'initiative',
      initiative_id: 'team-b',
      threshold: '0.75',
      severity: 'warning',
    };
    const config = writeConfig('alerts.yaml', alertmanager.url);
    const runs = await Promise.all([
      runGpucap(['alerts', '--config', config, '--once'], env()),
      runGpucap(['alerts', '--config', config, '--once'], env()),
    ]);
    expect(runs.map((run) => run.code)).toEqual([0, 0]);
    await receiver.received(labels, 'firing');
    expect((await runGpucap(['alerts', '--config', config, '--once'], env())).code).toBe(0);
    // Past group_wait and a few group_intervals: anything duplicated would have arrived by now.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const notified = receiver.alerts.filter(
      (alert) =>
        alert.status === 'firing' &&
        alert.labels.initiative_id === 'team-b' &&
        alert.labels.alertname === 'GpuBudgetThresholdCrossed',
    );
    expect(notified.map((alert) => alert.labels)).toEqual([labels]);
  });

  it('stops on a bad config or an unknown organization before any request, naming it', async () => {
    if (!available) return;
    let requests = 0;
    const counter = createServer((_request, response) => {
      requests += 1;
      response.writeHead(200).end();
    });
    await new Promise<void>((resolve) => counter.listen(0, '127.0.0.1', resolve));
    const port = (counter.address() as { port: number }).port;
    try {
      const config = writeConfig('bad.yaml', `http://127.0.0.1:${port}`, {
        idle_workload: { max_utilization: 10, for_minutes: 0 },
      });
      const run = await runGpucap(['alerts', '--config', config, '--once'], env());
      expect(run.code).not.toBe(0);
      expect(run.stderr).toContain('rules.idle_workload.for_minutes: must not be less than 1');
      expect(requests).toBe(0);

      const unknown = join(directory, 'unknown.json');
      writeFileSync(
        unknown,
        JSON.stringify({
          organization_id: 'org-nobody',
          alertmanager: { url: `http://127.0.0.1:${port}` },
          dashboard_url: DASHBOARD,
          rules: { budget_thresholds: [0.9] },
        }),
      );
      const nobody = await runGpucap(['alerts', '--config', unknown, '--once'], env());
      expect(nobody).toEqual({
        code: 1,
        stdout: '',
        stderr: `alerts ${unknown}: organization 'org-nobody' does not exist\n`,
      });
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => counter.close(resolve));
    }
  });

  it('an organization without alerts sends none and answers an empty list', async () => {
    if (!available) return;
    const other = await seedOrganization(app.dataSource, { organizationId: uniqueId('org-quiet') });
    const config = join(directory, 'quiet.json');
    writeFileSync(
      config,
      JSON.stringify({
        organization_id: other,
        alertmanager: { url: alertmanager.url },
        dashboard_url: DASHBOARD,
        rules: { budget_thresholds: [0.5], exhaustion_forecast: true, sync_stale_minutes: 5 },
      }),
    );
    const run = await runGpucap(['alerts', '--config', config, '--once'], env());
    expect(run).toEqual({
      code: 0,
      stdout: `alerts ${other}: 0 firing, 0 resolved, sent to Alertmanager\n`,
      stderr: '',
    });
    const token = await createApiToken(app.dataSource, other, { role: 'ORG_ADMIN' });
    const response = await request(app.server).get('/v1/alerts').set(authHeaders(token, other)).expect(200);
    expect(response.body.data).toEqual({ alerts: [] });
  });
});
