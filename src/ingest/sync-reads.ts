import type { DataSource } from 'typeorm';
import type { UnfinishedWorkload } from './kubernetes/kubernetes-source';
import type { WorkloadSpan } from './prometheus/prometheus-source';
import type { SyncTarget } from './sync-config';
import type { ChangedWorkload, SyncRecord } from './sync-records';
import type { SourceName } from './sync-report';

// The reads the runner makes for the sources, outside any writer transaction: what they say decides
// what a source writes, and the writer's lock is taken only once the records are staged.

export async function organizationExists(dataSource: DataSource, organizationId: string): Promise<boolean> {
  const rows: unknown[] = await dataSource.query('SELECT 1 FROM organizations WHERE organization_id = $1', [
    organizationId,
  ]);
  return rows.length > 0;
}

export async function readInitiativeIds(
  dataSource: DataSource,
  organizationId: string,
): Promise<Set<string>> {
  const rows: { initiative_id: string }[] = await dataSource.query(
    'SELECT initiative_id FROM initiatives WHERE organization_id = $1',
    [organizationId],
  );
  return new Set(rows.map((row) => row.initiative_id));
}

/** The instant each source of one cluster of the organization (`''`: the top-level sources) was last read up to. */
export async function readWatermarks(
  dataSource: DataSource,
  organizationId: string,
  cluster: string,
): Promise<Partial<Record<SourceName, Date>>> {
  const rows: { source: SourceName; read_until: Date }[] = await dataSource.query(
    'SELECT source, read_until FROM sync_watermarks WHERE organization_id = $1 AND cluster_id = $2',
    [organizationId, cluster],
  );
  return Object.fromEntries(rows.map((row) => [row.source, row.read_until]));
}

/** The Kubernetes source's pending and running workloads of a cluster, in the namespaces it reads (null: all). */
export async function readUnfinishedWorkloads(
  dataSource: DataSource,
  organizationId: string,
  clusterId: string,
  namespaces: string[] | null,
): Promise<UnfinishedWorkload[]> {
  return dataSource.query(
    `SELECT workload_id, initiative_id, name, submitted_by, instance_type, gpu_count, is_managed, cluster_id,
            namespace, submitted_at, started_at,
            gpu_share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas
     FROM workloads
     WHERE organization_id = $1 AND status IN ('pending', 'running')
       AND workload_id LIKE 'k8s:%' AND cluster_id = $2
       AND ($3::text[] IS NULL OR namespace = ANY ($3::text[]))`,
    [organizationId, clusterId, namespaces],
  );
}

/**
 * The sync's workloads (pods and Slurm jobs) a cluster's DCGM series may join, alive in [from, to],
 * with how they hold their GPUs.
 */
export async function readWorkloadSpans(
  dataSource: DataSource,
  organizationId: string,
  scope: SyncTarget['joinScope'],
  from: Date,
  to: Date,
): Promise<WorkloadSpan[]> {
  return dataSource.query(
    `SELECT workload_id, namespace, name, submitted_at AS "from", completed_at AS "to",
            gpu_count, gpu_share_units, gpu_sharing_mode, gpu_sharing_replicas
     FROM workloads
     WHERE organization_id = $1 AND (workload_id LIKE 'k8s:%' OR workload_id LIKE 'slurm:%')
       AND submitted_at <= $3 AND (completed_at IS NULL OR completed_at >= $2)
       AND ($4::text IS NULL OR cluster_id = $4) AND cluster_id <> ALL ($5::text[])`,
    [organizationId, from, to, 'only' in scope ? scope.only : null, 'except' in scope ? scope.except : []],
  );
}

/**
 * The workload records that are new or change a stored workload's status or end: their samples may
 * lie before the Prometheus watermark (the workload was not known, or not finished, when that range
 * was read), so the Prometheus source re-reads their lifetime.
 */
export async function changedWorkloads(
  dataSource: DataSource,
  organizationId: string,
  records: SyncRecord[],
): Promise<ChangedWorkload[]> {
  const workloads = records.filter((record) => record.section === 'workloads').map((record) => record.value);
  if (workloads.length === 0) return [];
  const stored: { workload_id: string; status: string; completed_at: Date | null }[] = await dataSource.query(
    `SELECT workload_id, status, completed_at FROM workloads
     WHERE organization_id = $1 AND workload_id = ANY ($2::text[])`,
    [organizationId, workloads.map((workload) => workload.workload_id)],
  );
  const byId = new Map(stored.map((row) => [row.workload_id, row]));
  return workloads
    .filter((workload) => {
      const row = byId.get(workload.workload_id as string);
      const completed = (workload.completed_at as string | null) ?? null;
      return (
        !row || row.status !== workload.status || (row.completed_at?.toISOString() ?? null) !== completed
      );
    })
    .filter((workload) => workload.status !== 'pending')
    .map((workload) => ({
      workloadId: workload.workload_id as string,
      from: new Date(workload.submitted_at as string),
    }));
}
