import { api, ApiFailure } from '../lib/api';
import { byId } from '../lib/dom';
import { CLUSTER_KEY, selectedCluster } from '../lib/state';

/**
 * The clusters the caller's workloads ran on in the last 30 days. With two or more, the selector
 * shows; a service that cannot group by cluster (400) leaves the page on all clusters.
 */
export async function loadClusters(): Promise<void> {
  let clusters: string[] = [];
  try {
    const { data } = await api<{ grouped: { cluster_id: string | null }[] }>(
      '/v1/workloads/stats?time_range=last_30_days&group_by=cluster_id',
    );
    clusters = data.grouped.flatMap((group) => (group.cluster_id ? [group.cluster_id] : [])).sort();
  } catch (error) {
    if (!(error instanceof ApiFailure && error.status === 400)) throw error;
  }
  if (!clusters.includes(selectedCluster())) sessionStorage.removeItem(CLUSTER_KEY);
  const select = byId<HTMLSelectElement>('cluster');
  select.replaceChildren(new Option('All clusters', ''), ...clusters.map((id) => new Option(id, id)));
  select.value = selectedCluster();
  byId('scope').hidden = clusters.length < 2;
}
