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

interface Envelope<T> {
  data: T;
  metadata?: { total_count: number };
}

interface BudgetEntry {
  allocated_gpu_hours?: number;
  used_gpu_hours?: number;
  remaining_gpu_hours?: number;
  total_allocated_gpu_hours?: number;
  total_used_gpu_hours?: number;
  total_remaining_gpu_hours?: number;
  budget_status?: string;
  projected_exhaustion_date: string | null;
  daily?: { date: string; cumulative_used_gpu_hours: number; remaining_gpu_hours: number }[];
  pool_id?: string;
  initiative_id?: string;
  name?: string;
}

interface Capacity {
  summary: BudgetEntry;
  pools: BudgetEntry[];
  initiatives: BudgetEntry[];
  period: { start: string; end: string };
}

interface RankedEntry {
  workload_id: string;
  name: string;
  initiative_id: string;
  idle_gpu_hours: { avg: number };
}

interface Group {
  initiative_id: string;
  workload_count: number;
  gpu_hours: number;
  success_rate: number | null;
}

interface Stats {
  summary: { total_workloads: number; total_gpu_hours: number; success_rate: number | null };
  grouped: Group[];
  timeline: { bucket_start: string; grouped: Group[] }[];
}

class ApiFailure extends Error {}

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const charts = new Map<string, uPlot>();

function credentials() {
  return {
    token: sessionStorage.getItem(TOKEN_KEY) ?? '',
    organization: sessionStorage.getItem(ORGANIZATION_KEY) ?? '',
  };
}

async function api<T>(path: string): Promise<Envelope<T>> {
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
  if (!response.ok || !body)
    throw new ApiFailure(body?.error?.message ?? `The API answered ${response.status}`);
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

function formatPercent(value: number | null): string {
  return value === null ? '—' : `${(value * 100).toFixed(1)} %`;
}

function formatDate(iso: string | null): string {
  return iso === null ? '—' : iso.slice(0, 10);
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
  byId<HTMLTableElement>(id).tBodies[0].replaceChildren(...rows);
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
  const { data } = await api<Capacity>('/v1/capacity?interval=day');
  const summary = data.summary;
  const exhaustion = summary.projected_exhaustion_date;
  byId('capacity-summary').innerHTML = '';
  byId('capacity-summary').append(
    `Period ${formatDate(data.period.start)} to ${formatDate(data.period.end)}: `,
    figure('summary-used', summary.total_used_gpu_hours, 'used'),
    ' of ',
    figure('summary-allocated', summary.total_allocated_gpu_hours, 'allocated'),
    ' GPU-hours; ',
    figure('summary-remaining', summary.total_remaining_gpu_hours, 'remaining'),
    ` remaining; ${exhaustion ? `runs out ${formatDate(exhaustion)} at the last 7 days' rate` : 'not running out at this rate'}.`,
  );
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
          cell(formatDate(entry.projected_exhaustion_date), entry.projected_exhaustion_date),
        ],
        { kind: kind.toLowerCase(), id, status: entry.budget_status ?? '' },
      ),
    ),
  );
  drawBurnDown(summary, data.period.end);
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
  const times = days.map((day) => Date.parse(`${day.date}T12:00:00Z`) / 1000);
  const remaining = days.map((day) => day.remaining_gpu_hours);
  const projection: (number | null)[] = remaining.map(() => null);
  const exhaustion = summary.projected_exhaustion_date;
  if (exhaustion && Date.parse(exhaustion) <= Date.parse(periodEnd)) {
    projection[projection.length - 1] = remaining[remaining.length - 1];
    times.push(Date.parse(exhaustion) / 1000);
    remaining.push(null as unknown as number);
    projection.push(0);
  }
  drawChart(
    'capacity-chart',
    {
      series: [
        {},
        { label: 'Remaining GPU-h', stroke: PALETTE[0], width: 2 },
        { label: 'Projected', stroke: PALETTE[1], dash: [6, 4], spanGaps: true },
      ],
      axes: [{}, { label: 'GPU-hours', size: 70 }],
    },
    [times, remaining, projection],
  );
}

async function loadIdle(): Promise<void> {
  const { data } = await api<{ workloads: RankedEntry[] }>(
    '/v1/workloads/metrics?sort_by=idle_gpu_hours&status=running&limit=10',
  );
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
          cell(entry.initiative_id, entry.initiative_id),
          cell(formatNumber(entry.idle_gpu_hours.avg), entry.idle_gpu_hours.avg, 'number'),
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
      series: [{}, { label: 'GPU utilization %', stroke: PALETTE[2], width: 2 }],
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
  const { data } = await api<Stats>(
    `/v1/workloads/stats?time_range=${range}&group_by=initiative_id&interval=day`,
  );
  byId('stats-summary').replaceChildren(
    figure('stats-workloads', data.summary.total_workloads, 'workloads', 0),
    ' workloads, ',
    figure('stats-gpu-hours', data.summary.total_gpu_hours, 'GPU-hours'),
    ` GPU-hours, success rate ${formatPercent(data.summary.success_rate)}.`,
  );
  fillTable(
    'stats-table',
    data.grouped.map((group) =>
      row(
        [
          cell(group.initiative_id, group.initiative_id),
          cell(String(group.workload_count), group.workload_count, 'number'),
          cell(formatNumber(group.gpu_hours), group.gpu_hours, 'number'),
          cell(formatPercent(group.success_rate), group.success_rate, 'number'),
        ],
        { team: group.initiative_id },
      ),
    ),
  );
  const teams = data.grouped.map((group) => group.initiative_id);
  drawChart(
    'stats-chart',
    {
      series: [
        {},
        ...teams.map((team, index) => ({ label: team, stroke: PALETTE[index % PALETTE.length], width: 2 })),
      ],
      axes: [{}, { label: 'GPU-hours', size: 70 }],
    },
    [
      data.timeline.map((bucket) => Date.parse(bucket.bucket_start) / 1000),
      ...teams.map((team) =>
        data.timeline.map(
          (bucket) => bucket.grouped.find((group) => group.initiative_id === team)?.gpu_hours ?? 0,
        ),
      ),
    ],
  );
}

async function guarded(work: () => Promise<void>): Promise<boolean> {
  try {
    await work();
    return true;
  } catch (error) {
    showMessage(error instanceof ApiFailure ? error.message : 'The dashboard could not reach the API.');
    return false;
  }
}

async function show(): Promise<void> {
  showMessage(null);
  const panels = byId('panels');
  panels.hidden = false;
  const loaded = await guarded(async () => {
    await loadCapacity();
    await Promise.all([loadIdle(), loadStats()]);
  });
  panels.hidden = !loaded;
  document.body.dataset.state = loaded ? 'loaded' : 'error';
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
    sessionStorage.removeItem(TOKEN_KEY);
    tokenInput.value = '';
    byId('panels').hidden = true;
  });
  byId('stats-range').addEventListener('change', () => void guarded(loadStats));
  if (stored.token && stored.organization) void show();
}

start();
