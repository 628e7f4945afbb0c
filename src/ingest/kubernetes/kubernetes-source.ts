import { GPU_SHARE_UNITS, GpuSharing } from '../../common/gpu-sharing';
import type { KubernetesConfig } from '../sync-config';
import type { InitiativeResolver } from '../initiatives';
import { ReasonCounter } from '../sync-report';
import type { SyncRecord, WorkloadListing } from '../sync-records';
import { networkReason, safeUrl, SourceUnavailableError, withDeadline } from '../source-failure';
import { mapPod, PodLike } from './pod-mapping';

const PAGE_SIZE = 500;

interface PodPage {
  items: PodLike[];
  metadata?: { _continue?: string };
}

/** What the sync needs from the API server (`@kubernetes/client-node`'s CoreV1Api in production). */
export interface KubernetesApi {
  /** The API server's URL, for failure lines (`safeUrl` drops credentials and query). */
  server: string;
  /** The config's `cluster_id`, else the kubeconfig's cluster name: the `cluster_id` of the workloads. */
  clusterId: string;
  listPods(namespace: string | null, continueToken: string | undefined): Promise<PodPage>;
  listNodes(): Promise<{ items: { metadata?: { name?: string; labels?: Record<string, string> | null } }[] }>;
}

/**
 * The API of the config's kubeconfig, else of the cluster this runs in (`inCluster`: Kubernetes set
 * KUBERNETES_SERVICE_HOST, read through the app config) with the pod's service account. The client is
 * an ES module: it is loaded when a Kubernetes source runs (Node 20 loads it through `require`), never
 * by code that does not use it.
 */
export async function connectKubernetes(
  config: KubernetesConfig,
  inCluster: boolean,
): Promise<KubernetesApi> {
  const k8s = await import('@kubernetes/client-node');
  const kubeConfig = new k8s.KubeConfig();
  try {
    if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
    else if (inCluster) kubeConfig.loadFromCluster();
    else throw new Error('not in a cluster');
    if (config.context) kubeConfig.setCurrentContext(config.context);
  } catch (error) {
    throw new SourceUnavailableError(
      config.kubeconfig
        ? `cannot load the kubeconfig '${config.kubeconfig}': ${(error as Error).message.split('\n')[0]}`
        : 'no kubeconfig given, and not running in a cluster (KUBERNETES_SERVICE_HOST is unset)',
    );
  }
  const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const timeoutSeconds = Math.ceil(config.timeoutSeconds);
  return {
    server: kubeConfig.getCurrentCluster()?.server ?? '',
    clusterId: config.clusterId ?? kubeConfig.getCurrentCluster()?.name ?? 'kubernetes',
    listPods: (namespace, continueToken) =>
      namespace
        ? api.listNamespacedPod({ namespace, limit: PAGE_SIZE, _continue: continueToken, timeoutSeconds })
        : api.listPodForAllNamespaces({
            limit: PAGE_SIZE,
            _continue: continueToken,
            timeoutSeconds,
          }),
    listNodes: () => api.listNode({ timeoutSeconds }),
  };
}

function describeFailure(error: unknown, what: string, server: string): Error {
  if (error instanceof SourceUnavailableError) return error;
  const status = (error as { code?: unknown }).code;
  if (typeof status === 'number')
    return new SourceUnavailableError(`the Kubernetes API answered ${status} to ${what}`);
  const reason = networkReason(error);
  return new SourceUnavailableError(
    reason
      ? `cannot reach the Kubernetes API${server ? ` at ${safeUrl(server)}` : ''} (${reason})`
      : `${what} failed: ${(error as Error).message?.split('\n')[0]}`,
  );
}

async function call<T>(work: () => Promise<T>, what: string, seconds: number, server: string): Promise<T> {
  try {
    return await withDeadline(
      work(),
      seconds,
      `the Kubernetes API did not answer ${what} within ${seconds} s`,
    );
  } catch (error) {
    throw describeFailure(error, what, server);
  }
}

/**
 * Every pod of the configured namespaces (all when none), page by page. A pod is kept once (by uid)
 * and only in the namespace it was asked for, whatever the server answered.
 */
async function listAllPods(api: KubernetesApi, config: KubernetesConfig): Promise<PodLike[]> {
  const pods = new Map<string, PodLike>();
  for (const namespace of config.namespaces ?? [null]) {
    let token: string | undefined;
    do {
      const page = await call(
        () => api.listPods(namespace, token),
        namespace ? `list pods in namespace ${namespace}` : 'list pods',
        config.timeoutSeconds,
        api.server,
      );
      for (const pod of page.items) {
        if (namespace && pod.metadata?.namespace !== namespace) continue;
        pods.set(pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`, pod);
      }
      token = page.metadata?._continue || undefined;
    } while (token);
  }
  return [...pods.values()];
}

/**
 * Node name → labels (the instance type, and how GPU feature discovery says the GPUs are shared).
 * Nodes that cannot be listed (no RBAC for nodes) leave every instance type unknown and every GPU
 * whole rather than failing the pods' sync; the report says why.
 */
async function labelsOfNodes(
  api: KubernetesApi,
  config: KubernetesConfig,
  skipped: ReasonCounter,
): Promise<Map<string, Record<string, string>>> {
  try {
    const nodes = await call(() => api.listNodes(), 'list nodes', config.timeoutSeconds, api.server);
    return new Map(nodes.items.map((node) => [node.metadata?.name ?? '', node.metadata?.labels ?? {}]));
  } catch (error) {
    skipped.add(
      `node list unreadable, instance types unknown and GPUs counted whole: ${(error as Error).message}`,
    );
    return new Map();
  }
}

/**
 * A workload this source recorded as not finished (pending or running) in the namespaces it reads, as
 * stored: one that no longer appears in the pod list was deleted before finishing, hence cancelled.
 */
export interface UnfinishedWorkload {
  workload_id: string;
  initiative_id: string;
  name: string;
  submitted_by: string;
  instance_type: string;
  gpu_count: number;
  is_managed: boolean;
  cluster_id: string;
  namespace: string;
  submitted_at: Date;
  started_at: Date | null;
  gpu_share_units: string | number;
  gpu_sharing_mode: GpuSharing['mode'] | null;
  gpu_sharing_profile: string | null;
  gpu_sharing_replicas: number | null;
}

/** The stored sharing of a workload, as the import format gives it, so that cancelling keeps its share. */
function storedSharing(known: UnfinishedWorkload): { gpu_sharing?: GpuSharing; gpu_share?: number } {
  const mode = known.gpu_sharing_mode;
  if (mode === null) return {};
  const gpu_share = Number(known.gpu_share_units) / GPU_SHARE_UNITS;
  if (mode === 'mig') return { gpu_sharing: { mode, profile: known.gpu_sharing_profile ?? '' }, gpu_share };
  return { gpu_sharing: { mode, replicas: known.gpu_sharing_replicas ?? 1 }, gpu_share };
}

function cancelledRecord(organizationId: string, known: UnfinishedWorkload, seenGoneAt: Date): SyncRecord {
  const started = known.started_at ?? known.submitted_at;
  const completed = seenGoneAt > started ? seenGoneAt : started;
  const {
    gpu_share_units: _units,
    gpu_sharing_mode: _mode,
    gpu_sharing_profile: _profile,
    gpu_sharing_replicas: _replicas,
    ...columns
  } = known;
  return {
    section: 'workloads',
    value: {
      organization_id: organizationId,
      ...columns,
      ...storedSharing(known),
      status: 'cancelled',
      submitted_at: known.submitted_at.toISOString(),
      started_at: known.started_at?.toISOString() ?? null,
      completed_at: completed.toISOString(),
      exit_code: null,
    },
  };
}

/** What the runner knows from the database when the source runs. */
export interface KubernetesInput {
  organizationId: string;
  initiatives: InitiativeResolver;
  /** The source's unfinished workloads of `api.clusterId` in the namespaces it reads. */
  unfinished: UnfinishedWorkload[];
}

/**
 * Lists the pods, maps those that request GPUs to workload records and cancels the unfinished
 * workloads the listing no longer shows.
 */
export async function listKubernetes(
  api: KubernetesApi,
  config: KubernetesConfig,
  { organizationId, initiatives, unfinished }: KubernetesInput,
): Promise<WorkloadListing> {
  const listedAt = new Date();
  const skipped = new ReasonCounter();
  const pods = await listAllPods(api, config);
  const nodeLabels = await labelsOfNodes(api, config, skipped);
  const refused = new ReasonCounter();
  const seen = new Set<string>();
  const workloads: SyncRecord[] = [];
  for (const pod of pods) {
    const mapped = mapPod(pod, config, {
      organizationId,
      clusterId: api.clusterId,
      instanceTypeOfNode: (node) => nodeLabels.get(node)?.[config.instanceTypeLabel],
      labelsOfNode: (node) => nodeLabels.get(node),
    });
    if (mapped.workloadId) seen.add(mapped.workloadId);
    if ('skip' in mapped) {
      skipped.add(mapped.skip);
      continue;
    }
    const refusal = initiatives.admit(mapped.initiativeId);
    if (refusal) refused.add(refusal);
    else workloads.push({ section: 'workloads', value: mapped.workload });
  }
  for (const known of unfinished) {
    if (!seen.has(known.workload_id)) workloads.push(cancelledRecord(organizationId, known, listedAt));
  }
  return {
    records: [...initiatives.records(), ...workloads],
    createdInitiatives: initiatives.created(),
    readUntil: listedAt,
    read: pods.length,
    skipped: skipped.counts,
    refused: refused.counts,
  };
}
