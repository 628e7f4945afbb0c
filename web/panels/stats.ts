import { api, inCluster } from '../lib/api';
import { dayAxis, dayTime, drawChart, legendValue, PALETTE } from '../lib/charts';
import { byId, cell, costSentence, figure, fillTable, row } from '../lib/dom';
import { formatMoney, formatNumber, formatPercent } from '../lib/format';
import { state, teamName } from '../lib/state';

/** What the workloads of a set drew, measured from their samples' power (0 without samples). */
interface EnergyFigures {
  sampled_gpu_hours: number;
  total_energy_kwh: number;
  total_carbon_kg: number;
  uncovered_energy_kwh: number;
}

interface Group extends EnergyFigures {
  initiative_id: string;
  workload_count: number;
  gpu_hours: number;
  total_cost: string | null;
  success_rate: number | null;
}

interface Stats {
  summary: EnergyFigures & {
    total_workloads: number;
    total_gpu_hours: number;
    total_cost: string | null;
    unpriced_gpu_hours: number;
    success_rate: number | null;
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
  const energy = byId('stats-energy');
  energy.replaceChildren(...energySentence(data.summary));
  energy.hidden = energy.childNodes.length === 0;
  fillTable(
    'stats-table',
    data.grouped.map((group) =>
      teamRow(group, [
        cell(formatNumber(group.workload_count), group.workload_count, 'number'),
        cell(formatNumber(group.gpu_hours), group.gpu_hours, 'number'),
        cell(formatPercent(group.success_rate).replace(' %', ''), group.success_rate, 'number'),
        cell(formatMoney(group.total_cost, currency), group.total_cost, 'number'),
      ]),
    ),
  );
  fillTable(
    'stats-energy-table',
    data.grouped.map((group) =>
      teamRow(group, [
        cell(formatNumber(group.sampled_gpu_hours), group.sampled_gpu_hours, 'number'),
        ...energyCells(group),
      ]),
    ),
  );
  drawDailyUse(range === 'last_7_days' ? 7 : 30);
}

/** A team's row: its name, then `figures`; both tables list the teams in the API's order. */
function teamRow(group: Group, figures: HTMLTableCellElement[]): HTMLTableRowElement {
  return row([cell(teamName(group.initiative_id), group.initiative_id), ...figures], {
    team: group.initiative_id,
  });
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
 * Energy per GPU-hour of the workloads that have samples (the only ones whose power is measured), so
 * unsampled GPU-hours do not dilute it; null when none has samples.
 */
function energyPerGpuHour(figures: EnergyFigures): number | null {
  return figures.sampled_gpu_hours > 0 ? figures.total_energy_kwh / figures.sampled_gpu_hours : null;
}

const PER_GPU_HOUR_HELP = 'kWh per GPU-hour: high for hot work (GPUs near full power), low for cool work';

/**
 * Without samples nothing was measured: the line says nothing rather than "0 kWh". Carbon leaves out
 * the energy no carbon intensity covers, and says how much that is, as the cost sentence does for
 * GPU-hours without a price.
 */
function energySentence(summary: Stats['summary']): (string | HTMLElement)[] {
  const perGpuHour = energyPerGpuHour(summary);
  if (perGpuHour === null) return [];
  const uncovered = summary.uncovered_energy_kwh > 0;
  return [
    'Energy ',
    figure('stats-energy-kwh', summary.total_energy_kwh, 'kWh'),
    ' kWh, ',
    figure('stats-carbon-kg', summary.total_carbon_kg, 'kg CO2e'),
    ' kg CO2e',
    ...(uncovered
      ? [
          ' (',
          figure(
            'stats-uncovered-energy-kwh',
            summary.uncovered_energy_kwh,
            'kWh without a carbon intensity',
          ),
          ' kWh without a carbon intensity)',
        ]
      : []),
    ', ',
    figure('stats-kwh-per-gpu-hour', perGpuHour, PER_GPU_HOUR_HELP, 2),
    ' kWh per GPU-hour with samples (high for hot work, low for cool).',
  ];
}

/** A team's kWh, kg CO2e and kWh per GPU-hour; '—' for a team none of whose workloads has samples. */
function energyCells(group: Group): HTMLTableCellElement[] {
  const perGpuHour = energyPerGpuHour(group);
  const measured = (value: number) => (perGpuHour === null ? '—' : formatNumber(value));
  const cells = {
    energy_kwh: cell(measured(group.total_energy_kwh), group.total_energy_kwh, 'number'),
    carbon_kg: cell(measured(group.total_carbon_kg), group.total_carbon_kg, 'number'),
    kwh_per_gpu_hour: cell(formatNumber(perGpuHour, 2), perGpuHour, 'number'),
  };
  if (group.uncovered_energy_kwh > 0) {
    cells.carbon_kg.dataset.uncovered = String(group.uncovered_energy_kwh);
    cells.carbon_kg.title = `Leaves out ${formatNumber(group.uncovered_energy_kwh)} kWh without a carbon intensity`;
  }
  return Object.entries(cells).map(([name, td]) => {
    td.dataset.figure = name;
    return td;
  });
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
