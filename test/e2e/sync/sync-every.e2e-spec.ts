import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedOrganization, uniqueId } from '../../support/factories';
import { PROJECT_ROOT } from '../../support/import-fixture';
import { freePort, runGpucap } from '../../support/serve-process';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';
import { waitFor } from '../../support/wait-for';
import { KubernetesFixtureServer } from './kubernetes-fixture-server';
import { fixture, writeFixture } from './sync-fixtures';

/*
 * `gpucap sync --every` with a YAML config: JSON log lines per source and run, a source that is down
 * (Prometheus on a closed port) retried with back-off while the others keep their interval, unknown
 * initiatives refused as the config says, and a clean stop on SIGTERM. Kubernetes is the served
 * PodList/NodeList fixture (no real API server can run here).
 */
describe('gpucap sync --every', () => {
  let t: TestApp;
  let directory: string;
  let kubernetes: KubernetesFixtureServer;
  let organizationId: string;

  beforeAll(async () => {
    const base = Math.floor(Date.now() / 60_000) * 60;
    directory = mkdtempSync(join(tmpdir(), 'gpucap-sync-every-'));
    kubernetes = new KubernetesFixtureServer();
    kubernetes.nodes = fixture('nodes.json', base);
    kubernetes.pods = fixture('pods-run1.json', base);
    await kubernetes.start();
    kubernetes.writeKubeconfig(join(directory, 'kubeconfig'));
    writeFixture('sacct-run1.json', base, join(directory, 'sacct.json'));
    t = await createTestApp();
    organizationId = await seedOrganization(t.dataSource, {
      initiatives: ['vision', 'physics', 'chemistry'],
    });
  });

  afterAll(async () => {
    await kubernetes.close();
    await t.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('logs JSON per source and run, backs off a source that is down, refuses unknown initiatives, stops on SIGTERM', async () => {
    const config = join(directory, 'sync.yaml');
    writeFileSync(
      config,
      [
        `organization_id: ${organizationId}`,
        'unknown_initiatives: refuse',
        'kubernetes:',
        '  kubeconfig: ./kubeconfig',
        '  namespaces: [ml-vision, ml-nlp]',
        'prometheus:',
        `  url: http://127.0.0.1:${await freePort()}`,
        'slurm:',
        '  sacct_json_file: ./sacct.json',
        '  initiative_by_account: { physics: physics }',
        '',
      ].join('\n'),
    );
    const child = spawn(
      process.execPath,
      [join(PROJECT_ROOT, 'bin', 'gpucap.js'), 'sync', '--config', config, '--every', '1s'],
      { cwd: PROJECT_ROOT, env: { ...process.env, DATABASE_URL: testDatabaseUrl(), LOG_LEVEL: 'info' } },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    // 'close', not 'exit': the process can exit before its last lines are read from its pipes.
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const entries = () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const of = (source: string) => entries().filter((entry) => entry.source === source);
    try {
      await waitFor(async () => of('kubernetes').length >= 3, 60_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);

    const [firstKubernetes] = of('kubernetes');
    expect(firstKubernetes).toMatchObject({
      level: 'info',
      organization_id: organizationId,
      ok: true,
      read: 5,
      next_attempt_in_s: 1,
      refused: {
        "unknown initiative 'nlp' (unknown_initiatives: refuse; create it with gpucap import or set unknown_initiatives: create)": 2,
      },
    });
    expect(of('slurm')[0]).toMatchObject({ ok: true, read: 3, written: 2 });
    const prometheusEntries = of('prometheus');
    expect(prometheusEntries[0]).toMatchObject({
      level: 'warn',
      ok: false,
      error: expect.stringMatching(/^cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/),
      next_attempt_in_s: 5,
    });
    // Kubernetes ran every second while Prometheus waited out its back-off.
    expect(prometheusEntries.length).toBeLessThan(of('kubernetes').length);
    expect(entries().at(-1)).toMatchObject({ msg: 'sync stopped' });
    const workloads: { workload_id: string }[] = await t.dataSource.query(
      'SELECT workload_id FROM workloads WHERE organization_id = $1 ORDER BY 1',
      [organizationId],
    );
    expect(workloads.map((row) => row.workload_id)).toEqual([
      'k8s:6f1d3c2a-0b4e-4a8e-9a51-1c2d3e4f5a61',
      'k8s:c3d4e5f6-a7b8-4c9d-8e0f-a1b2c3d4e5f6',
      'slurm:hpc1:1001',
      'slurm:hpc1:1003',
    ]);
  });

  it('creates a missing organization when unknown_initiatives is create, and refuses to otherwise', async () => {
    const missing = uniqueId('org-new');
    const config = (policy: string) => {
      const file = join(directory, `${policy}-${missing}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          organization_id: missing,
          unknown_initiatives: policy,
          slurm: { sacct_json_file: './sacct.json' },
        }),
      );
      return file;
    };
    const env = { DATABASE_URL: testDatabaseUrl() };
    const refused = await runGpucap(['sync', '--config', config('refuse')], env);
    expect(refused.stdout).toBe(
      `slurm: FAILED: organization '${missing}' does not exist: create it with gpucap import (an organizations record), or set unknown_initiatives: create\n`,
    );
    expect(refused.code).toBe(1);

    const created = await runGpucap(['sync', '--config', config('create')], env);
    expect(created.stdout).toMatch(
      /^slurm: read 3 jobs; wrote 2 workloads, 0 samples; created 2 teams \(no budget: they show as exhausted until an allocation is imported\); unchanged 0; skipped 1 \(1 no gres\/gpu\)/,
    );
    expect(created.stderr).toContain("slurm: warning: created team '");
    expect(created.code).toBe(0);
    const [organization] = await t.dataSource.query(
      'SELECT name, timezone FROM organizations WHERE organization_id = $1',
      [missing],
    );
    expect(organization).toEqual({ name: missing, timezone: 'UTC' });
  });
});
