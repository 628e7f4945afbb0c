import { api, guarded, inCluster } from '../lib/api';
import { removeChart } from '../lib/charts';
import { byId, cell, gpuCell, labelled, openerCell, opensOnClick, row } from '../lib/dom';
import { formatDuration, formatMoney, formatTime, type GpuHolding } from '../lib/format';
import { teamName } from '../lib/state';
import { fetchWorkload, showWorkload } from './detail';

const WORKLOADS_PAGE = 20;
const DETAIL = {
  title: 'workload-detail-title',
  facts: 'workload-detail-facts',
  chart: 'workload-detail-chart',
};
const FINISHED = new Set(['completed', 'failed', 'cancelled']);

interface WorkloadSummary extends GpuHolding {
  workload_id: string;
  name: string;
  status: string;
  submitted_by: string;
  initiative_id: string;
  instance_type: string;
  cluster_id?: string;
  submitted_at: string;
  started_at: string | null;
  wait_seconds: number | null;
  cost: string | null;
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
  const currency = metadata?.currency ?? null;
  const asOf = metadata?.as_of ? Date.parse(metadata.as_of) : Date.now();
  const table = byId<HTMLTableElement>('workloads-table');
  const rows = data.workloads.map((workload) => {
    const tableRow = row(
      [
        openerCell(workload.name, `Details of ${workload.name}`, workload.workload_id),
        cell(teamName(workload.initiative_id), workload.initiative_id),
        cell(workload.submitted_by, workload.submitted_by),
        cell(workload.status, workload.status),
        gpuCell(workload),
        cell(formatTime(Date.parse(workload.submitted_at) / 1000), workload.submitted_at),
        durationCell(workload, asOf),
        cell(formatMoney(workload.cost, currency), workload.cost, 'number'),
        cell(workload.cluster_id ?? '—', workload.cluster_id ?? null, 'wide-only'),
        cell(workload.instance_type, workload.instance_type, 'wide-only'),
      ],
      { workload: workload.workload_id },
    );
    return opensOnClick(tableRow, () => void guarded(() => toggleDetail(tableRow, workload.workload_id)));
  });
  const body = table.tBodies[0];
  labelled(table, rows);
  if (more) body.append(...rows);
  else body.replaceChildren(...labelled(table, rows.length ? rows : [row([cell('No workload.')])]));
  workloadsNextToken = metadata?.next_token ?? null;
  byId('workloads-more').hidden = workloadsNextToken === null;
  table.dataset.status = status || 'all';
  const shown = body.querySelectorAll('tr[data-workload]').length;
  const total = metadata?.total_count;
  byId('workloads-count').textContent =
    total === undefined ? '' : `${shown.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} shown`;
  await fillFinishedDurations(data.workloads, rows);
}

/**
 * Running: from its start to the answer's as_of; pending: the wait so far; finished: filled in from
 * the workload's own answer (the list carries no end), '…' until then.
 */
function durationCell(workload: WorkloadSummary, asOf: number): HTMLTableCellElement {
  if (workload.status === 'pending')
    return cell(`waiting ${formatDuration(workload.wait_seconds)}`, 0, 'number pending-wait');
  if (workload.started_at === null) return cell('never started', 0, 'number');
  if (workload.status === 'running') {
    const seconds = Math.max(0, Math.floor((asOf - Date.parse(workload.started_at)) / 1000));
    return cell(formatDuration(seconds), seconds, 'number');
  }
  return cell('…', null, 'number');
}

async function fillFinishedDurations(
  workloads: WorkloadSummary[],
  rows: HTMLTableRowElement[],
): Promise<void> {
  await Promise.all(
    workloads.map(async (workload, index) => {
      if (!FINISHED.has(workload.status) || workload.started_at === null) return;
      const { data } = await fetchWorkload(workload.workload_id);
      const duration = rows[index].cells[6];
      duration.textContent = formatDuration(data.duration_seconds);
      duration.dataset.value = String(data.duration_seconds);
    }),
  );
}

/** A row's details open in a row of their own under it; a second click closes them. */
async function toggleDetail(tableRow: HTMLTableRowElement, workloadId: string): Promise<void> {
  const wasOpen = tableRow.classList.contains('selected');
  const table = byId<HTMLTableElement>('workloads-table');
  removeChart(DETAIL.chart);
  table.querySelector('tr.detail-row')?.remove();
  table.querySelector('tr.selected')?.classList.remove('selected');
  if (wasOpen) return;
  tableRow.classList.add('selected');
  const detailRow = document.createElement('tr');
  detailRow.className = 'detail-row';
  const detail = document.createElement('td');
  detail.colSpan = table.tHead?.rows[0].cells.length ?? 1;
  detail.className = 'detail-cell';
  detail.dataset.label = '';
  const title = Object.assign(document.createElement('h3'), { id: DETAIL.title, hidden: true });
  const facts = Object.assign(document.createElement('dl'), {
    id: DETAIL.facts,
    className: 'facts',
    hidden: true,
  });
  const chart = Object.assign(document.createElement('div'), { id: DETAIL.chart, className: 'chart' });
  chart.setAttribute('role', 'img');
  chart.setAttribute('aria-labelledby', DETAIL.title);
  detail.append(title, facts, chart);
  detailRow.append(detail);
  tableRow.after(detailRow);
  await showWorkload(DETAIL, workloadId);
}
