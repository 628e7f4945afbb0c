import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization } from '../../support/factories';
import { freePort, runGpucap } from '../../support/serve-process';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';
import { KubernetesFixtureServer } from './kubernetes-fixture-server';
import { prometheusAvailableForTests, PrometheusHarness, SeriesData } from './prometheus-harness';
import { dcgmSeries, fixture, GpuSeries, minutes, writeFixture } from './sync-fixtures';

/*
 * `gpucap sync --once` over a config of three clusters:
 * - eks-west: Kubernetes with one node per GPU sharing mode (mixed MIG, single MIG, time-slicing, MPS),
 *   served as NodeList/PodList documents in the API server's shape with GPU feature discovery's
 *   labels (no live cluster can run here), and a real Prometheus backfilled by promtool with
 *   DCGM-exporter series of MIG instances (GPU_I_ID, GPU_I_PROFILE, only GR_ENGINE_ACTIVE for
 *   utilization) and of a time-sliced GPU;
 * - eks-east: its Kubernetes API down in the first and third runs (a closed port), up in the second;
 * - hpc2: Slurm, `sacct --json` with typed gres (MIG profiles, a site type of gpu_share_by_type).
 * Shares are read from the workloads' columns, samples through the HTTP API.
 */

const MINUTE = 60;
const uid = (n: number) => `k8s:a1000000-0000-4000-8000-00000000000${n}`;
const POD_MIG_MIXED = uid(1);
const POD_TIME_SLICED = uid(4);

/** MIG instances as dcgm-exporter labels them (pod mapping on): two 1g.10gb of one A100, a 2g.20gb of another. */
function migInstance(uuid: string, index: string, id: string, profile: string): Record<string, string> {
  return {
    gpu: index,
    UUID: uuid,
    pci_bus_id: `00000000:${index}7:00.0`,
    device: `nvidia${index}`,
    modelName: 'NVIDIA A100-SXM4-80GB',
    GPU_I_PROFILE: profile,
    GPU_I_ID: id,
    Hostname: 'gpu-mig-mixed-1',
    DCGM_FI_DRIVER_VERSION: '550.90.07',
    container: 'server',
    namespace: 'ml-inference',
    pod: 'llm-mig-mixed-7f9c2',
  };
}

function westSeries(base: number): SeriesData[] {
  const times = minutes(base, -100, -41);
  // Device-level fields of a MIG instance (power, temperature) are its parent GPU's.
  const instances: GpuSeries[] = [
    {
      labels: migInstance('GPU-5d9cc71f-b438-dc00-707d-c6c12bcfede1', '0', '7', '1g.10gb'),
      engineActive: () => 0.2,
      used: 2_000,
      free: 8_000,
      power: 300,
      temperature: () => 60,
    },
    {
      labels: migInstance('GPU-5d9cc71f-b438-dc00-707d-c6c12bcfede1', '0', '8', '1g.10gb'),
      engineActive: () => 0.4,
      used: 5_000,
      free: 5_000,
      power: 300,
      temperature: () => 60,
    },
    {
      labels: migInstance('GPU-21c6d9d7-46cd-7e91-99c3-7b6a06a3faea', '1', '3', '2g.20gb'),
      engineActive: (index) => 0.8 + (index % 2) * 0.2,
      used: 10_000,
      free: 10_000,
      power: 250,
      temperature: () => 66,
    },
  ];
  const timeSliced: GpuSeries = {
    labels: {
      gpu: '0',
      UUID: 'GPU-be839661-c0f5-7452-284b-b875666df60c',
      device: 'nvidia0',
      modelName: 'Tesla T4',
      Hostname: 'gpu-ts-1',
      container: 'server',
      namespace: 'ml-inference',
      pod: 'nlu-timeslice-z8r4w',
    },
    utilization: () => 35,
    used: 4_000,
    free: 11_000,
    power: 70,
    temperature: () => 50,
  };
  return [...instances, timeSliced].flatMap((gpu) => dcgmSeries(gpu, times));
}

interface StoredShare {
  workload_id: string;
  cluster_id: string;
  gpu_count: number;
  gpu_share_units: number;
  gpu_sharing_mode: string | null;
  gpu_sharing_profile: string | null;
  gpu_sharing_replicas: number | null;
}

describe('gpucap sync over several clusters (sliced and shared GPUs, one cluster down)', () => {
  let available = false;
  let t: TestApp;
  let directory: string;
  let prometheus: PrometheusHarness;
  let west: KubernetesFixtureServer;
  let east: KubernetesFixtureServer;
  let organizationId: string;
  let admin: Record<string, string>;
  let base: number;
  let config: string;

  beforeAll(async () => {
    available = await prometheusAvailableForTests(
      'sync-clusters.e2e-spec.ts (MIG-labelled DCGM series joined per cluster, against a real Prometheus)',
    );
    if (!available) return;
    base = Math.floor(Date.now() / 1000 / MINUTE) * MINUTE;
    directory = mkdtempSync(join(tmpdir(), 'gpucap-sync-clusters-'));
    prometheus = new PrometheusHarness();
    await prometheus.backfill(westSeries(base), 'west');
    await prometheus.start();
    west = new KubernetesFixtureServer();
    west.nodes = fixture<{ items: Record<string, unknown>[] }>('sharing-nodes.json', base).items;
    west.pods = fixture<{ items: Record<string, unknown>[] }>('sharing-pods.json', base).items;
    await west.start();
    west.writeKubeconfig(join(directory, 'kubeconfig-west'));
    // East's kubeconfig names a port nothing listens on until the second run.
    east = new KubernetesFixtureServer();
    east.nodes = fixture('nodes.json', base);
    east.pods = fixture('pods-run1.json', base);
    east.port = await freePort();
    east.writeKubeconfig(join(directory, 'kubeconfig-east'));
    writeFixture('sacct-typed-gres.json', base, join(directory, 'sacct-hpc2.json'));
    t = await createTestApp();
    organizationId = await seedOrganization(t.dataSource, {
      initiatives: ['inference', 'physics', 'vision'],
    });
    admin = authHeaders(
      await createApiToken(t.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
    config = join(directory, 'sync.json');
    writeFileSync(
      config,
      JSON.stringify({
        organization_id: organizationId,
        unknown_initiatives: 'create',
        clusters: [
          {
            cluster_id: 'eks-west',
            kubernetes: { kubeconfig: './kubeconfig-west', namespaces: ['ml-inference'] },
            prometheus: { url: prometheus.url, step_seconds: 60, backfill_hours: 3 },
          },
          {
            cluster_id: 'eks-east',
            kubernetes: {
              kubeconfig: './kubeconfig-east',
              namespaces: ['ml-vision', 'ml-nlp'],
              timeout_seconds: 5,
            },
            prometheus: { url: prometheus.url, step_seconds: 60, backfill_hours: 3 },
          },
          {
            cluster_id: 'hpc2',
            slurm: { sacct_json_file: './sacct-hpc2.json', gpu_share_by_type: { 'a100l.2': 2 / 7 } },
          },
        ],
      }),
    );
  }, 120_000);

  afterAll(async () => {
    if (!available) return;
    await prometheus.close();
    await west.close();
    await east.close();
    await t.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const sync = async () => {
    const run = await runGpucap(['sync', '--config', config, '--once'], { DATABASE_URL: testDatabaseUrl() });
    return {
      ...run,
      lines: run.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.replace(/ in [\d.]+ s$/, '')),
    };
  };

  const shares = async (): Promise<Record<string, Omit<StoredShare, 'workload_id'>>> => {
    const rows: StoredShare[] = await t.dataSource.query(
      `SELECT workload_id, cluster_id, gpu_count, gpu_share_units, gpu_sharing_mode, gpu_sharing_profile,
              gpu_sharing_replicas
       FROM workloads WHERE organization_id = $1 ORDER BY workload_id`,
      [organizationId],
    );
    return Object.fromEntries(
      rows.map(({ workload_id, ...row }) => [
        workload_id,
        { ...row, gpu_share_units: Number(row.gpu_share_units) },
      ]),
    );
  };

  const watermarks = async (): Promise<Record<string, number>> => {
    const rows: { cluster_id: string; source: string; read_until: Date }[] = await t.dataSource.query(
      'SELECT cluster_id, source, read_until FROM sync_watermarks WHERE organization_id = $1',
      [organizationId],
    );
    return Object.fromEntries(
      rows.map((row) => [`${row.cluster_id}/${row.source}`, row.read_until.getTime()]),
    );
  };

  const averages = async (id: string) => {
    const metrics = (
      await request(t.server)
        .get(`/v1/workloads/${encodeURIComponent(id)}/metrics`)
        .query({
          time_range: 'job_lifetime',
          metrics: 'gpu_utilization,memory_utilization,power_usage,temperature',
        })
        .set(admin)
        .expect(200)
    ).body.data.metrics as Record<string, { avg: number | null }>;
    return Object.fromEntries(Object.entries(metrics).map(([name, value]) => [name, value.avg]));
  };

  const share = (
    cluster_id: string,
    gpu_count: number,
    units: number,
    sharing: [string, string | null, number | null] | null = null,
  ) => ({
    cluster_id,
    gpu_count,
    gpu_share_units: units,
    gpu_sharing_mode: sharing?.[0] ?? null,
    gpu_sharing_profile: sharing?.[1] ?? null,
    gpu_sharing_replicas: sharing?.[2] ?? null,
  });

  it('writes the clusters that answer, with their cluster_id and GPU shares, and reports the one that is down', async () => {
    if (!available) return;
    const run = await sync();
    expect(run.stderr).toBe('');
    expect(run.lines).toEqual([
      'kubernetes[eks-west]: read 7 pods; wrote 7 workloads, 0 samples; unchanged 0; skipped 0',
      expect.stringMatching(
        /^prometheus\[eks-west\]: read 120 readings; wrote 0 workloads, 120 samples; unchanged 0; skipped 0$/,
      ),
      expect.stringMatching(
        /^kubernetes\[eks-east\]: FAILED: cannot reach the Kubernetes API at https?:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/,
      ),
      'prometheus[eks-east]: read 0 readings; wrote 0 workloads, 0 samples; unchanged 0; skipped 1 (1 waiting for a first kubernetes listing)',
      'slurm[hpc2]: read 5 jobs; wrote 5 workloads, 0 samples; unchanged 0; skipped 0',
    ]);
    expect(run.code).toBe(1);

    // Units of 1/5040 GPU: 1g = 720, 2g = 1440, 3g = 2160, one of four replicas = 1260.
    expect(await shares()).toEqual({
      [uid(1)]: share('eks-west', 3, 2 * 720 + 1440, ['mig', '1g.10gb+2g.20gb', null]),
      [uid(2)]: share('eks-west', 1, 2160, ['mig', '3g.40gb', null]),
      [uid(3)]: share('eks-west', 2, 1440, ['mig', '1g.10gb', null]),
      [uid(4)]: share('eks-west', 1, 1260, ['time-slicing', null, 4]),
      [uid(5)]: share('eks-west', 2, 2520, ['mps', null, 4]),
      [uid(6)]: share('eks-west', 1, 720, ['mig', '1g.10gb', null]),
      [uid(7)]: share('eks-west', 1, 5040),
      'slurm:hpc2:2001': share('hpc2', 2, 1440, ['mig', '1g.10gb', null]),
      'slurm:hpc2:2002': share('hpc2', 3, 4320, ['mig', 'a100l.2', null]),
      'slurm:hpc2:2003': share('hpc2', 4, 4 * 5040),
      'slurm:hpc2:2004': share('hpc2', 1, 2160, ['mig', '3g.40gb', null]),
      'slurm:hpc2:2005': share('hpc2', 2, 5040 + 720, ['mig', '1g.10gb', null]),
    });

    // MIG: utilization from GR_ENGINE_ACTIVE (no GPU_UTIL), memory per instance, and of each GPU's
    // power the pod's slices: two 1g.10gb of the first (2/7 of 300 W), a 2g.20gb of the second (2/7 of 250 W).
    expect(await averages(POD_MIG_MIXED)).toEqual({
      gpu_utilization: (20 + 40 + 90) / 3,
      memory_utilization: (20 + 50 + 50) / 3,
      power_usage: round4((300 * 2 + 250 * 2) / 7),
      temperature: 66,
    });
    // One of four time-sliced replicas: a quarter of the GPU's 70 W.
    expect(await averages(POD_TIME_SLICED)).toEqual({
      gpu_utilization: 35,
      memory_utilization: round4((4_000 / 15_000) * 100),
      power_usage: 17.5,
      temperature: 50,
    });

    const marks = await watermarks();
    expect(Object.keys(marks).sort()).toEqual(['eks-west/kubernetes', 'eks-west/prometheus', 'hpc2/slurm']);
  });

  it('a cluster back up catches up; when it goes down again its watermark stays and the others advance', async () => {
    if (!available) return;
    await east.start(east.port);
    const up = await sync();
    expect(up.lines[2]).toBe(
      'kubernetes[eks-east]: read 5 pods; wrote 4 workloads, 0 samples; created 1 team (no budget: it shows as exhausted until an allocation is imported); unchanged 0; skipped 1 (1 no nvidia.com/gpu limit)',
    );
    expect(up.code).toBe(0);
    const stored = await shares();
    expect(stored['k8s:6f1d3c2a-0b4e-4a8e-9a51-1c2d3e4f5a61']).toEqual(share('eks-east', 2, 2 * 5040));
    expect(stored[uid(1)].cluster_id).toBe('eks-west');
    const before = await watermarks();
    expect(before['eks-east/kubernetes']).toBeDefined();

    await east.close();
    // The mixed-MIG pod was deleted while running: cancelled, keeping its share.
    west.pods = west.pods.filter((pod) => (pod.metadata as { uid: string }).uid !== uid(1).slice(4));
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const down = await sync();
    expect(down.lines[2]).toEqual(
      expect.stringMatching(
        /^kubernetes\[eks-east\]: FAILED: cannot reach the Kubernetes API at https?:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/,
      ),
    );
    expect(down.code).toBe(1);
    const after = await watermarks();
    expect(after['eks-east/kubernetes']).toBe(before['eks-east/kubernetes']);
    expect(after['eks-west/kubernetes']).toBeGreaterThan(before['eks-west/kubernetes']);
    expect(after['hpc2/slurm']).toBeGreaterThan(before['hpc2/slurm']);
    expect((await shares())[uid(1)]).toEqual(
      share('eks-west', 3, 2 * 720 + 1440, ['mig', '1g.10gb+2g.20gb', null]),
    );
    const [{ status }]: { status: string }[] = await t.dataSource.query(
      'SELECT status FROM workloads WHERE organization_id = $1 AND workload_id = $2',
      [organizationId, uid(1)],
    );
    expect(status).toBe('cancelled');
  });
});

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
