import { api, inCluster } from '../lib/api';
import { byId, cell, gpuCell, labelled, row } from '../lib/dom';
import { formatDate, type GpuHolding } from '../lib/format';
import { teamName } from '../lib/state';

const WORKLOADS_PAGE = 20;

interface WorkloadSummary extends GpuHolding {
  workload_id: string;
  name: string;
  status: string;
  initiative_id: string;
  instance_type: string;
  cluster_id?: string;
  submitted_at: string;
}

let workloadsNextToken: string | null = null;
/** Only the latest list request may draw: a page asked for before a status change is dropped. */
let workloadsRequest = 0;

/** The newest workloads (of one status, or all), a page at a time; `more` appends the next page. */
export async function loadWorkloads(more = false): Promise<void> {
  const status = byId<HTMLSelectElement>('workloads-status').value;
  const query = new URLSearchParams({ limit: String(WORKLOADS_PAGE) });
  if (status) query.set('status', status);
  if (more && workloadsNextToken) query.set('next_token', workloadsNextToken);
  const request = ++workloadsRequest;
  const { data, metadata } = await api<{ workloads: WorkloadSummary[] }>(inCluster(`/v1/workloads?${query}`));
  if (request !== workloadsRequest) return;
  const rows = data.workloads.map((workload) =>
    row(
      [
        cell(workload.name, workload.workload_id),
        cell(teamName(workload.initiative_id), workload.initiative_id),
        cell(workload.status, workload.status),
        cell(workload.cluster_id ?? '—', workload.cluster_id ?? null),
        cell(workload.instance_type, workload.instance_type),
        gpuCell(workload),
        cell(formatDate(workload.submitted_at), workload.submitted_at),
      ],
      { workload: workload.workload_id },
    ),
  );
  const body = byId<HTMLTableElement>('workloads-table').tBodies[0];
  labelled(byId<HTMLTableElement>('workloads-table'), rows);
  if (more) body.append(...rows);
  else
    body.replaceChildren(
      ...labelled(
        byId<HTMLTableElement>('workloads-table'),
        rows.length ? rows : [row([cell('No workload.')])],
      ),
    );
  workloadsNextToken = metadata?.next_token ?? null;
  byId('workloads-more').hidden = workloadsNextToken === null;
  byId<HTMLTableElement>('workloads-table').dataset.status = status || 'all';
  const shown = body.querySelectorAll('tr[data-workload]').length;
  const total = metadata?.total_count;
  byId('workloads-count').textContent =
    total === undefined ? '' : `${shown.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} shown`;
}
