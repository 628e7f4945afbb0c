import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InitiativeResolver } from '../../../src/ingest/initiatives';
import {
  KubernetesApi,
  listKubernetes,
  UnfinishedWorkload,
} from '../../../src/ingest/kubernetes/kubernetes-source';
import { planSamples } from '../../../src/ingest/prometheus/prometheus-source';
import { listSlurm } from '../../../src/ingest/slurm/slurm-source';
import { parseSyncConfig } from '../../../src/ingest/sync-config';

// The sources are adapters: what the database says reaches them as arguments, and what they read
// comes back as import records. These run them with no database at all.

const config = parseSyncConfig(
  {
    organization_id: 'org',
    kubernetes: { namespaces: ['research'] },
    prometheus: { url: 'http://127.0.0.1:9', step_seconds: 60, overlap_seconds: 120 },
    slurm: { sacct_json_file: '/unused', initiative_by_account: { phys: 'physics' } },
  },
  '/',
);
const kubernetes = config.kubernetes!;

function runningPod(uid: string, initiative: string) {
  return {
    metadata: {
      uid,
      name: `train-${uid}`,
      namespace: 'research',
      labels: { 'gpucap.io/initiative': initiative },
      creationTimestamp: '2026-11-20T10:00:00Z',
    },
    spec: { nodeName: 'node-a', containers: [{ resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
    status: { phase: 'Running', startTime: '2026-11-20T10:01:00Z' },
  };
}

const api: KubernetesApi = {
  server: 'https://kubernetes.example',
  clusterId: 'prod',
  listPods: (namespace) =>
    Promise.resolve({
      items: namespace === 'research' ? [runningPod('a', 'vision'), runningPod('b', 'unknown-team')] : [],
    }),
  listNodes: () =>
    Promise.resolve({
      items: [
        { metadata: { name: 'node-a', labels: { 'node.kubernetes.io/instance-type': 'p4d.24xlarge' } } },
      ],
    }),
};

const gone: UnfinishedWorkload = {
  workload_id: 'k8s:gone',
  initiative_id: 'vision',
  name: 'train-gone',
  submitted_by: 'alice',
  instance_type: 'p4d.24xlarge',
  gpu_count: 1,
  is_managed: true,
  cluster_id: 'prod',
  namespace: 'research',
  submitted_at: new Date('2026-11-20T09:00:00Z'),
  started_at: new Date('2026-11-20T09:01:00Z'),
  gpu_share_units: '0',
  gpu_sharing_mode: null,
  gpu_sharing_profile: null,
  gpu_sharing_replicas: null,
};

describe('the Kubernetes source', () => {
  it('maps the listed pods and cancels the unfinished workloads it was given that the listing lacks', async () => {
    const before = Date.now();
    const listing = await listKubernetes(api, kubernetes, {
      organizationId: 'org',
      initiatives: new InitiativeResolver('org', new Set(['vision']), 'refuse'),
      unfinished: [gone, { ...gone, workload_id: 'k8s:a' }],
    });
    expect(listing.read).toBe(2);
    expect(listing.refused).toEqual({
      "unknown initiative 'unknown-team' (unknown_initiatives: refuse; create it with gpucap import or set unknown_initiatives: create)": 1,
    });
    expect(listing.createdInitiatives).toEqual([]);
    expect(listing.records.map(({ section, value }) => [section, value.workload_id, value.status])).toEqual([
      ['workloads', 'k8s:a', 'running'],
      ['workloads', 'k8s:gone', 'cancelled'],
    ]);
    expect(listing.records[0].value).toMatchObject({ instance_type: 'p4d.24xlarge', cluster_id: 'prod' });
    expect(listing.records[1].value.completed_at).toBe(listing.readUntil.toISOString());
    expect(listing.readUntil.getTime()).toBeGreaterThanOrEqual(before);
  });

  it('with unknown_initiatives: create, writes the new initiatives first and names them', async () => {
    const listing = await listKubernetes(api, kubernetes, {
      organizationId: 'org',
      initiatives: new InitiativeResolver('org', new Set(['vision']), 'create'),
      unfinished: [],
    });
    expect(listing.createdInitiatives).toEqual(['unknown-team']);
    expect(listing.records.map(({ section }) => section)).toEqual(['initiatives', 'workloads', 'workloads']);
    expect(listing.records[0].value).toEqual({
      organization_id: 'org',
      initiative_id: 'unknown-team',
      name: 'unknown-team',
    });
  });
});

describe('the Slurm source', () => {
  let directory: string;
  beforeAll(() => (directory = mkdtempSync(join(tmpdir(), 'gpucap-slurm-adapter-'))));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('reads sacct --json from the command, asking from an hour before the watermark it was given', async () => {
    const document = join(directory, 'sacct.json');
    const job = {
      job_id: 7,
      name: 'qcd',
      user: 'carol',
      account: 'phys',
      partition: 'a100',
      cluster: 'hpc1',
      state: { current: ['RUNNING'] },
      time: { submission: 1_763_900_000, start: 1_763_900_060, end: 0 },
      tres: { allocated: [{ type: 'gres', name: 'gpu', id: 1001, count: 2 }] },
    };
    writeFileSync(document, JSON.stringify({ jobs: [job], errors: [] }));
    const arguments_ = join(directory, 'arguments');
    const script = join(directory, 'sacct');
    writeFileSync(script, `#!/bin/sh\necho "$@" > '${arguments_}'\ncat '${document}'\n`, { mode: 0o755 });
    const lastRead = new Date(2026, 10, 24, 1, 5, 0);
    const listing = await listSlurm(
      { ...config.slurm!, sacctJsonFile: null, sacctCommand: [script, '--json'] },
      {
        organizationId: 'org',
        initiatives: new InitiativeResolver('org', new Set(['physics']), 'refuse'),
        lastRead,
      },
    );
    expect(readFileSync(arguments_, 'utf8').trim()).toBe('--json --starttime=2026-11-24T00:05:00');
    expect(listing.read).toBe(1);
    expect(listing.records).toEqual([
      expect.objectContaining({
        section: 'workloads',
        value: expect.objectContaining({ workload_id: 'slurm:hpc1:7', status: 'running', gpu_count: 2 }),
      }),
    ]);
  });
});

describe('the Prometheus source', () => {
  const now = 1_764_000_000;
  const listed = new Date((now - 30) * 1000);

  it('waits, reading nothing, until the workload sources of its cluster have listed once', () => {
    expect(planSamples(config, config.prometheus!, { kubernetes: listed }, [], now)).toEqual({
      idle: { read: 0, skipped: { 'waiting for a first slurm listing': 1 }, refused: {} },
    });
  });

  it('plans the range since its watermark and joins from the earliest changed workload', () => {
    const watermarks = { kubernetes: listed, slurm: listed, prometheus: new Date((now - 600) * 1000) };
    const changed = [{ workloadId: 'k8s:a', from: new Date((now - 3600) * 1000) }];
    const plan = planSamples(config, config.prometheus!, watermarks, changed, now);
    expect(plan).toEqual({
      range: { start: Math.ceil((now - 720) / 60) * 60, end: Math.ceil((now - 30) / 60) * 60 },
      now,
      joinFrom: new Date((now - 3600 - 60) * 1000),
      joinTo: new Date(Math.ceil((now - 30) / 60) * 60 * 1000),
    });
  });
});
