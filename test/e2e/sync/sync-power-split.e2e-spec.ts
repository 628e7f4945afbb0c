import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../../../src/database/database-target';
import { seedOrganization } from '../../support/factories';
import { ALL_SAMPLES_SQL } from '../../support/samples';
import { runGpucap } from '../../support/serve-process';
import { testDatabaseUrl } from '../../support/test-app';
import { KubernetesFixtureServer } from './kubernetes-fixture-server';
import { prometheusAvailableForTests, PrometheusHarness } from './prometheus-harness';
import { dcgmSeries, GpuSeries, minutes } from './sync-fixtures';

/*
 * One H100 split into MIG instances 3g.40gb, 2g.20gb and 1g.10gb, each held by a pod, its seventh
 * slice unallocated, drawing 350 W for an hour; and a T4 time-sliced four ways, two of its replicas
 * held by pods, drawing 70 W. dcgm-exporter reports each GPU's whole draw on every instance's series
 * (and, with KUBERNETES_VIRTUAL_GPUS, on each pod's copy of the shared GPU, told apart by `vgpu`), as
 * it does: a real Prometheus is backfilled with those series by promtool, and `gpucap sync` must store
 * each workload's share of the draw.
 */

const MINUTE = 60;
const H100_UUID = 'GPU-7c1e5a0d-93f2-4b8e-a6d1-2f0e9b3c4d51';
const T4_UUID = 'GPU-be839661-c0f5-7452-284b-b875666df60c';
const uid = (n: number) => `b2000000-0000-4000-8000-00000000000${n}`;

const PODS = [
  { n: 1, name: 'llm-3g-6d9f1', node: 'gpu-h100-mig-1', resource: 'nvidia.com/mig-3g.40gb', instance: '2' },
  { n: 2, name: 'asr-2g-8k2m4', node: 'gpu-h100-mig-1', resource: 'nvidia.com/mig-2g.20gb', instance: '3' },
  { n: 3, name: 'ocr-1g-t7v3q', node: 'gpu-h100-mig-1', resource: 'nvidia.com/mig-1g.10gb', instance: '9' },
  { n: 4, name: 'nlu-ts-a1b2c', node: 'gpu-ts-1', resource: 'nvidia.com/gpu', vgpu: '0' },
  { n: 5, name: 'nlu-ts-d3e4f', node: 'gpu-ts-1', resource: 'nvidia.com/gpu', vgpu: '1' },
];
const PROFILE_OF: Record<string, string> = {
  'nvidia.com/mig-3g.40gb': '3g.40gb',
  'nvidia.com/mig-2g.20gb': '2g.20gb',
  'nvidia.com/mig-1g.10gb': '1g.10gb',
};

function node(name: string, labels: Record<string, string>): Record<string, unknown> {
  return {
    metadata: {
      name,
      uid: `5b0c7e1a-3d7f-4c55-9a0e-${name.length.toString().padStart(12, '0')}`,
      labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.present': 'true', ...labels },
    },
    status: {},
  };
}

const NODES = [
  node('gpu-h100-mig-1', {
    'node.kubernetes.io/instance-type': 'p5.48xlarge',
    'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
    'nvidia.com/mig.capable': 'true',
    'nvidia.com/mig.strategy': 'mixed',
  }),
  node('gpu-ts-1', {
    'node.kubernetes.io/instance-type': 'g4dn.xlarge',
    'nvidia.com/gpu.product': 'Tesla-T4-SHARED',
    'nvidia.com/gpu.replicas': '4',
    'nvidia.com/gpu.sharing-strategy': 'time-slicing',
    'nvidia.com/mig.capable': 'false',
  }),
];

/** A running pod of `ml-inference` holding one device, created 70 minutes before `base`. */
function pod(spec: (typeof PODS)[number], base: number): Record<string, unknown> {
  const at = (minutesBefore: number) => new Date((base - minutesBefore * MINUTE) * 1000).toISOString();
  return {
    metadata: {
      name: spec.name,
      namespace: 'ml-inference',
      uid: uid(spec.n),
      creationTimestamp: at(70),
      labels: { 'gpucap.io/initiative': 'inference', 'gpucap.io/submitted-by': 'erin' },
    },
    spec: {
      nodeName: spec.node,
      containers: [{ name: 'server', resources: { limits: { [spec.resource]: '1' } } }],
    },
    status: {
      phase: 'Running',
      startTime: at(70),
      containerStatuses: [{ name: 'server', state: { running: { startedAt: at(68) } } }],
    },
  };
}

/** The series dcgm-exporter writes for each device over the hour: the GPU's whole draw on every one. */
function series(base: number) {
  const times = minutes(base, -65, -6);
  const gpus: GpuSeries[] = PODS.map((spec) => {
    const pod = { container: 'server', namespace: 'ml-inference', pod: spec.name };
    if (spec.instance) {
      return {
        labels: {
          gpu: '0',
          UUID: H100_UUID,
          device: 'nvidia0',
          modelName: 'NVIDIA H100 80GB HBM3',
          GPU_I_PROFILE: PROFILE_OF[spec.resource],
          GPU_I_ID: spec.instance,
          Hostname: 'gpu-h100-mig-1',
          DCGM_FI_DRIVER_VERSION: '550.90.07',
          ...pod,
        },
        engineActive: () => 0.5,
        used: 4_000,
        free: 6_000,
        power: 350,
        temperature: () => 64,
      };
    }
    return {
      labels: {
        gpu: '0',
        UUID: T4_UUID,
        device: 'nvidia0',
        modelName: 'Tesla T4',
        Hostname: 'gpu-ts-1',
        DCGM_FI_DRIVER_VERSION: '550.90.07',
        vgpu: spec.vgpu as string,
        ...pod,
      },
      utilization: () => 35,
      used: 4_000,
      free: 11_000,
      power: 70,
      temperature: () => 50,
    };
  });
  // The unallocated seventh: an instance no pod holds, drawing the same 350 W on its series.
  const idle: GpuSeries = {
    labels: {
      gpu: '0',
      UUID: H100_UUID,
      device: 'nvidia0',
      modelName: 'NVIDIA H100 80GB HBM3',
      GPU_I_PROFILE: '1g.10gb',
      GPU_I_ID: '10',
      Hostname: 'gpu-h100-mig-1',
      DCGM_FI_DRIVER_VERSION: '550.90.07',
    },
    engineActive: () => 0,
    used: 0,
    free: 10_000,
    power: 350,
    temperature: () => 64,
  };
  return [...gpus, idle].flatMap((gpu) => dcgmSeries(gpu, times));
}

describe('gpucap sync: a shared GPU’s power split between the workloads on it', () => {
  let available = false;
  let dataSource: DataSource;
  let directory: string;
  let prometheus: PrometheusHarness;
  let kubernetes: KubernetesFixtureServer;
  let organizationId: string;
  let base: number;

  beforeAll(async () => {
    available = await prometheusAvailableForTests(
      'sync-power-split.e2e-spec.ts (MIG-labelled and time-sliced DCGM series, against a real Prometheus)',
    );
    if (!available) return;
    base = Math.floor(Date.now() / 1000 / MINUTE) * MINUTE;
    directory = mkdtempSync(join(tmpdir(), 'gpucap-power-split-'));
    prometheus = new PrometheusHarness();
    await prometheus.backfill(series(base), 'shared-gpus');
    await prometheus.start();
    kubernetes = new KubernetesFixtureServer();
    kubernetes.nodes = NODES;
    kubernetes.pods = PODS.map((spec) => pod(spec, base));
    await kubernetes.start();
    kubernetes.writeKubeconfig(join(directory, 'kubeconfig'));
    dataSource = await openDataSource(process.env.GPUCAP_TEST_DATABASE_URL as string, 2);
    organizationId = await seedOrganization(dataSource, { initiatives: ['inference'] });
  }, 120_000);

  afterAll(async () => {
    if (!available) return;
    await prometheus.close();
    await kubernetes.close();
    await dataSource.destroy();
    rmSync(directory, { recursive: true, force: true });
  });

  it('stores each workload’s share of its GPU’s draw: 150, 100 and 50 W of 350 W; 17.5 W of 70 W', async () => {
    if (!available) return;
    const config = join(directory, 'sync.json');
    writeFileSync(
      config,
      JSON.stringify({
        organization_id: organizationId,
        kubernetes: { kubeconfig: './kubeconfig', namespaces: ['ml-inference'], cluster_id: 'onprem-1' },
        prometheus: { url: prometheus.url, step_seconds: 60, backfill_hours: 3 },
      }),
    );
    const run = await runGpucap(['sync', '--config', config, '--once'], { DATABASE_URL: testDatabaseUrl() });
    expect(run.stderr).toBe('');
    expect(run.stdout.split('\n').map((line) => line.replace(/ in [\d.]+ s$/, ''))).toEqual([
      'kubernetes: read 5 pods; wrote 5 workloads, 0 samples; unchanged 0; skipped 0',
      'prometheus: read 300 readings; wrote 0 workloads, 300 samples; unchanged 0; skipped 0',
      '',
    ]);
    expect(run.code).toBe(0);

    const rows: {
      workload_id: string;
      gpu_share_units: number;
      samples: number;
      watts: number[];
      watts_sum: number;
    }[] = await dataSource.query(
      `SELECT w.workload_id, w.gpu_share_units, count(*)::int AS samples,
                array_agg(DISTINCT s.power_usage) AS watts, sum(s.power_usage) AS watts_sum
         FROM workloads w JOIN ${ALL_SAMPLES_SQL} AS s USING (organization_id, workload_id)
         WHERE w.organization_id = $1 GROUP BY 1, 2 ORDER BY 1`,
      [organizationId],
    );
    // Units of 1/5040 GPU: 3g = 2160, 2g = 1440, 1g = 720, one of four replicas = 1260.
    expect(rows.map(({ watts_sum: _, ...row }) => row)).toEqual([
      { workload_id: `k8s:${uid(1)}`, gpu_share_units: 2160, samples: 60, watts: [150] },
      { workload_id: `k8s:${uid(2)}`, gpu_share_units: 1440, samples: 60, watts: [100] },
      { workload_id: `k8s:${uid(3)}`, gpu_share_units: 720, samples: 60, watts: [50] },
      { workload_id: `k8s:${uid(4)}`, gpu_share_units: 1260, samples: 60, watts: [17.5] },
      { workload_id: `k8s:${uid(5)}`, gpu_share_units: 1260, samples: 60, watts: [17.5] },
    ]);

    // Each reading held for its minute: the hour's energy in kWh. The unallocated seventh is no one's.
    const kwh = rows.map((row) => (row.watts_sum * MINUTE) / 3_600_000);
    expect(kwh).toEqual([0.15, 0.1, 0.05, 0.0175, 0.0175]);
  });
});
