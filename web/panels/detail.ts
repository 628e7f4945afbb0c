import uPlot from 'uplot';
import { api } from '../lib/api';
import { drawChart, latestText, legendValue, PALETTE, timeAxis } from '../lib/charts';
import { byId } from '../lib/dom';
import {
  formatDuration,
  formatMoney,
  formatNumber,
  formatPercent,
  formatTime,
  gpuText,
  type GpuHolding,
} from '../lib/format';
import { state, teamName } from '../lib/state';

/** GET /v1/workloads/{id}: what the list's columns leave out. */
interface WorkloadDetail extends GpuHolding {
  workload_id: string;
  name: string;
  status: string;
  submitted_by: string;
  initiative_id: string;
  instance_type: string;
  cluster_id: string;
  submitted_at: string;
  started_at: string | null;
  completed_at: string | null;
  wait_seconds: number | null;
  duration_seconds: number;
  gpu_hours_used: number;
  cost: string | null;
  idle_gpu_hours: number | null;
  idle_cost: string | null;
  gpu_efficiency: number | null;
}

interface UtilizationSeries {
  metrics: { gpu_utilization: { avg: number | null } };
  series: { timestamp: string; gpu_utilization: { avg: number | null } }[];
}

/** Where a workload's details are drawn: a title, a list of facts and a chart, by element id. */
export interface DetailTarget {
  title: string;
  facts: string;
  chart: string;
}

/** Only the latest request of each target draws: a slow answer for a row clicked before is dropped. */
const latest = new Map<string, number>();

export function fetchWorkload(workloadId: string) {
  return api<WorkloadDetail>(`/v1/workloads/${encodeURIComponent(workloadId)}`);
}

const DAY_SECONDS = 86_400;

/**
 * A workload's facts and its GPU utilization: over its whole run when that is shorter than a day
 * (every minute up to two hours of it, else every 5), otherwise over the last 24 h of it.
 */
export async function showWorkload(target: DetailTarget, workloadId: string): Promise<void> {
  const request = (latest.get(target.chart) ?? 0) + 1;
  latest.set(target.chart, request);
  const { data: workload, metadata } = await fetchWorkload(workloadId);
  const whole = workload.started_at !== null && workload.duration_seconds < DAY_SECONDS;
  const range = whole
    ? `time_range=job_lifetime&step=${workload.duration_seconds <= 7200 ? '1m' : '5m'}`
    : 'time_range=last_24h&step=5m';
  const { data: metrics } = await api<UtilizationSeries>(
    `/v1/workloads/${encodeURIComponent(workloadId)}/metrics?${range}&metrics=gpu_utilization`,
  );
  if (latest.get(target.chart) !== request) return;
  const currency = metadata?.currency ?? null;
  const average = metrics.metrics.gpu_utilization.avg;
  const title = byId(target.title);
  title.hidden = false;
  title.dataset.workload = workloadId;
  const span = whole
    ? `its whole run (${formatDuration(workload.duration_seconds)})`
    : workload.completed_at
      ? 'the last 24 h of its run'
      : 'last 24 h';
  title.textContent =
    average === null
      ? `${workload.name}: no utilization samples over ${span}`
      : `GPU utilization of ${workload.name}, ${span} (average ${formatNumber(average)} %)`;
  fillFacts(target.facts, workload, currency);
  drawChart(
    target.chart,
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
      axes: [timeAxis(), { label: '%', size: 50 }],
      scales: { y: { range: [0, 100] } },
    },
    [
      metrics.series.map((point) => Date.parse(point.timestamp) / 1000),
      metrics.series.map((point) => point.gpu_utilization.avg),
    ],
  );
}

function fillFacts(id: string, workload: WorkloadDetail, currency: string | null): void {
  const at = (iso: string | null) => (iso === null ? '—' : formatTime(Date.parse(iso) / 1000));
  const efficiency =
    workload.gpu_efficiency === null
      ? 'no samples'
      : `${formatPercent(workload.gpu_efficiency)} (idle ${formatNumber(workload.idle_gpu_hours)} GPU-h, ${formatMoney(workload.idle_cost, currency)})`;
  const facts: [string, string][] = [
    ['Team', teamName(workload.initiative_id)],
    ['Submitted by', workload.submitted_by],
    ['Status', workload.status],
    ['Cluster', workload.cluster_id ?? '—'],
    ['Instance type', workload.instance_type],
    ['GPUs held', gpuText(workload)],
    ['Submitted', at(workload.submitted_at)],
    ['Started', at(workload.started_at)],
    ['Finished', at(workload.completed_at)],
    ['Waited', formatDuration(workload.wait_seconds)],
    ['Duration', formatDuration(workload.duration_seconds)],
    ['GPU-hours', formatNumber(workload.gpu_hours_used)],
    ['Cost', formatMoney(workload.cost, currency)],
    ['GPU efficiency', efficiency],
  ];
  const list = byId(id);
  list.hidden = false;
  list.replaceChildren(
    ...facts.map(([name, value]) => {
      const pair = document.createElement('div');
      pair.dataset.fact = name;
      pair.append(
        Object.assign(document.createElement('dt'), { textContent: name }),
        Object.assign(document.createElement('dd'), { textContent: value }),
      );
      return pair;
    }),
  );
}
