import type uPlot from 'uplot';
import { api, inCluster } from '../lib/api';
import { dayAxis, dayTime, drawChart, latestText, legendValue, PALETTE } from '../lib/charts';
import { byId, cell, costSentence, figure, fillTable, row, statusBadge } from '../lib/dom';
import { formatDate, formatLastDay, formatMoney, formatNumber, formatPercent } from '../lib/format';
import { poolNames, selectedCluster, state, teamNames } from '../lib/state';

interface BudgetEntry {
  allocated_gpu_hours?: number;
  used_gpu_hours?: number;
  remaining_gpu_hours?: number;
  total_allocated_gpu_hours?: number;
  total_used_gpu_hours?: number;
  total_remaining_gpu_hours?: number;
  used_cost?: string | null;
  total_used_cost?: string | null;
  allocated_cost?: string | null;
  total_allocated_cost?: string | null;
  sampled_gpu_hours?: number;
  gpu_efficiency?: number | null;
  burn_rate_gpu_hours_per_day?: number;
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

const DAY_SECONDS = 86_400;

/** The id of a pool's or team's row, which the alerts strip links to. */
export function capacityRowId(kind: 'pool' | 'team', id: string): string {
  return `capacity-${kind}-${id}`;
}

export async function loadCapacity(): Promise<void> {
  const cluster = selectedCluster();
  const { data, metadata } = await api<Capacity>(inCluster('/v1/capacity?interval=day'));
  const currency = metadata?.currency ?? null;
  state.capacity = data;
  state.timeZone = data.timezone ?? 'UTC';
  teamNames.clear();
  for (const initiative of data.initiatives) teamNames.set(initiative.initiative_id!, initiative.name ?? '');
  poolNames.clear();
  for (const pool of data.pools) poolNames.set(pool.pool_id!, pool.name ?? '');
  const summary = data.summary;
  const periodEnd = data.period.end;
  const period = byId('capacity-period');
  period.textContent = `${formatDate(data.period.start)} – ${formatLastDay(periodEnd)}, ${state.timeZone}`;
  period.dataset.start = data.period.start;
  period.dataset.end = periodEnd;
  byId('capacity-summary').replaceChildren(
    ...summarySentences(summary, periodEnd, currency, cluster, exhaustedClause(data)),
  );
  byId('capacity-summary').dataset.timezone = state.timeZone;
  byId('capacity-note').textContent = cluster
    ? `Used cost is this cluster's use at the prices in force; allocated cost belongs to the whole pool, ` +
      `as allocations do.`
    : `Allocated cost is the allocation at its pool's one price over the whole period; "—" where a pool's ` +
      `instance types differ in price or its price changes inside the period.`;
  const entries = [
    ...data.pools.map((entry) => ({ kind: 'pool' as const, id: entry.pool_id!, entry })),
    ...data.initiatives.map((entry) => ({ kind: 'team' as const, id: entry.initiative_id!, entry })),
  ];
  fillTable(
    'capacity-table',
    entries.map(({ kind, id, entry }) => {
      const tableRow = row(
        [
          cell(kind === 'pool' ? 'Pool' : 'Team'),
          cell(entry.name ?? id, id, 'name'),
          cell(formatNumber(entry.allocated_gpu_hours), entry.allocated_gpu_hours, 'number'),
          cell(formatNumber(entry.used_gpu_hours), entry.used_gpu_hours, 'number'),
          cell(formatNumber(entry.remaining_gpu_hours), entry.remaining_gpu_hours, 'number'),
          statusBadge(entry.budget_status),
          exhaustionCell(entry.projected_exhaustion_date, periodEnd),
          cell(formatMoney(entry.used_cost, currency), entry.used_cost ?? null, 'number'),
          cell(formatMoney(entry.allocated_cost, currency), entry.allocated_cost ?? null, 'number'),
        ],
        { kind, id, status: entry.budget_status ?? '' },
      );
      tableRow.id = capacityRowId(kind, id);
      return tableRow;
    }),
  );
  drawBurnDown(data);
}

/**
 * Use against budgets, run-out and cost; with a cluster chosen it says what it compares: that
 * cluster's use against the whole pools' budgets, which are not split by cluster.
 */
function summarySentences(
  summary: BudgetEntry,
  periodEnd: string,
  currency: string | null,
  cluster: string,
  exhausted: string,
): (string | HTMLElement)[] {
  const used = figure('summary-used', summary.total_used_gpu_hours, 'used');
  const allocated = figure('summary-allocated', summary.total_allocated_gpu_hours, 'allocated');
  const remaining = figure('summary-remaining', summary.total_remaining_gpu_hours, 'remaining');
  const efficiency = efficiencySentence(summary);
  if (cluster)
    return [
      `Cluster ${cluster}'s use against the whole pools' budgets (allocations belong to pools, not to clusters): its workloads used `,
      used,
      ' of the ',
      allocated,
      ' GPU-hours allocated, leaving ',
      remaining,
      `; ${clusterExhaustionSentence(summary.projected_exhaustion_date, periodEnd)}${exhausted}.`,
      ...costSentence('summary-cost', summary.total_used_cost, currency, null),
      efficiency,
    ];
  return [
    used,
    ' of ',
    allocated,
    ' GPU-hours used; ',
    remaining,
    ` remaining; ${exhaustionSentence(summary.projected_exhaustion_date, periodEnd)}${exhausted}.`,
    ...costSentence('summary-cost', summary.total_used_cost, currency, null, summary.total_allocated_cost),
    efficiency,
  ];
}

/**
 * The pools and teams already past their budget: the total can last past the period's end while
 * some of them have run out, and the sentence says so rather than contradict the table.
 */
function exhaustedClause(data: Capacity): string {
  const count = (entries: BudgetEntry[], noun: string) => {
    const n = entries.filter((entry) => entry.budget_status === 'exhausted').length;
    return n === 0 ? '' : `${n} ${noun}${n === 1 ? '' : 's'}`;
  };
  const parts = [count(data.pools, 'pool'), count(data.initiatives, 'team')].filter(Boolean);
  return parts.length === 0 ? '' : `, though ${parts.join(' and ')} already ran out`;
}

/** How much of the use the efficiency covers: only workloads with samples have one. */
function efficiencySentence(summary: BudgetEntry): string {
  const used = summary.total_used_gpu_hours ?? 0;
  const sampled = summary.sampled_gpu_hours ?? 0;
  if (summary.gpu_efficiency === null || summary.gpu_efficiency === undefined || used <= 0) return '';
  return (
    ` GPU efficiency ${formatPercent(summary.gpu_efficiency)}, over the ${formatPercent(sampled / used)} ` +
    `of these GPU-hours whose workloads have utilization samples.`
  );
}

function clusterExhaustionSentence(exhaustion: string | null, periodEnd: string): string {
  const rate = "at this cluster's rate of the last 7 days";
  if (!exhaustion) return `the budgets are not running out ${rate}`;
  if (afterPeriodEnd(exhaustion, periodEnd)) return `the budgets last past the period's end ${rate}`;
  return `the budgets run out ${formatDate(exhaustion)} ${rate}`;
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

/** What the projection's legend says without a cursor: when the budgets run out, not a figure. */
function projectionText(exhaustion: string | null, periodEnd: string): string {
  if (!exhaustion) return 'not running out';
  if (afterPeriodEnd(exhaustion, periodEnd)) return 'lasts past period end';
  return `runs out ${formatDate(exhaustion)}`;
}

/**
 * Remaining budget at the end of each day of the whole period: the total so far, a dashed line on
 * from today at the last 7 days' rate to the period's end, and each pool's own line (a click on its
 * name in the legend hides or shows it).
 */
function drawBurnDown(data: Capacity): void {
  const summary = data.summary;
  const days = summary.daily ?? [];
  const chart = byId('capacity-chart');
  if (days.length === 0) return;
  const first = dayTime(days[0].date);
  const last = Math.max(dayTime(formatLastDay(data.period.end)), dayTime(days[days.length - 1].date));
  const times: number[] = [];
  for (let time = first; time <= last; time += DAY_SECONDS) times.push(time);
  const along = (entry: BudgetEntry) => {
    const values: (number | null)[] = times.map(() => null);
    for (const day of entry.daily ?? [])
      values[(dayTime(day.date) - first) / DAY_SECONDS] = day.remaining_gpu_hours;
    return values;
  };
  const remaining = along(summary);
  const today = days.length - 1;
  const burn = summary.burn_rate_gpu_hours_per_day ?? 0;
  const projection = times.map((_time, index) =>
    index < today ? null : (remaining[today] ?? 0) - burn * (index - today),
  );
  chart.dataset.days = String(times.length);
  chart.dataset.last = formatLastDay(data.period.end);
  const day = dayAxis();
  const hours = (value: number) => `${formatNumber(value)} GPU-h`;
  const ending = projectionText(summary.projected_exhaustion_date, data.period.end);
  drawChart(
    'capacity-chart',
    {
      tzDate: day.tzDate,
      series: [
        day.x,
        { label: 'Remaining', stroke: PALETTE[0], width: 2.5, value: legendValue(hours) },
        {
          label: "At the last 7 days' rate",
          stroke: PALETTE[0],
          dash: [6, 4],
          width: 1.5,
          value: (chart, value, _series, index) =>
            index === null || index === undefined
              ? ending
              : latestText(chart, 2, index, (projected) => `${hours(projected)} projected`, value),
        },
        ...data.pools.map((pool, index) => ({
          label: pool.name ?? pool.pool_id,
          stroke: PALETTE[(index + 2) % PALETTE.length],
          width: 1.25,
          value: legendValue(hours),
        })),
      ],
      axes: [day.axis, { label: 'GPU-hours remaining', size: 70 }],
    },
    [times, remaining, projection, ...data.pools.map(along)] as uPlot.AlignedData,
    260,
  );
}
