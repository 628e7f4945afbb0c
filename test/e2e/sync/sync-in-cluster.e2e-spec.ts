import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniqueId } from '../../support/factories';
import { freePort, runGpucap } from '../../support/serve-process';
import { testDatabaseUrl } from '../../support/test-app';

/*
 * A Kubernetes source without a kubeconfig uses the cluster it runs in when the app config has
 * KUBERNETES_SERVICE_HOST (as Kubernetes sets it in every pod), and says it is not in one otherwise.
 */
describe('gpucap sync: Kubernetes without a kubeconfig', () => {
  let directory: string;
  let config: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'gpucap-sync-in-cluster-'));
    config = join(directory, 'sync.json');
    writeFileSync(
      config,
      JSON.stringify({
        organization_id: uniqueId('org-in-cluster'),
        unknown_initiatives: 'create',
        kubernetes: { timeout_seconds: 5 },
      }),
    );
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  const sync = (env: Record<string, string>) =>
    runGpucap(['sync', '--config', config, '--once'], { DATABASE_URL: testDatabaseUrl(), ...env });

  it('outside a cluster fails the source, naming the variable', async () => {
    const run = await sync({ KUBERNETES_SERVICE_HOST: '' });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      'kubernetes: FAILED: no kubeconfig given, and not running in a cluster (KUBERNETES_SERVICE_HOST is unset)\n',
    );
  });

  it("inside one (KUBERNETES_SERVICE_HOST set) uses the pod's service account and the API server named", async () => {
    // A closed port: where this runs in a pod, its own API server is never asked.
    const port = await freePort();
    const run = await sync({ KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port) });
    expect(run.code).toBe(1);
    const lines = run.stdout.split('\n');
    expect(lines).toHaveLength(2);
    // Outside a pod the service account's files are missing; inside one, the closed port answers.
    expect([
      "kubernetes: FAILED: list pods failed: ENOENT: no such file or directory, open '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt'",
      `kubernetes: FAILED: cannot reach the Kubernetes API at https://127.0.0.1:${port} (ECONNREFUSED)`,
    ]).toContain(lines[0]);
  });
});
