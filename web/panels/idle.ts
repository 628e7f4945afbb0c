import { api, guarded, inCluster } from '../lib/api';
import { removeChart } from '../lib/charts';
import { byId, cell, fillTable, gpuCell, openerCell, opensOnClick, row } from '../lib/dom';
import { formatMoney, formatNumber, type GpuHolding } from '../lib/format';
import { teamName } from '../lib/state';
import { showWorkload } from './detail';

interface RankedEntry extends GpuHolding {
  workload_id: string;
  name: string;
  initiative_id: string;
  idle_gpu_hours: { avg: number };
  /** The money of idle_gpu_hours; null without a price. */
  idle_cost?: string | null;
}

const SERIES = { title: 'series-title', facts: 'series-facts', chart: 'series-chart' };

/**
 * The running workloads holding the most idle GPU-hours; the most idle one's utilization opens
 * beside them, and a click on another row shows that one's.
 */
export async function loadIdle(): Promise<void> {
  const { data, metadata } = await api<{ workloads: RankedEntry[] }>(
    inCluster('/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10'),
  );
  const currency = metadata?.currency ?? null;
  const rows = data.workloads.map((entry) => {
    const tableRow = row(
      [
        openerCell(entry.name, `Utilization of ${entry.name}`, entry.workload_id),
        cell(teamName(entry.initiative_id), entry.initiative_id),
        gpuCell(entry),
        cell(formatNumber(entry.idle_gpu_hours.avg), entry.idle_gpu_hours.avg, 'number'),
        cell(formatMoney(entry.idle_cost, currency), entry.idle_cost ?? null, 'number'),
      ],
      { workload: entry.workload_id },
    );
    return opensOnClick(tableRow, () => void guarded(() => open(tableRow, entry.workload_id)));
  });
  fillTable('idle-table', rows.length ? rows : [row([cell('No running workload with samples.')])]);
  if (rows.length) await open(rows[0], data.workloads[0].workload_id);
}

async function open(tableRow: HTMLTableRowElement, workloadId: string): Promise<void> {
  for (const other of byId<HTMLTableElement>('idle-table').tBodies[0].rows)
    other.classList.toggle('selected', other === tableRow);
  await showWorkload(SERIES, workloadId);
}

/** A new view hides the utilization of a workload from the view before. */
export function clearSeries(): void {
  removeChart(SERIES.chart);
  byId(SERIES.title).hidden = true;
  byId(SERIES.facts).hidden = true;
}
