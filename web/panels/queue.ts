import { api, inCluster } from '../lib/api';
import { dayAxis, dayTime, drawChart, legendValue, PALETTE } from '../lib/charts';
import { byId, cell, figure, fillTable, row } from '../lib/dom';
import { formatDate, formatGpus, formatNumber } from '../lib/format';
import { teamName } from '../lib/state';

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

/** The latest answer, so switching between p95 and the median redraws without asking again. */
let latest: QueueStats | null = null;

/**
 * How long each team waited for GPUs: the p95 (or, on demand, the median) queue wait of the workloads
 * submitted each local day (the statistics' timeline) as a line per team, and per team over the range
 * the waits and what is pending now among the workloads submitted in the range.
 */
export async function loadQueueWait(): Promise<void> {
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
          cell(formatNumber(group.queue_wait.started), group.queue_wait.started, 'number'),
          cell(formatWait(group.queue_wait.p50_seconds), group.queue_wait.p50_seconds, 'number'),
          cell(formatWait(group.queue_wait.p95_seconds), group.queue_wait.p95_seconds, 'number'),
          pendingCell(group.pending),
          cell(formatDate(group.pending.oldest_submitted_at), group.pending.oldest_submitted_at),
        ],
        { team: group.initiative_id },
      ),
    ),
  );
  latest = data;
  drawQueueWait();
}

/** How many are pending and the physical GPUs they ask for, in one cell: "2 (4.25 GPUs)". */
function pendingCell(pending: QueueFigures['pending']): HTMLTableCellElement {
  const text =
    pending.count === 0 ? '0' : `${formatNumber(pending.count)} (${formatGpus(pending.gpu_share)})`;
  const td = cell(text, pending.count, 'number');
  td.dataset.gpuShare = String(pending.gpu_share);
  return td;
}

function waitFigure(id: string, seconds: number | null): HTMLElement {
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = seconds === null ? '' : String(seconds);
  strong.textContent = formatWait(seconds);
  return strong;
}

const PERCENTILES = {
  p95_seconds: '95th percentile',
  p50_seconds: 'median',
} as const;

/** One line per team, in minutes, one point per local day: the percentile the chart's control picks. */
export function drawQueueWait(): void {
  const data = latest;
  if (!data) return;
  const percentile = byId<HTMLSelectElement>('queue-percentile').value as keyof typeof PERCENTILES;
  const teams = data.grouped.map((group) => group.initiative_id);
  const perDay = (team: string) =>
    data.timeline.map((bucket) => {
      const seconds = bucket.grouped.find((group) => group.initiative_id === team)?.queue_wait[percentile];
      return seconds === null || seconds === undefined ? null : seconds / 60;
    });
  const chart = byId('queue-chart');
  chart.dataset.days = String(data.timeline.length);
  chart.dataset.percentile = percentile;
  chart.setAttribute(
    'aria-label',
    `The ${PERCENTILES[percentile]} queue wait of each team's workloads submitted on each day, in minutes`,
  );
  const day = dayAxis();
  const minutes = (value: number) => `${formatNumber(value)} min`;
  drawChart(
    'queue-chart',
    {
      tzDate: day.tzDate,
      series: [
        day.x,
        ...teams.map((team, index) => ({
          label: teamName(team),
          stroke: PALETTE[index % PALETTE.length],
          width: 2,
          spanGaps: true,
          value: legendValue(minutes),
        })),
      ],
      axes: [day.axis, { label: `${percentile === 'p95_seconds' ? 'p95' : 'Median'} wait (min)`, size: 70 }],
    },
    [data.timeline.map((bucket) => dayTime(formatDate(bucket.bucket_start))), ...teams.map(perDay)],
  );
}
