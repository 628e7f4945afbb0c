import { mapPod, PodLike, requestedGpus } from '../../../src/ingest/kubernetes/pod-mapping';
import { parseSyncConfig } from '../../../src/ingest/sync-config';

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
