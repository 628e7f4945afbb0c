import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { authHeaders, createApiToken, seedOrganization, uniqueId } from '../../support/factories';
import { freePort, runGpucap } from '../../support/serve-process';
import { createTestApp, TestApp, testDatabaseUrl } from '../../support/test-app';
import { KubernetesFixtureServer } from './kubernetes-fixture-server';
import { prometheusAvailableForTests, PrometheusHarness, SeriesData } from './prometheus-harness';
import { dcgmSeries, fixture, GpuSeries, mean, minutes, round4, writeFixture } from './sync-fixtures';

/*
 * `gpucap sync --once` end to end, as an operator runs it (a child process), against:
 * - a real Prometheus (Debian's binary) over a TSDB backfilled by promtool with DCGM-exporter-shaped
 *   series: pod labels as dcgm-exporter writes them and as Prometheus renames them (exported_*),
 *   utilization in percent (GPU_UTIL) and as a 0-1 ratio (GR_ENGINE_ACTIVE), framebuffer in MiB and
 *   in bytes, and a Slurm job label;
 * - Kubernetes: no real API server can run here, so recorded PodList/NodeList JSON (the API server's
 *   shapes) is served over HTTP and reached through @kubernetes/client-node with a generated kubeconfig;
 * - Slurm: `sacct --json` documents shaped as Slurm's data_parser writes them (v0.0.40, and one job in
 *   the older v0.0.39 shape), from a file and then from a configured command (`cat`).
 * Everything is checked through the HTTP API.
 */

const MINUTE = 60;
const POD_RESNET = 'k8s:6f1d3c2a-0b4e-4a8e-9a51-1c2d3e4f5a61';
const POD_BERT = 'k8s:0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d';
const POD_PENDING = 'k8s:c3d4e5f6-a7b8-4c9d-8e0f-a1b2c3d4e5f6';
const POD_CRASHY = 'k8s:e5f6a7b8-c9d0-4e1f-8a2b-c3d4e5f6a7b8';
const JOB_QCD = 'slurm:hpc1:1001';
const JOB_MD = 'slurm:hpc1:1003';

const resnetGpu0 = (index: number) => 40 + (index % 5) * 10;
const RESNET_GPUS = (base: Record<string, string>, late: boolean): GpuSeries[] => [
  {
    labels: { ...base, gpu: '0', UUID: 'GPU-a0' },
    utilization: late ? () => 10 : resnetGpu0,
    used: 20_000,
    free: 60_000,
    power: 250,
    temperature: (index) => 60 + (index % 3),
  },
  {
    labels: { ...base, gpu: '1', UUID: 'GPU-a1' },
    utilization: late ? () => 30 : () => 90,
    used: 40_000,
    free: 40_000,
    power: 300,
    temperature: () => 70,
  },
];
const QCD_GPUS = (late: boolean): GpuSeries[] => [
  {
    labels: { gpu: '0', UUID: 'GPU-d0', Hostname: 'gpu-a100-01', hpc_job: '1001' },
    utilization: late ? () => 20 : () => 70,
    used: 10_000,
    free: 70_000,
    power: 400,
    temperature: () => 65,
  },
  {
    labels: { gpu: '1', UUID: 'GPU-d1', Hostname: 'gpu-a100-01', hpc_job: '1001' },
    utilization: late ? () => 40 : () => 90,
    used: 30_000,
    free: 50_000,
    power: 400,
    temperature: () => 75,
  },
];
const GIB = 1024 ** 3;

function firstSeries(base: number): SeriesData[] {
  const resnetLabels = {
    Hostname: 'gpu-node-a',
    modelName: 'NVIDIA A100-SXM4-40GB',
    namespace: 'ml-vision',
    pod: 'train-resnet-7xk2p',
    container: 'main',
  };
  // Scraped through a pod target: Prometheus renamed the exporter's labels to exported_*.
  const exporter = { Hostname: 'gpu-node-b', namespace: 'gpu-operator', pod: 'dcgm-exporter-x7k2m' };
  const bert: GpuSeries = {
    labels: {
      ...exporter,
      gpu: '1',
      UUID: 'GPU-b1',
      exported_namespace: 'ml-nlp',
      exported_pod: 'bert-finetune-q8w4z',
      exported_container: 'main',
    },
    engineActive: (index) => 0.5 + (index % 2) * 0.1,
    used: 8 * GIB,
    free: 24 * GIB,
    power: 150,
    temperature: () => 55,
  };
  const idle: GpuSeries = {
    labels: { ...exporter, gpu: '2', UUID: 'GPU-b2' },
    utilization: () => 0,
    used: 0,
    free: 24_000,
    power: 60,
    temperature: () => 35,
  };
  return [
    ...RESNET_GPUS(resnetLabels, false).flatMap((gpu) => dcgmSeries(gpu, minutes(base, -179, -16))),
    ...dcgmSeries(bert, minutes(base, -169, -100)),
    ...dcgmSeries(idle, minutes(base, -169, -100)),
    ...QCD_GPUS(false).flatMap((gpu) => dcgmSeries(gpu, minutes(base, -119, -16))),
  ];
}

/** What arrived after the first run: the end of the ResNet pod's run and of the QCD job's. */
function laterSeries(base: number): SeriesData[] {
  const resnetLabels = {
    Hostname: 'gpu-node-a',
    namespace: 'ml-vision',
    pod: 'train-resnet-7xk2p',
    container: 'main',
  };
  return [
    ...RESNET_GPUS(resnetLabels, true).flatMap((gpu) => dcgmSeries(gpu, minutes(base, -15, -6))),
    ...QCD_GPUS(true).flatMap((gpu) => dcgmSeries(gpu, minutes(base, -15, -5))),
  ];
}

describe('gpucap sync (real Prometheus, served pod lists, sacct --json)', () => {
  let available = false;
  let t: TestApp;
  let directory: string;
  let prometheus: PrometheusHarness;
  let kubernetes: KubernetesFixtureServer;
  let organizationId: string;
  let admin: Record<string, string>;
  let base: number;

  beforeAll(async () => {
    available = await prometheusAvailableForTests(
      'sync.e2e-spec.ts (first sync, second sync after changes, a source down: all against a real Prometheus)',
    );
    if (!available) return;
    base = Math.floor(Date.now() / 1000 / MINUTE) * MINUTE;
    directory = mkdtempSync(join(tmpdir(), 'gpucap-sync-'));
    prometheus = new PrometheusHarness();
    await prometheus.backfill(firstSeries(base), 'first');
    await prometheus.start();
    kubernetes = new KubernetesFixtureServer();
    kubernetes.nodes = fixture('nodes.json', base);
    kubernetes.pods = fixture('pods-run1.json', base);
    await kubernetes.start();
    kubernetes.writeKubeconfig(join(directory, 'kubeconfig'));
    writeFixture('sacct-run1.json', base, join(directory, 'sacct.json'));
    t = await createTestApp();
    organizationId = await seedOrganization(t.dataSource, { initiatives: ['vision', 'physics'] });
    admin = authHeaders(
      await createApiToken(t.dataSource, organizationId, { role: 'ORG_ADMIN' }),
      organizationId,
    );
  }, 120_000);

  afterAll(async () => {
    if (!available) return;
    await prometheus.close();
    await kubernetes.close();
    await t.close();
    rmSync(directory, { recursive: true, force: true });
  });

  /** The config, as written, with this test's organization, paths and URL. */
  function writeConfig(slurm: Record<string, unknown> = { sacct_json_file: './sacct.json' }): string {
    const file = join(directory, 'sync.json');
    const config = {
      organization_id: organizationId,
      unknown_initiatives: 'create',
      kubernetes: {
        kubeconfig: './kubeconfig',
        namespaces: ['ml-vision', 'ml-nlp'],
        initiative_label: 'gpucap.io/initiative',
        submitter_label: 'gpucap.io/submitted-by',
        instance_type_label: 'node.kubernetes.io/instance-type',
      },
      prometheus: { url: prometheus.url, step_seconds: 60 },
      slurm: {
        ...slurm,
        job_label: 'hpc_job',
        initiative_by_account: { physics: 'physics' },
        instance_type_by_partition: { 'gpu-a100': 'p4d.24xlarge' },
      },
    };
    writeFileSync(file, JSON.stringify(config, null, 2));
    return file;
  }

  const sync = (config: string) =>
    runGpucap(['sync', '--config', config, '--once'], { DATABASE_URL: testDatabaseUrl() });

  const detail = async (id: string) =>
    (
      await request(t.server)
        .get(`/v1/workloads/${encodeURIComponent(id)}`)
        .set(admin)
        .expect(200)
    ).body.data;

  const lifetimeMetrics = async (id: string) =>
    (
      await request(t.server)
        .get(`/v1/workloads/${encodeURIComponent(id)}/metrics`)
        .query({
          time_range: 'job_lifetime',
          metrics: 'gpu_utilization,memory_utilization,power_usage,temperature',
        })
        .set(admin)
        .expect(200)
    ).body.data.metrics;

  const pick = (workload: Record<string, unknown>) => ({
    status: workload.status,
    initiative_id: workload.initiative_id,
    submitted_by: workload.submitted_by,
    instance_type: workload.instance_type,
    gpu_count: workload.gpu_count,
    exit_code: workload.exit_code,
  });

  const averages = (metrics: Record<string, { avg: number | null }>) => ({
    gpu_utilization: metrics.gpu_utilization.avg,
    memory_utilization: metrics.memory_utilization.avg,
    power_usage: metrics.power_usage.avg,
    temperature: metrics.temperature.avg,
  });

  const resnetEarly = minutes(0, -179, -16).map((_, index) => (resnetGpu0(index) + 90) / 2);

  it('writes every pod, job and reading with the right status, owner, type, GPUs, GPU-hours and averages', async () => {
    if (!available) return;
    const run = await sync(writeConfig());
    expect(run.stderr.split('\n')).toEqual([
      "kubernetes: warning: created team 'nlp' (unknown_initiatives: create) with no budget: its capacity shows as exhausted until an allocation for it is imported with gpucap import",
      "slurm: warning: created team 'chemistry' (unknown_initiatives: create) with no budget: its capacity shows as exhausted until an allocation for it is imported with gpucap import",
      '',
    ]);
    expect(
      run.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => line.replace(/ in [\d.]+ s$/, '')),
    ).toEqual([
      'kubernetes: read 5 pods; wrote 4 workloads, 0 samples; created 1 team (no budget: it shows as exhausted until an allocation is imported); unchanged 0; skipped 1 (1 no nvidia.com/gpu limit)',
      'slurm: read 3 jobs; wrote 2 workloads, 0 samples; created 1 team (no budget: it shows as exhausted until an allocation is imported); unchanged 0; skipped 1 (1 no gres/gpu)',
      'prometheus: read 338 readings; wrote 0 workloads, 338 samples; unchanged 0; skipped 1 (1 series of no synced workload)',
    ]);
    expect(run.code).toBe(0);
    expect(kubernetes.requests).toContain('/api/v1/namespaces/ml-vision/pods');

    expect(pick(await detail(POD_RESNET))).toEqual({
      status: 'running',
      initiative_id: 'vision',
      submitted_by: 'alice',
      instance_type: 'p4d.24xlarge',
      gpu_count: 2,
      exit_code: null,
    });
    const bert = await detail(POD_BERT);
    expect(pick(bert)).toEqual({
      status: 'completed',
      initiative_id: 'nlp',
      submitted_by: 'bob@example.com',
      instance_type: 'g5.12xlarge',
      gpu_count: 1,
      exit_code: 0,
    });
    expect(bert.name).toBe('bert-finetune-q8w4z');
    expect(bert.namespace).toBe('ml-nlp');
    expect(bert.gpu_hours_used).toBeCloseTo(70 / 60, 4);
    expect(pick(await detail(POD_PENDING))).toEqual({
      status: 'pending',
      initiative_id: 'vision',
      submitted_by: 'alice',
      instance_type: 'p5.48xlarge',
      gpu_count: 1,
      exit_code: null,
    });
    const crashy = await detail(POD_CRASHY);
    expect(pick(crashy)).toEqual({
      status: 'failed',
      initiative_id: 'nlp',
      submitted_by: 'dana',
      instance_type: 'g5.12xlarge',
      gpu_count: 1,
      exit_code: 137,
    });
    expect(crashy.gpu_hours_used).toBeCloseTo(10 / 60, 4);
    const qcd = await detail(JOB_QCD);
    expect(pick(qcd)).toEqual({
      status: 'running',
      initiative_id: 'physics',
      submitted_by: 'carol',
      instance_type: 'p4d.24xlarge',
      gpu_count: 2,
      exit_code: null,
    });
    expect(qcd.name).toBe('lattice-qcd');
    const md = await detail(JOB_MD);
    expect(pick(md)).toEqual({
      status: 'completed',
      initiative_id: 'chemistry',
      submitted_by: 'frank',
      instance_type: 'gpu-h100',
      gpu_count: 1,
      exit_code: 0,
    });
    expect(md.gpu_hours_used).toBeCloseTo(1, 4);

    // Utilization and memory: mean over the GPUs; power: sum; temperature: max.
    expect(averages(await lifetimeMetrics(POD_RESNET))).toEqual({
      gpu_utilization: round4(mean(resnetEarly)),
      memory_utilization: 37.5,
      power_usage: 550,
      temperature: 70,
    });
    // GR_ENGINE_ACTIVE as a 0-1 ratio, framebuffer in bytes, labels renamed exported_*.
    expect(averages(await lifetimeMetrics(POD_BERT))).toEqual({
      gpu_utilization: 55,
      memory_utilization: 25,
      power_usage: 150,
      temperature: 55,
    });
    expect(averages(await lifetimeMetrics(JOB_QCD))).toEqual({
      gpu_utilization: 80,
      memory_utilization: 25,
      power_usage: 800,
      temperature: 75,
    });
  });

  it('a second run after changes updates exactly those; an unchanged run writes nothing', async () => {
    if (!available) return;
    // The ResNet pod finished, the pending pod was deleted, the QCD job failed, new samples arrived.
    kubernetes.pods = fixture('pods-run2.json', base);
    writeFixture('sacct-run2.json', base, join(directory, 'sacct-run2.json'));
    await prometheus.stop();
    await prometheus.backfill(laterSeries(base), 'later');
    await prometheus.start();
    const before = await detail(POD_BERT);
    const config = writeConfig({ sacct_command: ['cat', join(directory, 'sacct-run2.json')] });

    const run = await sync(config);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(
      /^kubernetes: read 4 pods; wrote 2 workloads, 0 samples; unchanged 2; skipped 1 \(1 no nvidia.com\/gpu limit\)/,
    );
    expect(lines[1]).toMatch(
      /^slurm: read 3 jobs; wrote 1 workload, 0 samples; unchanged 1; skipped 1 \(1 no gres\/gpu\)/,
    );
    expect(lines[2]).toMatch(/^prometheus: read \d+ readings; wrote 0 workloads, 21 samples; unchanged \d+/);
    expect(run.code).toBe(0);

    const resnet = await detail(POD_RESNET);
    expect(pick(resnet)).toEqual({
      status: 'completed',
      initiative_id: 'vision',
      submitted_by: 'alice',
      instance_type: 'p4d.24xlarge',
      gpu_count: 2,
      exit_code: 0,
    });
    expect(resnet.gpu_hours_used).toBeCloseTo((2 * 174) / 60, 4);
    const pending = await detail(POD_PENDING);
    expect(pending.status).toBe('cancelled');
    expect(pending.started_at).toBeNull();
    const qcd = await detail(JOB_QCD);
    expect(pick(qcd)).toEqual({
      status: 'failed',
      initiative_id: 'physics',
      submitted_by: 'carol',
      instance_type: 'p4d.24xlarge',
      gpu_count: 2,
      exit_code: 2,
    });
    expect(qcd.gpu_hours_used).toBeCloseTo((2 * 115) / 60, 4);
    expect(await detail(POD_BERT)).toEqual(before);
    expect((await lifetimeMetrics(POD_RESNET)).gpu_utilization.avg).toBe(
      round4(mean([...resnetEarly, ...Array<number>(10).fill(20)])),
    );
    expect((await lifetimeMetrics(JOB_QCD)).gpu_utilization.avg).toBe(
      round4(mean([...Array<number>(104).fill(80), ...Array<number>(11).fill(30)])),
    );

    const again = await sync(config);
    expect(again.code).toBe(0);
    for (const line of again.stdout.split('\n').filter(Boolean))
      expect(line).toMatch(/: read \d+ \w+; wrote 0 workloads, 0 samples;/);
  });

  it('a source that is down fails alone, in one line, and --once exits non-zero', async () => {
    if (!available) return;
    const closedPort = await freePort();
    const config = writeConfig({ sacct_command: ['cat', join(directory, 'sacct-run2.json')] });
    const text = JSON.parse(readFileSync(config, 'utf8')) as {
      prometheus: { url: string };
    };
    text.prometheus.url = `http://127.0.0.1:${closedPort}`;
    const downConfig = join(directory, `down-${uniqueId('c')}.json`);
    writeFileSync(downConfig, JSON.stringify(text));
    const run = await sync(downConfig);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^kubernetes: read 4 pods; wrote 0 workloads,/);
    expect(lines[1]).toMatch(/^slurm: read 3 jobs; wrote 0 workloads,/);
    expect(lines[2]).toMatch(
      /^prometheus: FAILED: cannot reach Prometheus at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/,
    );
    expect(run.code).toBe(1);
  });
});
