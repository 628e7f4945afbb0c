import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './styles.css';

/*
 * The dashboard only calls the public API with the caller's own token, so every panel shows exactly
 * what that token may see. The token lives in sessionStorage (gone with the tab), never in a URL.
 */

const TOKEN_KEY = 'gpucap.token';
const ORGANIZATION_KEY = 'gpucap.organization';
const RECENT_KEY = 'gpucap.recentOrganizations';
const CLUSTER_KEY = 'gpucap.cluster';
const WORKLOADS_PAGE = 20;

interface Envelope<T> {
  data: T;
  metadata?: { total_count?: number; next_token?: string | null; currency?: string | null };
}

/** An alert of GET /v1/alerts: its labels (severity among them) and what a person reads. */
interface FiringAlert {
  alertname: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  starts_at: string;
}

type GpuSharing = { mode: 'mig'; profile: string } | { mode: 'time-slicing' | 'mps'; replicas: number };

/** What a workload holds: devices (whole GPUs, MIG instances or replicas) and the physical GPUs they add up to. */
interface GpuHolding {
  gpu_count?: number;
  gpu_share?: number;
  gpu_sharing?: GpuSharing | null;
}

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

interface Capacity {
  timezone?: string;
  summary: BudgetEntry;
  pools: BudgetEntry[];
  initiatives: BudgetEntry[];
  period: { start: string; end: string };
}

interface RankedEntry extends GpuHolding {
  workload_id: string;
  name: string;
  initiative_id: string;
  idle_gpu_hours: { avg: number };
  /** The money of idle_gpu_hours; null without a price. */
  idle_cost?: string | null;
}

interface WorkloadSummary extends GpuHolding {
  workload_id: string;
  name: string;
  status: string;
  initiative_id: string;
  instance_type: string;
  cluster_id?: string;
  submitted_at: string;
}

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
  };
  grouped: Group[];
  timeline: { bucket_start: string; grouped: Group[] }[];
}

class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** An answer that arrived after the view changed (another cluster, another organization): dropped. */
class Superseded extends Error {}

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const charts = new Map<string, uPlot>();
/** Bumped whenever what the panels show changes, so answers for the view before are not drawn. */
let view = 0;
let workloadsNextToken: string | null = null;
/** Only the latest list request may draw: a page asked for before a status change is dropped. */
let workloadsRequest = 0;
/** The organization's time zone (its local days are the burn-down's) and its teams' names, from capacity. */
let timeZone = 'UTC';
const teamNames = new Map<string, string>();
/** The latest capacity answer: the per-day chart draws its teams' daily use. */
let capacity: Capacity | null = null;

function credentials() {
  return {
    token: sessionStorage.getItem(TOKEN_KEY) ?? '',
    organization: sessionStorage.getItem(ORGANIZATION_KEY) ?? '',
  };
}

/** The chosen cluster ('' for all), kept for the tab like the token. */
function selectedCluster(): string {
  return sessionStorage.getItem(CLUSTER_KEY) ?? '';
}

/** Adds the chosen cluster to a request about sets of workloads (lists, statistics, rankings, capacity). */
function inCluster(path: string): string {
  const cluster = selectedCluster();
  return cluster ? `${path}${path.includes('?') ? '&' : '?'}cluster_id=${encodeURIComponent(cluster)}` : path;
}

async function api<T>(path: string): Promise<Envelope<T>> {
  const asked = view;
  const { token, organization } = credentials();
  const response = await fetch(path, {
    // Revalidate every time (If-None-Match): an unchanged answer costs a 304, and a write shows at
    // once instead of after the answer's max-age.
    cache: 'no-cache',
    headers: {
      Authorization: `Bearer ${token}`,
      'X-Organization-Id': organization,
      Accept: 'application/json',
    },
  });
  const body = (await response.json().catch(() => null)) as
    (Envelope<T> & { error?: { message: string } }) | null;
  if (asked !== view) throw new Superseded();
  if (!response.ok || !body)
    throw new ApiFailure(body?.error?.message ?? `The API answered ${response.status}`, response.status);
  return body;
}

function showMessage(text: string | null): void {
  const message = byId<HTMLParagraphElement>('message');
  message.textContent = text ?? '';
  message.hidden = text === null;
}

function formatNumber(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * An amount as the API gives it (an exact decimal string in the currency's minor units), shown as is
 * with its currency: formatting it as a float could change its last digit. '—' without a price.
 */
function formatMoney(amount: string | null | undefined, currency: string | null | undefined): string {
  return amount === null || amount === undefined || !currency ? '—' : `${currency} ${amount}`;
}

/** The money beside GPU-hours in a summary sentence, only where the organization has prices. */
function costSentence(
  id: string,
  amount: string | null | undefined,
  currency: string | null | undefined,
  unpriced: number | null | undefined,
): (string | HTMLElement)[] {
  if (!currency || amount === null || amount === undefined) return [];
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = amount;
  strong.textContent = formatMoney(amount, currency);
  const rest = unpriced ? ` (${formatNumber(unpriced)} GPU-hours without a price not included)` : '';
  return [' They cost ', strong, `${rest}.`];
}

function formatPercent(value: number | null): string {
  return value === null ? '—' : `${(value * 100).toFixed(1)} %`;
}

/** The organization's local date of an instant (YYYY-MM-DD), so days read as the API counts them. */
function formatDate(iso: string | null): string {
  if (iso === null) return '—';
  try {
    return new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).format(new Date(iso));
  } catch {
    return iso.slice(0, 10);
  }
}

/** The last day an exclusive end covers: a period ending at local midnight ends the day before. */
function formatLastDay(iso: string): string {
  return formatDate(new Date(Date.parse(iso) - 1).toISOString());
}

/** An instant as the organization's local date and time of day, to the minute. */
function formatTime(time: number): string {
  const instant = new Date(time * 1000);
  const clock = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' });
  return `${formatDate(instant.toISOString())} ${clock.format(instant)}`;
}

function teamName(id: string): string {
  return teamNames.get(id) ?? id;
}

/** A chart time for a local date: that date's midnight in UTC, so it draws and reads as the date itself. */
function dayTime(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 1000;
}

function dayText(time: number): string {
  return new Date(time * 1000).toISOString().slice(0, 10);
}

const DAY_SECONDS = 86_400;

/**
 * The x axis of a per-day chart: whole days only, labelled by date (no hour), and a legend that
 * names the day.
 */
function dayAxis(): Pick<uPlot.Options, 'tzDate'> & { x: uPlot.Series; axis: uPlot.Axis } {
  return {
    tzDate: (time) => uPlot.tzDate(new Date(time * 1000), 'Etc/UTC'),
    x: { label: 'Day', value: (_chart, time, _series, index) => latestText(_chart, 0, index, dayText, time) },
    axis: {
      incrs: [1, 2, 7, 14, 28, 56, 91, 182, 364].map((days) => days * DAY_SECONDS),
      values: (_chart, splits) => splits.map((time) => dayText(time).slice(5)),
    },
  };
}

/**
 * What a legend shows: the hovered point, or without a cursor the latest day of the first series
 * (today, not the projection's end), so the legend always carries figures where uPlot's own shows
 * "--" until hovered.
 */
function latestText(
  chart: uPlot,
  seriesIndex: number,
  index: number | null,
  format: (value: number) => string,
  hovered: number | null,
): string {
  if (index !== null && index !== undefined) return hovered === null ? '—' : format(hovered);
  const first = (chart.data[1] ?? []) as (number | null | undefined)[];
  let latest = first.length - 1;
  while (latest > 0 && (first[latest] === null || first[latest] === undefined)) latest -= 1;
  const value = (chart.data[seriesIndex] as (number | null | undefined)[])[latest];
  return value === null || value === undefined ? '—' : `${format(value)} (latest)`;
}

function legendValue(format: (value: number) => string): uPlot.Series['value'] {
  return (chart, value, seriesIndex, index) => latestText(chart, seriesIndex, index, format, value);
}

function formatGpus(value: number): string {
  const text = value.toLocaleString('en-US', { maximumFractionDigits: 2 });
  return `${text} ${value <= 1 ? 'GPU' : 'GPUs'}`;
}

/**
 * "8 GPUs", "2 × 1g.10gb = 0.29 GPU", "1 × 1/4 time-sliced = 0.25 GPU": the devices a workload was
 * given and the physical GPUs they amount to.
 */
function gpuText(holding: GpuHolding): string {
  const share = holding.gpu_share ?? holding.gpu_count;
  if (share === undefined) return '—';
  const sharing = holding.gpu_sharing ?? null;
  const devices = holding.gpu_count === undefined ? '' : `${holding.gpu_count} × `;
  if (sharing === null) return formatGpus(holding.gpu_count ?? share);
  if (sharing.mode === 'mig') return `${devices}${sharing.profile} = ${formatGpus(share)}`;
  const how = sharing.mode === 'mps' ? 'MPS' : 'time-sliced';
  return `${devices}1/${sharing.replicas} ${how} = ${formatGpus(share)}`;
}

function gpuCell(holding: GpuHolding): HTMLTableCellElement {
  const td = cell(gpuText(holding), holding.gpu_share ?? holding.gpu_count ?? null, 'number');
  td.dataset.sharing = holding.gpu_sharing?.mode ?? 'whole';
  return td;
}

/** A cell that shows a rounded figure and keeps the API's exact one for whoever checks it. */
function cell(text: string, value?: number | string | null, className?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (value !== undefined) td.dataset.value = value === null ? '' : String(value);
  if (className) td.className = className;
  return td;
}

function statusBadge(status = 'on_track'): HTMLTableCellElement {
  const td = cell(status.replace('_', ' '), status, `status status-${status}`);
  return td;
}

function fillTable(id: string, rows: HTMLTableRowElement[]): void {
  const table = byId<HTMLTableElement>(id);
  table.tBodies[0].replaceChildren(...labelled(table, rows));
}

/**
 * Each cell carries its column's header as `data-label`: at phone width the rows stack as cards and
 * every figure shows beside its name instead of in a column scrolled out of sight.
 */
function labelled(table: HTMLTableElement, rows: HTMLTableRowElement[]): HTMLTableRowElement[] {
  const headers = [...(table.tHead?.rows[0]?.cells ?? [])].map((header) =>
    header.querySelector('.visually-hidden') ? '' : (header.textContent ?? '').trim(),
  );
  for (const tableRow of rows) {
    [...tableRow.cells].forEach((tableCell, index) => {
      tableCell.dataset.label = tableRow.cells.length === 1 ? '' : (headers[index] ?? '');
    });
  }
  return rows;
}

function row(cells: HTMLTableCellElement[], attributes: Record<string, string> = {}): HTMLTableRowElement {
  const tr = document.createElement('tr');
  for (const [name, value] of Object.entries(attributes)) tr.dataset[name] = value;
  tr.append(...cells);
  return tr;
}

/** Charts follow their container's width, so a phone-width screen gets a narrower chart, not a scrollbar. */
function drawChart(
  id: string,
  options: Omit<uPlot.Options, 'width' | 'height'>,
  data: uPlot.AlignedData,
): void {
  charts.get(id)?.destroy();
  const target = byId<HTMLDivElement>(id);
  const width = Math.max(260, target.clientWidth || 600);
  charts.set(id, new uPlot({ ...options, width, height: 220 }, data, target));
}

const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#64748b'];

async function loadCapacity(): Promise<void> {
  const { data, metadata } = await api<Capacity>(inCluster('/v1/capacity?interval=day'));
  const currency = metadata?.currency ?? null;
  capacity = data;
  timeZone = data.timezone ?? 'UTC';
  teamNames.clear();
  for (const initiative of data.initiatives) teamNames.set(initiative.initiative_id!, initiative.name ?? '');
  const summary = data.summary;
  const exhaustion = summary.projected_exhaustion_date;
  const periodEnd = data.period.end;
  byId('capacity-summary').innerHTML = '';
  byId('capacity-summary').append(
    `Period ${formatDate(data.period.start)} to ${formatLastDay(periodEnd)} (days in ${timeZone}): `,
    figure('summary-used', summary.total_used_gpu_hours, 'used'),
    ' of ',
    figure('summary-allocated', summary.total_allocated_gpu_hours, 'allocated'),
    ' GPU-hours used; ',
    figure('summary-remaining', summary.total_remaining_gpu_hours, 'remaining'),
    ` remaining; ${exhaustionSentence(exhaustion, periodEnd)}.`,
    ...costSentence('summary-cost', summary.total_used_cost, currency, null),
  );
  byId('capacity-summary').dataset.timezone = timeZone;
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

function figure(id: string, value: number | undefined, label: string, digits = 1): HTMLElement {
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = String(value ?? '');
  strong.textContent = formatNumber(value, digits);
  strong.title = label;
  return strong;
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

async function loadIdle(): Promise<void> {
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
      tzDate: (time) => uPlot.tzDate(new Date(time * 1000), timeZone),
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

async function loadStats(): Promise<void> {
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
  );
  fillTable(
    'stats-table',
    data.grouped.map((group) =>
      row(
        [
          cell(teamName(group.initiative_id), group.initiative_id),
          cell(String(group.workload_count), group.workload_count, 'number'),
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
 * GPU-hours each team used on each local day (the burn-down's `used_gpu_hours`): a long run counts
 * on every day it ran, not all on the day it was submitted. The budget period's last `dayCount` days.
 */
function drawDailyUse(dayCount: number): void {
  const teams = (capacity?.initiatives ?? []).filter((team) => (team.daily ?? []).length > 0);
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

/** The newest workloads (of one status, or all), a page at a time; `more` appends the next page. */
async function loadWorkloads(more = false): Promise<void> {
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

interface QueueFigures {
  queue_wait: {
    started: number;
    p50_seconds: number | null;
    p95_seconds: number | null;
    max_seconds: number | null;
  };
  pending: { count: number; gpu_share: number; oldest_submitted_at: string | null };
}

interface QueueStats {
  summary: QueueFigures;
  grouped: (QueueFigures & { initiative_id: string })[];
  timeline: { bucket_start: string; grouped: (QueueFigures & { initiative_id: string })[] }[];
}

/** A wait in seconds as minutes (or hours past two of them), the unit a team lead thinks in. */
function formatWait(seconds: number | null): string {
  if (seconds === null) return '—';
  return seconds >= 7200 ? `${formatNumber(seconds / 3600)} h` : `${formatNumber(seconds / 60)} min`;
}

/**
 * How long each team waited for GPUs: p50 and p95 of the queue wait of the workloads submitted each
 * local day (the statistics' timeline) as lines per team, and per team over the range the waits and
 * what is pending now among the workloads submitted in the range.
 */
async function loadQueueWait(): Promise<void> {
  const range = byId<HTMLSelectElement>('queue-range').value;
  const { data } = await api<QueueStats>(
    inCluster(`/v1/workloads/stats?time_range=${range}&group_by=initiative_id&interval=day`),
  );
  const pending = data.summary.pending;
  byId('queue-summary').replaceChildren(
    'Median wait ',
    waitFigure('queue-p50', data.summary.queue_wait.p50_seconds),
    ', 95th percentile ',
    waitFigure('queue-p95', data.summary.queue_wait.p95_seconds),
    ` over ${data.summary.queue_wait.started.toLocaleString('en-US')} started workloads; `,
    figure('queue-pending', pending.count, 'pending', 0),
    ` pending now, asking for ${formatGpus(pending.gpu_share)}.`,
  );
  fillTable(
    'queue-table',
    data.grouped.map((group) =>
      row(
        [
          cell(teamName(group.initiative_id), group.initiative_id),
          cell(String(group.queue_wait.started), group.queue_wait.started, 'number'),
          cell(formatWait(group.queue_wait.p50_seconds), group.queue_wait.p50_seconds, 'number'),
          cell(formatWait(group.queue_wait.p95_seconds), group.queue_wait.p95_seconds, 'number'),
          cell(String(group.pending.count), group.pending.count, 'number'),
          cell(formatNumber(group.pending.gpu_share, 2), group.pending.gpu_share, 'number'),
          cell(formatDate(group.pending.oldest_submitted_at), group.pending.oldest_submitted_at),
        ],
        { team: group.initiative_id },
      ),
    ),
  );
  drawQueueWait(data);
}

function waitFigure(id: string, seconds: number | null): HTMLElement {
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = seconds === null ? '' : String(seconds);
  strong.textContent = formatWait(seconds);
  return strong;
}

/** Per team a solid p95 line and a dashed p50 line, in minutes, one point per local day. */
function drawQueueWait(data: QueueStats): void {
  const teams = data.grouped.map((group) => group.initiative_id);
  const perDay = (team: string, percentile: 'p50_seconds' | 'p95_seconds') =>
    data.timeline.map((bucket) => {
      const seconds = bucket.grouped.find((group) => group.initiative_id === team)?.queue_wait[percentile];
      return seconds === null || seconds === undefined ? null : seconds / 60;
    });
  const chart = byId('queue-chart');
  chart.dataset.days = String(data.timeline.length);
  const day = dayAxis();
  const minutes = (value: number) => `${formatNumber(value)} min`;
  drawChart(
    'queue-chart',
    {
      tzDate: day.tzDate,
      series: [
        day.x,
        ...teams.flatMap((team, index) => [
          {
            label: `${teamName(team)} p95`,
            stroke: PALETTE[index % PALETTE.length],
            width: 2,
            spanGaps: true,
            value: legendValue(minutes),
          },
          {
            label: `${teamName(team)} p50`,
            stroke: PALETTE[index % PALETTE.length],
            dash: [6, 4],
            spanGaps: true,
            value: legendValue(minutes),
          },
        ]),
      ],
      axes: [day.axis, { label: 'Queue wait (min)', size: 70 }],
    },
    [
      data.timeline.map((bucket) => dayTime(formatDate(bucket.bucket_start))),
      ...teams.flatMap((team) => [perDay(team, 'p95_seconds'), perDay(team, 'p50_seconds')]),
    ],
  );
}

/**
 * The clusters the caller's workloads ran on in the last 30 days. With two or more, the selector
 * shows; a service that cannot group by cluster (400) leaves the page on all clusters.
 */
async function loadClusters(): Promise<void> {
  let clusters: string[] = [];
  try {
    const { data } = await api<{ grouped: { cluster_id: string | null }[] }>(
      '/v1/workloads/stats?time_range=last_30_days&group_by=cluster_id',
    );
    clusters = data.grouped.flatMap((group) => (group.cluster_id ? [group.cluster_id] : [])).sort();
  } catch (error) {
    if (!(error instanceof ApiFailure && error.status === 400)) throw error;
  }
  if (!clusters.includes(selectedCluster())) sessionStorage.removeItem(CLUSTER_KEY);
  const select = byId<HTMLSelectElement>('cluster');
  select.replaceChildren(new Option('All clusters', ''), ...clusters.map((id) => new Option(id, id)));
  select.value = selectedCluster();
  byId('scope').hidden = clusters.length < 2;
}

function clearSeries(): void {
  charts.get('series-chart')?.destroy();
  charts.delete('series-chart');
  byId('series-title').hidden = true;
}

/**
 * What `gpucap alerts` found firing in the token's scope, above the panels; hidden when nothing
 * fires.
 */
async function loadAlerts(): Promise<void> {
  const { data } = await api<FiringAlert[]>('/v1/alerts');
  byId('alerts').hidden = data.length === 0;
  byId('alerts-list').replaceChildren(
    ...data.map((alert) => {
      const item = document.createElement('li');
      const severity = alert.labels.severity ?? 'warning';
      item.className = `alert alert-${severity}`;
      item.dataset.alertname = alert.alertname;
      const badge = Object.assign(document.createElement('span'), {
        className: 'badge',
        textContent: severity,
      });
      const summary = Object.assign(document.createElement('strong'), {
        textContent: alert.annotations.summary ?? alert.alertname,
      });
      const since = Object.assign(document.createElement('span'), {
        className: 'since',
        textContent: `since ${formatDate(alert.starts_at)}`,
      });
      item.append(badge, ' ', summary, ' ', since);
      if (alert.annotations.description) item.title = alert.annotations.description;
      return item;
    }),
  );
}

async function loadPanels(): Promise<void> {
  await loadCapacity();
  await Promise.all([loadIdle(), loadStats(), loadWorkloads(), loadQueueWait()]);
}

/** Runs `work`; an API failure shows its message. Answers for a view since left change nothing. */
async function guarded(work: () => Promise<void>): Promise<'done' | 'failed' | 'superseded'> {
  try {
    await work();
    return 'done';
  } catch (error) {
    if (error instanceof Superseded) return 'superseded';
    // A fault of the page itself, not of the API: the console keeps what happened.
    if (!(error instanceof ApiFailure)) console.error(error);
    showMessage(error instanceof ApiFailure ? error.message : 'The dashboard could not reach the API.');
    return 'failed';
  }
}

/** Loads every panel for a new view: `discover` also asks again which clusters there are. */
async function show(discover = true): Promise<void> {
  view += 1;
  showMessage(null);
  clearSeries();
  const panels = byId('panels');
  panels.hidden = false;
  document.body.dataset.state = 'loading';
  const outcome = await guarded(async () => {
    // Alerts concern every cluster: choosing one changes no alert, so only a new view asks again.
    if (discover) await Promise.all([loadClusters(), loadAlerts()]);
    await loadPanels();
  });
  if (outcome === 'superseded') return;
  panels.hidden = outcome === 'failed';
  document.body.dataset.state = outcome === 'done' ? 'loaded' : 'error';
  document.body.dataset.cluster = selectedCluster();
}

function rememberOrganization(organization: string): void {
  const recent = JSON.parse(sessionStorage.getItem(RECENT_KEY) ?? '[]') as string[];
  const updated = [organization, ...recent.filter((id) => id !== organization)].slice(0, 8);
  sessionStorage.setItem(RECENT_KEY, JSON.stringify(updated));
  byId('organizations').replaceChildren(
    ...updated.map((id) => Object.assign(document.createElement('option'), { value: id })),
  );
}

function start(): void {
  const form = byId<HTMLFormElement>('connect');
  const tokenInput = byId<HTMLInputElement>('token');
  const organizationInput = byId<HTMLInputElement>('organization');
  const stored = credentials();
  tokenInput.value = stored.token;
  organizationInput.value = stored.organization || 'org-demo';
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    sessionStorage.setItem(ORGANIZATION_KEY, organizationInput.value.trim());
    rememberOrganization(organizationInput.value.trim());
    void show();
  });
  byId('forget').addEventListener('click', () => {
    view += 1;
    sessionStorage.removeItem(TOKEN_KEY);
    tokenInput.value = '';
    byId('panels').hidden = true;
  });
  byId('stats-range').addEventListener('change', () => void guarded(loadStats));
  byId('queue-range').addEventListener('change', () => void guarded(loadQueueWait));
  byId('workloads-status').addEventListener('change', () => void guarded(() => loadWorkloads()));
  byId('workloads-more').addEventListener('click', () => void guarded(() => loadWorkloads(true)));
  byId<HTMLSelectElement>('cluster').addEventListener('change', (event) => {
    sessionStorage.setItem(CLUSTER_KEY, (event.target as HTMLSelectElement).value);
    void show(false);
  });
  if (stored.token && stored.organization) void show();
}

start();
