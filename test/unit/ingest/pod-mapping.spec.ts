import { shareFields } from '../../../src/ingest/gpu-shares';
import {
  deviceRequests,
  mapPod,
  PodLike,
  requestedGpus,
  singleStrategyProfile,
} from '../../../src/ingest/kubernetes/pod-mapping';
import { parseSyncConfig } from '../../../src/ingest/sync-config';
import { fixture } from '../../e2e/sync/sync-fixtures';

const BASE = 1_764_000_000;

const config = parseSyncConfig(
  { organization_id: 'org', kubernetes: { initiative_by_namespace: { research: 'lab' } } },
  '/',
).kubernetes!;
const context = {
  organizationId: 'org',
  clusterId: 'prod',
  instanceTypeOfNode: (node: string) => ({ 'node-a': 'p4d.24xlarge' })[node],
};

function pod(
  overrides: { phase: string; state?: object; labels?: Record<string, string>; node?: string } & PodLike,
) {
  return {
    metadata: {
      uid: 'u-1',
      name: 'train-1',
      namespace: 'research',
      labels: overrides.labels ?? {},
      creationTimestamp: '2026-11-20T10:00:00Z',
    },
    spec: {
      nodeName: overrides.node,
      serviceAccountName: 'trainer',
      containers: [{ resources: { limits: { 'nvidia.com/gpu': '2' } } }],
    },
    status: {
      phase: overrides.phase,
      startTime: '2026-11-20T10:01:00Z',
      containerStatuses: overrides.state ? [{ state: overrides.state }] : [],
    },
  } as PodLike;
}

describe('pod → workload', () => {
  it('maps a running pod: id from the uid, initiative from the namespace mapping, submitter from the service account', () => {
    const mapped = mapPod(
      pod({ phase: 'Running', node: 'node-a', state: { running: { startedAt: '2026-11-20T10:03:00Z' } } }),
      config,
      context,
    );
    expect(mapped).toEqual({
      workloadId: 'k8s:u-1',
      initiativeId: 'lab',
      workload: {
        organization_id: 'org',
        workload_id: 'k8s:u-1',
        initiative_id: 'lab',
        name: 'train-1',
        status: 'running',
        submitted_by: 'system:serviceaccount:research:trainer',
        instance_type: 'p4d.24xlarge',
        gpu_count: 2,
        is_managed: true,
        cluster_id: 'prod',
        namespace: 'research',
        submitted_at: '2026-11-20T10:00:00.000Z',
        started_at: '2026-11-20T10:03:00.000Z',
        completed_at: null,
        exit_code: null,
      },
    });
  });

  it.each([
    ['Succeeded', { terminated: { exitCode: 0, finishedAt: '2026-11-20T11:00:00Z' } }, 'completed', 0],
    ['Failed', { terminated: { exitCode: 137, finishedAt: '2026-11-20T11:00:00Z' } }, 'failed', 137],
    ['Failed', undefined, 'failed', 1],
  ])('maps phase %s to its status and exit code', (phase, state, status, exitCode) => {
    const mapped = mapPod(
      pod({ phase, state, labels: { 'gpucap.io/initiative': 'vision' } }),
      config,
      context,
    );
    expect('workload' in mapped && mapped.workload).toMatchObject({
      status,
      exit_code: exitCode,
      initiative_id: 'vision',
    });
  });

  it('gives an unscheduled pod the unknown instance type, and skips pods without GPUs or in phase Unknown', () => {
    expect(mapPod(pod({ phase: 'Pending' }), config, context)).toMatchObject({
      workload: { status: 'pending', instance_type: 'unknown', started_at: null },
    });
    expect(mapPod(pod({ phase: 'Unknown' }), config, context)).toEqual({
      workloadId: 'k8s:u-1',
      skip: 'phase Unknown (kept as last seen)',
    });
    const cpuOnly = pod({ phase: 'Running' });
    cpuOnly.spec!.containers = [{ resources: { limits: { cpu: '2' } } }];
    expect(mapPod(cpuOnly, config, context)).toEqual({
      workloadId: 'k8s:u-1',
      skip: 'no nvidia.com/gpu limit',
    });
    const withoutUid = pod({ phase: 'Pending' });
    delete withoutUid.metadata!.uid;
    expect(mapPod(withoutUid, config, context)).toMatchObject({ workloadId: 'k8s:research:train-1' });
  });

  it('counts GPUs as the scheduler does: containers summed, or the largest init container', () => {
    const gpus = (value: string) => ({ resources: { limits: { 'nvidia.com/gpu': value } } });
    expect(requestedGpus({ spec: { containers: [gpus('2'), gpus('1')] } }, 'nvidia.com/gpu')).toBe(3);
    expect(
      requestedGpus({ spec: { containers: [gpus('1')], initContainers: [gpus('4')] } }, 'nvidia.com/gpu'),
    ).toBe(4);
  });
});

/*
 * The node and pod lists below are NodeList/PodList documents in the API server's own JSON shape, with
 * the labels GPU feature discovery writes (`nvidia.com/mig.strategy`, `nvidia.com/gpu.product` with
 * `-MIG-<profile>` or `-SHARED`, `<resource>.replicas`, `<resource>.sharing-strategy`): one node per
 * mode, mixed MIG, single MIG, time-slicing and MPS. They are written to match what a cluster
 * answers (no live cluster is reachable from here to record one).
 */
describe('pod → workload on sliced and shared GPUs', () => {
  const sharingConfig = parseSyncConfig(
    { organization_id: 'org', kubernetes: { mig_profiles: { '1g.16gb': 0.125 } } },
    '/',
  ).kubernetes!;
  const nodes = fixture<{ items: { metadata: { name: string; labels: Record<string, string> } }[] }>(
    'sharing-nodes.json',
    BASE,
  ).items;
  const pods = fixture<{ items: PodLike[] }>('sharing-pods.json', BASE).items;
  const labels = new Map(nodes.map((node) => [node.metadata.name, node.metadata.labels]));
  const sharingContext = {
    organizationId: 'org',
    clusterId: 'eks-west',
    instanceTypeOfNode: (node: string) => labels.get(node)?.['node.kubernetes.io/instance-type'],
    labelsOfNode: (node: string) => labels.get(node),
  };
  const shares = (name: string, podConfig = sharingConfig) => {
    const pod = pods.find((item) => item.metadata?.name === name)!;
    const mapped = mapPod(pod, podConfig, sharingContext);
    if (!('workload' in mapped)) return mapped;
    const { gpu_count, gpu_sharing, gpu_share, instance_type } = mapped.workload;
    return { gpu_count, gpu_sharing, gpu_share, instance_type };
  };

  it('mixed MIG: instances of several profiles add up, with the share given explicitly', () => {
    expect(shares('llm-mig-mixed-7f9c2')).toEqual({
      gpu_count: 3,
      gpu_sharing: { mode: 'mig', profile: '1g.10gb+2g.20gb' },
      gpu_share: 2 / 7 + 2 / 7,
      instance_type: 'p4de.24xlarge',
    });
  });

  it('mixed MIG: one built-in profile is left to the importer to derive', () => {
    expect(shares('asr-mig-one-4kq8d')).toEqual({
      gpu_count: 1,
      gpu_sharing: { mode: 'mig', profile: '3g.40gb' },
      gpu_share: undefined,
      instance_type: 'p4de.24xlarge',
    });
  });

  it('single MIG: nvidia.com/gpu on a node whose product names the profile', () => {
    expect(shares('ocr-mig-single-p2x7m')).toEqual({
      gpu_count: 2,
      gpu_sharing: { mode: 'mig', profile: '1g.10gb' },
      gpu_share: undefined,
      instance_type: 'p5.48xlarge',
    });
  });

  it('time-slicing and MPS: replicas from the node, the importer divides', () => {
    expect(shares('nlu-timeslice-z8r4w')).toEqual({
      gpu_count: 1,
      gpu_sharing: { mode: 'time-slicing', replicas: 4 },
      gpu_share: undefined,
      instance_type: 'g4dn.xlarge',
    });
    expect(shares('rerank-mps-h6t2b')).toEqual({
      gpu_count: 2,
      gpu_sharing: { mode: 'mps', replicas: 4 },
      gpu_share: undefined,
      instance_type: 'g5.2xlarge',
    });
  });

  it('a pending pod without a node: whole GPUs, unless its resource names are MIG instances', () => {
    expect(shares('batch-whole-pend-r5t6y')).toEqual({
      gpu_count: 1,
      gpu_sharing: undefined,
      gpu_share: undefined,
      instance_type: 'unknown',
    });
    expect(shares('vision-mig-pend-q1w2e')).toEqual({
      gpu_count: 1,
      gpu_sharing: { mode: 'mig', profile: '1g.10gb' },
      gpu_share: undefined,
      instance_type: 'unknown',
    });
  });

  it('a profile from kubernetes.mig_profiles gives an explicit share; one known nowhere skips the pod', () => {
    const custom = (profile: string): PodLike => ({
      metadata: {
        uid: 'u-9',
        name: 'custom',
        namespace: 'research',
        creationTimestamp: '2026-11-20T10:00:00Z',
      },
      spec: { containers: [{ resources: { limits: { [`nvidia.com/mig-${profile}`]: '3' } } }] },
      status: { phase: 'Pending' },
    });
    const research = { ...sharingConfig, defaultInitiative: 'lab' };
    expect(mapPod(custom('1g.16gb'), research, sharingContext)).toMatchObject({
      workload: { gpu_count: 3, gpu_sharing: { mode: 'mig', profile: '1g.16gb' }, gpu_share: 0.375 },
    });
    // A configured share overrides the built-in one, and is then given explicitly.
    const override = { ...research, migProfiles: { '1g.10gb': 0.125 } };
    expect(mapPod(custom('1g.10gb'), override, sharingContext)).toMatchObject({
      workload: { gpu_count: 3, gpu_sharing: { mode: 'mig', profile: '1g.10gb' }, gpu_share: 0.375 },
    });
    expect(mapPod(custom('5g.60gb'), research, sharingContext)).toEqual({
      workloadId: 'k8s:u-9',
      skip: 'MIG profile 5g.60gb without a known share (add it to kubernetes.mig_profiles)',
    });
  });

  it('reads the single-strategy profile from the product label, without the -SHARED of replicas', () => {
    expect(singleStrategyProfile('NVIDIA-H100-80GB-HBM3-MIG-1g.10gb', 'single')).toBe('1g.10gb');
    expect(singleStrategyProfile('NVIDIA-A100-SXM4-40GB-MIG-3g.20gb-SHARED', 'single')).toBe('3g.20gb');
    expect(singleStrategyProfile('NVIDIA-A100-SXM4-40GB-MIG-INVALID', 'single')).toBeNull();
    expect(singleStrategyProfile('NVIDIA-A100-SXM4-80GB', 'mixed')).toBeNull();
    expect(singleStrategyProfile('Tesla-T4-SHARED', undefined)).toBeNull();
  });

  it('MIG instances that are themselves replicated count their share over the replicas', () => {
    const requested = new Map([['nvidia.com/gpu', 2]]);
    const nodeLabels = {
      'nvidia.com/mig.strategy': 'single',
      'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED',
      'nvidia.com/gpu.replicas': '2',
      'nvidia.com/gpu.sharing-strategy': 'time-slicing',
    };
    const requests = deviceRequests(requested, 'nvidia.com/gpu', nodeLabels);
    expect(requests).toEqual([{ count: 2, profile: '1g.5gb', replicas: 2, replicaMode: 'time-slicing' }]);
    expect(shareFields(requests, {})).toEqual({
      gpu_count: 2,
      gpu_sharing: { mode: 'mig', profile: '1g.5gb' },
      gpu_share: 1 / 7,
    });
  });
});
