import { IDENTIFIER_PATTERN } from '../../core/identifier';
import type { WorkloadStatus } from '../../core/workload-status';
import { DeviceRequest, shareFields } from '../gpu-shares';
import type { KubernetesConfig } from '../sync-config';

type Time = Date | string | null | undefined;

interface ContainerLike {
  resources?: { limits?: Record<string, unknown> | null } | null;
}

/** The parts of a v1 Pod the mapping reads (what `@kubernetes/client-node` returns, or plain JSON). */
export interface PodLike {
  metadata?: {
    uid?: string;
    name?: string;
    namespace?: string;
    labels?: Record<string, string> | null;
    annotations?: Record<string, string> | null;
    creationTimestamp?: Time;
  } | null;
  spec?: {
    nodeName?: string | null;
    nodeSelector?: Record<string, string> | null;
    serviceAccountName?: string | null;
    containers?: ContainerLike[] | null;
    initContainers?: ContainerLike[] | null;
  } | null;
  status?: {
    phase?: string | null;
    startTime?: Time;
    conditions?: { lastTransitionTime?: Time }[] | null;
    containerStatuses?:
      | {
          state?: {
            running?: { startedAt?: Time } | null;
            terminated?: { exitCode?: number; startedAt?: Time; finishedAt?: Time } | null;
          } | null;
        }[]
      | null;
  } | null;
}

/** Resource name prefix of MIG instances under the device plugin's mixed strategy (`nvidia.com/mig-1g.10gb`). */
export const MIG_RESOURCE_PREFIX = 'nvidia.com/mig-';
/** GPU feature discovery's node labels. */
export const MIG_STRATEGY_LABEL = 'nvidia.com/mig.strategy';

/** Instance type given to a pod whose node (or node label) is not known yet. */
export const UNKNOWN_INSTANCE_TYPE = 'unknown';
/** Exit code of a failed pod none of whose containers reported one (evicted, deadline exceeded). */
export const FAILED_WITHOUT_EXIT_CODE = 1;

const STATUS_BY_PHASE: Record<string, WorkloadStatus> = {
  Pending: 'pending',
  Running: 'running',
  Succeeded: 'completed',
  Failed: 'failed',
};

export type PodMapping =
  | { workload: Record<string, unknown>; initiativeId: string; workloadId: string }
  | { skip: string; workloadId?: string };

/**
 * The stable workload id of a pod: `k8s:<uid>`, unique for the cluster's lifetime (a recreated pod is
 * a new run). A pod document without a uid (never from an API server) falls back to
 * `k8s:<namespace>:<name>` when that is a valid identifier.
 */
export function podWorkloadId(uid: string | undefined, namespace: string, name: string): string | null {
  const id = uid ? `k8s:${uid}` : `k8s:${namespace}:${name}`;
  return IDENTIFIER_PATTERN.test(id) ? id : null;
}

/** A pod as a workload record in the import format, or why it is not one. */
export function mapPod(
  pod: PodLike,
  config: KubernetesConfig,
  context: {
    organizationId: string;
    clusterId: string;
    instanceTypeOfNode: (node: string) => string | undefined;
    /** The labels of a node (GPU feature discovery's say how its GPUs are shared); undefined when not listed. */
    labelsOfNode?: (node: string) => Record<string, string> | undefined;
  },
): PodMapping {
  const name = pod.metadata?.name;
  const namespace = pod.metadata?.namespace;
  if (!name || !namespace) return { skip: 'pod without name or namespace' };
  const workloadId = podWorkloadId(pod.metadata?.uid, namespace, name);
  if (!workloadId) return { skip: 'pod without uid whose namespace:name is longer than 128' };
  const requested = requestedDevices(pod, config.gpuResource);
  if (requested.size === 0) return { skip: `no ${config.gpuResource} limit`, workloadId };
  const node = pod.spec?.nodeName;
  const nodeLabels = (node && context.labelsOfNode?.(node)) || {};
  const shares = shareFields(deviceRequests(requested, config.gpuResource, nodeLabels), config.migProfiles);
  if ('unknownProfile' in shares) {
    return {
      skip: `MIG profile ${shares.unknownProfile} without a known share (add it to kubernetes.mig_profiles)`,
      workloadId,
    };
  }
  const status = STATUS_BY_PHASE[pod.status?.phase ?? ''];
  if (!status) return { skip: `phase ${pod.status?.phase ?? 'missing'} (kept as last seen)`, workloadId };
  const labels = pod.metadata?.labels ?? {};
  const initiativeId =
    labels[config.initiativeLabel] ?? config.initiativeByNamespace[namespace] ?? config.defaultInitiative;
  if (!initiativeId) {
    return {
      skip: `no initiative (label ${config.initiativeLabel} absent, namespace not mapped)`,
      workloadId,
    };
  }
  if (!IDENTIFIER_PATTERN.test(initiativeId))
    return { skip: 'initiative label is not an identifier', workloadId };
  const times = podTimes(pod, status);
  if (!times) return { skip: 'pod without creationTimestamp', workloadId };
  return {
    workloadId,
    initiativeId,
    workload: {
      organization_id: context.organizationId,
      workload_id: workloadId,
      initiative_id: initiativeId,
      name,
      status,
      submitted_by: submitter(pod, config, namespace),
      instance_type: instanceType(pod, config, context.instanceTypeOfNode),
      ...shares,
      is_managed: config.isManaged,
      cluster_id: context.clusterId,
      namespace,
      ...times,
      exit_code: exitCode(pod, status),
    },
  };
}

/** Effective GPU request as the scheduler counts it: the sum over containers, or the largest init container. */
export function requestedGpus(pod: PodLike, resource: string): number {
  const limit = (container: ContainerLike) => quantity(container.resources?.limits?.[resource]);
  const running = (pod.spec?.containers ?? []).reduce((sum, container) => sum + limit(container), 0);
  const init = Math.max(0, ...(pod.spec?.initContainers ?? []).map(limit));
  return Math.max(running, init);
}

/** The GPU resource and every `nvidia.com/mig-<profile>` resource the pod's limits name, with the count the scheduler reserves. */
export function requestedDevices(pod: PodLike, gpuResource: string): Map<string, number> {
  const names = new Set<string>();
  for (const container of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const name of Object.keys(container.resources?.limits ?? {})) {
      if (name === gpuResource || name.startsWith(MIG_RESOURCE_PREFIX)) names.add(name);
    }
  }
  const devices = new Map<string, number>();
  for (const name of [...names].sort()) {
    const count = requestedGpus(pod, name);
    if (count > 0) devices.set(name, count);
  }
  return devices;
}

/**
 * What the pod's devices are, from its resource names and its node's GPU feature discovery labels:
 * - `nvidia.com/mig-<profile>` (mixed strategy): instances of that profile;
 * - the GPU resource on a node whose `nvidia.com/gpu.product` names a MIG profile
 *   (`NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`, under `nvidia.com/mig.strategy: single`): instances of it;
 * - otherwise whole GPUs;
 * each shared by `<resource>.replicas` (above 1) as `<resource>.sharing-strategy` says (`mps`, else
 * time-slicing: labels older than MPS support name only the replicas). A pod not scheduled yet has no
 * node labels: whole GPUs, unless its resource names are MIG instances.
 */
export function deviceRequests(
  requested: Map<string, number>,
  gpuResource: string,
  nodeLabels: Record<string, string>,
): DeviceRequest[] {
  return [...requested].map(([resource, count]) => {
    const replicas = Number(nodeLabels[`${resource}.replicas`]);
    const profile = resource.startsWith(MIG_RESOURCE_PREFIX)
      ? resource.slice(MIG_RESOURCE_PREFIX.length)
      : singleStrategyProfile(nodeLabels[`${gpuResource}.product`], nodeLabels[MIG_STRATEGY_LABEL]);
    return {
      count,
      profile,
      replicas: Number.isInteger(replicas) && replicas > 1 ? replicas : 1,
      replicaMode: nodeLabels[`${resource}.sharing-strategy`] === 'mps' ? 'mps' : 'time-slicing',
    };
  });
}

/**
 * The MIG profile of a node's `nvidia.com/gpu` devices under the single strategy: the product label's
 * part after `-MIG-`, less the `-SHARED` GPU feature discovery appends when the devices are replicated.
 * `-MIG-INVALID` (a node the single strategy cannot describe) and a node under another strategy give null.
 */
export function singleStrategyProfile(
  product: string | undefined,
  strategy: string | undefined,
): string | null {
  if (!product || (strategy !== undefined && strategy !== 'single')) return null;
  const at = product.lastIndexOf('-MIG-');
  if (at < 0) return null;
  const profile = product.slice(at + '-MIG-'.length).replace(/-SHARED$/, '');
  return profile === '' || profile === 'INVALID' ? null : profile;
}

function quantity(value: unknown): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : 0;
  return Number.isInteger(number) && number > 0 ? number : 0;
}

function iso(time: Time): string | null {
  if (time === null || time === undefined) return null;
  const date = time instanceof Date ? time : new Date(time);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function latest(times: (string | null)[]): string | null {
  const known = times.filter((time): time is string => time !== null).sort();
  return known.at(-1) ?? null;
}

function earliest(times: (string | null)[]): string | null {
  return times.filter((time): time is string => time !== null).sort()[0] ?? null;
}

/**
 * submitted = creationTimestamp; started = the first container start (the pod's startTime precedes
 * image pulls), else startTime; completed = the last container finish, else the last condition change.
 * Clamped so that submitted ≤ started ≤ completed holds whatever the node clocks say.
 */
function podTimes(pod: PodLike, status: WorkloadStatus) {
  const submitted = iso(pod.metadata?.creationTimestamp);
  if (!submitted) return null;
  if (status === 'pending') return { submitted_at: submitted, started_at: null, completed_at: null };
  const states = (pod.status?.containerStatuses ?? []).map((container) => container.state ?? {});
  const firstStart = earliest(
    states.map((state) => iso(state.running?.startedAt) ?? iso(state.terminated?.startedAt)),
  );
  const started = latest([submitted, firstStart ?? iso(pod.status?.startTime) ?? submitted]) as string;
  if (status === 'running') return { submitted_at: submitted, started_at: started, completed_at: null };
  const finished =
    latest(states.map((state) => iso(state.terminated?.finishedAt))) ??
    latest((pod.status?.conditions ?? []).map((condition) => iso(condition.lastTransitionTime)));
  return { submitted_at: submitted, started_at: started, completed_at: latest([started, finished]) };
}

function exitCode(pod: PodLike, status: WorkloadStatus): number | null {
  if (status === 'completed') return 0;
  if (status !== 'failed') return null;
  const codes = (pod.status?.containerStatuses ?? []).map(
    (container) => container.state?.terminated?.exitCode,
  );
  return codes.find((code) => typeof code === 'number' && code !== 0) ?? FAILED_WITHOUT_EXIT_CODE;
}

/** The submitter label, else an annotation of that name (annotations may hold e-mail addresses), else the config's default, else the pod's service account. */
function submitter(pod: PodLike, config: KubernetesConfig, namespace: string): string {
  const key = config.submitterLabel;
  const given = pod.metadata?.labels?.[key] ?? pod.metadata?.annotations?.[key] ?? config.defaultSubmitter;
  if (given && given.trim() !== '' && given.length <= 256) return given;
  return `system:serviceaccount:${namespace}:${pod.spec?.serviceAccountName || 'default'}`;
}

/** The node's instance-type label; before scheduling, the pod's node selector on that label; else `unknown`. */
function instanceType(
  pod: PodLike,
  config: KubernetesConfig,
  instanceTypeOfNode: (node: string) => string | undefined,
): string {
  const node = pod.spec?.nodeName;
  const type = node ? instanceTypeOfNode(node) : pod.spec?.nodeSelector?.[config.instanceTypeLabel];
  return type && IDENTIFIER_PATTERN.test(type) ? type : UNKNOWN_INSTANCE_TYPE;
}
