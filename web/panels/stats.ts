import { api, inCluster } from '../lib/api';
import { dayAxis, dayTime, drawChart, legendValue, PALETTE } from '../lib/charts';
import { byId, cell, costSentence, figure, fillTable, row } from '../lib/dom';
import { formatMoney, formatNumber, formatPercent } from '../lib/format';
import { state, teamName } from '../lib/state';

interface Group {
  initiative_id: string;
  workload_count: number;
  gpu_hours: number;
  total_cost: string | null;
  success_rate: number | null;
}

interface Stats {
  summary: {
    total_workloads: number;
    total_gpu_hours: number;
    total_cost: string | null;
    unpriced_gpu_hours: number;
    success_rate: number | null;
    sampled_gpu_hours: number;
    gpu_efficiency: number | null;
  };
  grouped: Group[];
  timeline: { bucket_start: string; grouped: Group[] }[];
}

export async function loadStats(): Promise<void> {
  const range = byId<HTMLSelectElement>('stats-range').value;
  const { data, metadata } = await api<Stats>(
    inCluster(`/v1/workloads/stats?time_range=${range}&group_by=initiative_id&interval=day`),
  );
  const currency = metadata?.currency ?? null;
  byId('stats-summary').replaceChildren(
    figure('stats-workloads', data.summary.total_workloads, 'workloads', 0),
    ' workloads submitted, ',
    figure('stats-gpu-hours', data.summary.total_gpu_hours, 'GPU-hours'),
    ` GPU-hours over their whole runs, success rate ${formatPercent(data.summary.success_rate)}.`,
    ...costSentence('stats-cost', data.summary.total_cost, currency, data.summary.unpriced_gpu_hours),
    ...efficiencySentence(data.summary),
  );
  fillTable(
    'stats-table',
    data.grouped.map((group) =>
      row(
        [
          cell(teamName(group.initiative_id), group.initiative_id),
          cell(formatNumber(group.workload_count), group.workload_count, 'number'),
          cell(formatNumber(group.gpu_hours), group.gpu_hours, 'number'),
          cell(formatPercent(group.success_rate).replace(' %', ''), group.success_rate, 'number'),
          cell(formatMoney(group.total_cost, currency), group.total_cost, 'number'),
        ],
        { team: group.initiative_id },
      ),
    ),
  );
  drawDailyUse(range === 'last_7_days' ? 7 : 30);
}

/**
 * Efficiency is only known where there are samples: the sentence says how much of the GPU-hours
 * that is, so a high figure over a sliver of the use is not read as the whole.
 */
function efficiencySentence(summary: Stats['summary']): (string | HTMLElement)[] {
  if (summary.gpu_efficiency === null || summary.total_gpu_hours <= 0) return [];
  const covered = document.createElement('strong');
  covered.id = 'stats-sampled-share';
  covered.dataset.value = String(summary.sampled_gpu_hours / summary.total_gpu_hours);
  covered.textContent = formatPercent(summary.sampled_gpu_hours / summary.total_gpu_hours);
  const efficiency = document.createElement('strong');
  efficiency.id = 'stats-efficiency';
  efficiency.dataset.value = String(summary.gpu_efficiency);
  efficiency.textContent = formatPercent(summary.gpu_efficiency);
  return [
    ' GPU efficiency ',
    efficiency,
    ', over the ',
    covered,
    ` of these GPU-hours (${formatNumber(summary.sampled_gpu_hours)}) whose workloads have utilization samples.`,
  ];
}

/**
 * GPU-hours each team used on each local day (the burn-down's `used_gpu_hours`): a long run counts
 * on every day it ran, not all on the day it was submitted. The budget period's last `dayCount` days.
 */
function drawDailyUse(dayCount: number): void {
  const teams = (state.capacity?.initiatives ?? []).filter((team) => (team.daily ?? []).length > 0);
  const days = (teams[0]?.daily ?? []).slice(-dayCount);
  const first = (teams[0]?.daily ?? []).length - days.length;
  const chart = byId('stats-chart');
  chart.dataset.days = String(days.length);
  chart.dataset.from = days[0]?.date ?? '';
  const day = dayAxis();
  const hours = (value: number) => `${formatNumber(value)} GPU-h`;
  drawChart(
    'stats-chart',
    {
      tzDate: day.tzDate,
      series: [
        day.x,
        ...teams.map((team, index) => ({
          label: team.name ?? team.initiative_id,
          stroke: PALETTE[index % PALETTE.length],
          width: 2,
          value: legendValue(hours),
        })),
      ],
      axes: [day.axis, { label: 'GPU-hours used', size: 70 }],
    },
    [
      days.map((entry) => dayTime(entry.date)),
      ...teams.map((team) => (team.daily ?? []).slice(first).map((entry) => entry.used_gpu_hours)),
    ],
  );
}
