import type uPlot from 'uplot';
import { api, inCluster } from '../lib/api';
import { dayAxis, dayTime, drawChart, legendValue, PALETTE } from '../lib/charts';
import { byId, cell, costSentence, figure, fillTable, row, statusBadge } from '../lib/dom';
import { formatDate, formatLastDay, formatMoney, formatNumber } from '../lib/format';
import { state, teamNames } from '../lib/state';

interface BudgetEntry {
  allocated_gpu_hours?: number;
  used_gpu_hours?: number;
  remaining_gpu_hours?: number;
  total_allocated_gpu_hours?: number;
  total_used_gpu_hours?: number;
  total_remaining_gpu_hours?: number;
  used_cost?: string | null;
  total_used_cost?: string | null;
  budget_status?: string;
  projected_exhaustion_date: string | null;
  daily?: {
    date: string;
    used_gpu_hours: number;
    cumulative_used_gpu_hours: number;
    remaining_gpu_hours: number;
  }[];
  pool_id?: string;
  initiative_id?: string;
  name?: string;
}

export interface Capacity {
  timezone?: string;
  summary: BudgetEntry;
  pools: BudgetEntry[];
  initiatives: BudgetEntry[];
  period: { start: string; end: string };
}

export async function loadCapacity(): Promise<void> {
  const { data, metadata } = await api<Capacity>(inCluster('/v1/capacity?interval=day'));
  const currency = metadata?.currency ?? null;
  state.capacity = data;
  state.timeZone = data.timezone ?? 'UTC';
  teamNames.clear();
  for (const initiative of data.initiatives) teamNames.set(initiative.initiative_id!, initiative.name ?? '');
  const summary = data.summary;
  const exhaustion = summary.projected_exhaustion_date;
  const periodEnd = data.period.end;
  byId('capacity-summary').innerHTML = '';
  byId('capacity-summary').append(
    `Period ${formatDate(data.period.start)} to ${formatLastDay(periodEnd)} (days in ${state.timeZone}): `,
    figure('summary-used', summary.total_used_gpu_hours, 'used'),
    ' of ',
    figure('summary-allocated', summary.total_allocated_gpu_hours, 'allocated'),
    ' GPU-hours used; ',
    figure('summary-remaining', summary.total_remaining_gpu_hours, 'remaining'),
    ` remaining; ${exhaustionSentence(exhaustion, periodEnd)}.`,
    ...costSentence('summary-cost', summary.total_used_cost, currency, null),
  );
  byId('capacity-summary').dataset.timezone = state.timeZone;
  const entries = [
    ...data.pools.map((entry) => ({ kind: 'Pool', id: entry.pool_id!, entry })),
    ...data.initiatives.map((entry) => ({ kind: 'Team', id: entry.initiative_id!, entry })),
  ];
  fillTable(
    'capacity-table',
    entries.map(({ kind, id, entry }) =>
      row(
        [
          cell(kind),
          cell(entry.name ?? id, id),
          cell(formatNumber(entry.allocated_gpu_hours), entry.allocated_gpu_hours, 'number'),
          cell(formatNumber(entry.used_gpu_hours), entry.used_gpu_hours, 'number'),
          cell(formatNumber(entry.remaining_gpu_hours), entry.remaining_gpu_hours, 'number'),
          statusBadge(entry.budget_status),
          exhaustionCell(entry.projected_exhaustion_date, periodEnd),
          cell(formatMoney(entry.used_cost, currency), entry.used_cost ?? null, 'number'),
        ],
        { kind: kind.toLowerCase(), id, status: entry.budget_status ?? '' },
      ),
    ),
  );
  drawBurnDown(summary, periodEnd);
}

function afterPeriodEnd(exhaustion: string, periodEnd: string): boolean {
  return Date.parse(exhaustion) >= Date.parse(periodEnd);
}

function exhaustionSentence(exhaustion: string | null, periodEnd: string): string {
  if (!exhaustion) return 'not running out at this rate';
  if (afterPeriodEnd(exhaustion, periodEnd)) return "lasts past the period's end at the last 7 days' rate";
  return `runs out ${formatDate(exhaustion)} at the last 7 days' rate`;
}

/** A projected exhaustion after the period ends is no risk to it: it says so instead of a date. */
function exhaustionCell(exhaustion: string | null, periodEnd: string): HTMLTableCellElement {
  if (!exhaustion || !afterPeriodEnd(exhaustion, periodEnd)) return cell(formatDate(exhaustion), exhaustion);
  const td = cell('after period end', exhaustion, 'after-end');
  td.title = `At the last 7 days' rate: ${formatDate(exhaustion)}`;
  return td;
}

/** Remaining budget at the end of each day, and a dashed line from today to the projected exhaustion. */
function drawBurnDown(summary: BudgetEntry, periodEnd: string): void {
  const days = summary.daily ?? [];
  if (days.length === 0) return;
  const times = days.map((day) => dayTime(day.date));
  const remaining: (number | null)[] = days.map((day) => day.remaining_gpu_hours);
  const projection: (number | null)[] = remaining.map(() => null);
  const exhaustion = summary.projected_exhaustion_date;
  if (exhaustion && !afterPeriodEnd(exhaustion, periodEnd)) {
    const end = dayTime(formatDate(exhaustion));
    if (end > times[times.length - 1]) {
      projection[projection.length - 1] = remaining[remaining.length - 1];
      times.push(end);
      remaining.push(null);
      projection.push(0);
    }
  }
  const day = dayAxis();
  const hours = (value: number) => `${formatNumber(value)} GPU-h`;
  drawChart(
    'capacity-chart',
    {
      tzDate: day.tzDate,
      series: [
        day.x,
        { label: 'Remaining', stroke: PALETTE[0], width: 2, value: legendValue(hours) },
        { label: 'Projected', stroke: PALETTE[1], dash: [6, 4], spanGaps: true, value: legendValue(hours) },
      ],
      axes: [day.axis, { label: 'GPU-hours', size: 70 }],
    },
    [times, remaining, projection] as uPlot.AlignedData,
  );
}
