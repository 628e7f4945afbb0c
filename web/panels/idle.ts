import uPlot from 'uplot';
import { api, guarded, inCluster } from '../lib/api';
import { drawChart, latestText, legendValue, PALETTE, removeChart } from '../lib/charts';
import { byId, cell, fillTable, gpuCell, row } from '../lib/dom';
import { formatMoney, formatNumber, formatTime, type GpuHolding } from '../lib/format';
import { state, teamName } from '../lib/state';

interface RankedEntry extends GpuHolding {
  workload_id: string;
  name: string;
  initiative_id: string;
  idle_gpu_hours: { avg: number };
  /** The money of idle_gpu_hours; null without a price. */
  idle_cost?: string | null;
}

export async function loadIdle(): Promise<void> {
  const { data, metadata } = await api<{ workloads: RankedEntry[] }>(
    inCluster('/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10'),
  );
  const currency = metadata?.currency ?? null;
  fillTable(
    'idle-table',
    data.workloads.map((entry) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = 'Utilization';
      button.setAttribute('aria-label', `Utilization of ${entry.name}`);
      button.addEventListener('click', () => void guarded(() => loadSeries(entry)));
      const action = cell('');
      action.append(button);
      return row(
        [
          cell(entry.name, entry.workload_id),
          cell(teamName(entry.initiative_id), entry.initiative_id),
          gpuCell(entry),
          cell(formatNumber(entry.idle_gpu_hours.avg), entry.idle_gpu_hours.avg, 'number'),
          cell(formatMoney(entry.idle_cost, currency), entry.idle_cost ?? null, 'number'),
          action,
        ],
        { workload: entry.workload_id },
      );
    }),
  );
  if (data.workloads.length === 0)
    fillTable('idle-table', [row([cell('No running workload with samples.')])]);
}

async function loadSeries(entry: RankedEntry): Promise<void> {
  const { data } = await api<{
    metrics: { gpu_utilization: { avg: number | null } };
    series: { timestamp: string; gpu_utilization: { avg: number | null } }[];
  }>(
    `/v1/workloads/${encodeURIComponent(entry.workload_id)}/metrics?time_range=last_24h&metrics=gpu_utilization&step=5m`,
  );
  const title = byId('series-title');
  title.hidden = false;
  title.textContent = `GPU utilization of ${entry.name}, last 24 h (average ${formatNumber(data.metrics.gpu_utilization.avg)} %)`;
  title.dataset.workload = entry.workload_id;
  drawChart(
    'series-chart',
    {
      tzDate: (time) => uPlot.tzDate(new Date(time * 1000), state.timeZone),
      series: [
        {
          label: 'Time',
          value: (chart, time, _series, index) => latestText(chart, 0, index, formatTime, time),
        },
        {
          label: 'GPU utilization',
          stroke: PALETTE[2],
          width: 2,
          value: legendValue((value) => `${formatNumber(value)} %`),
        },
      ],
      axes: [{}, { label: '%', size: 50 }],
      scales: { y: { range: [0, 100] } },
    },
    [
      data.series.map((point) => Date.parse(point.timestamp) / 1000),
      data.series.map((point) => point.gpu_utilization.avg),
    ],
  );
}

/** A new view hides the utilization of a workload from the view before. */
export function clearSeries(): void {
  removeChart('series-chart');
  byId('series-title').hidden = true;
}
