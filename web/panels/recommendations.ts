import { api, inCluster } from '../lib/api';
import { byId, cell, figure, fillTable, row } from '../lib/dom';
import {
  formatDate,
  formatGpus,
  formatLastDay,
  formatMoney,
  formatNumber,
  type GpuHolding,
} from '../lib/format';
import { teamName } from '../lib/state';

interface Holding extends GpuHolding {
  gpu_count: number;
  gpu_share: number;
  memory_gib: number;
}

interface Recommendation {
  workload_id: string;
  name: string;
  initiative_id: string;
  gpu_model: string;
  current: Holding;
  recommended: Holding;
  evidence: { samples: number; coverage: number; p95_gpu_utilization: number; p99_memory_used_gib: number };
  risk: number;
  gpu_hours_saved: number;
  cost_saved: string | null;
}

interface TeamSavings {
  initiative_id: string;
  recommendations: number;
  gpu_hours_saved: number;
  cost_saved: string | null;
  unpriced_gpu_hours_saved: number;
}

interface Recommendations {
  range: { start: string; end: string };
  recommendations: Recommendation[];
}

/** Seven days, so each figure of the range is one week's. */
const RANGE = 'last_7_days';
const SHOWN = 10;

/** The devices in the GPU's own terms: "1 × H100 80GB" for whole GPUs, "1 × 1g.10gb" for MIG slices. */
function devices(holding: Holding, model: string): string {
  const sharing = holding.gpu_sharing;
  return `${holding.gpu_count} × ${sharing?.mode === 'mig' ? sharing.profile : model}`;
}

/**
 * The workloads that held more GPU than their samples show they needed over the last 7 days, those
 * that would have saved the most GPU-hours first: what they hold, what would have been enough, the
 * evidence and the risk behind that, and what it would have saved in the week.
 */
export async function loadRecommendations(): Promise<void> {
  const { data, metadata } = await api<Recommendations>(
    inCluster(`/v1/recommendations?time_range=${RANGE}&limit=${SHOWN}`),
  );
  const currency = metadata?.currency ?? null;
  const { total_count: total = 0, totals_by_initiative: teams = [] } = (metadata ?? {}) as {
    total_count?: number;
    totals_by_initiative?: TeamSavings[];
  };
  byId('recommendations-period').textContent =
    `last 7 days, ${formatDate(data.range.start)} – ${formatLastDay(data.range.end)}`;
  byId('recommendations-summary').replaceChildren(...summary(total, teams, currency));
  const rows = data.recommendations.map((item) => {
    const change = cell(
      `${devices(item.current, item.gpu_model)} → ${devices(item.recommended, item.gpu_model)}`,
      item.recommended.gpu_share,
    );
    change.dataset.current = String(item.current.gpu_share);
    change.title = `${formatGpus(item.current.gpu_share)} → ${formatGpus(item.recommended.gpu_share)}`;
    const coverage = cell(formatNumber(item.evidence.coverage * 100), item.evidence.coverage, 'number');
    coverage.title = `${formatNumber(item.evidence.samples, 0)} samples`;
    return row(
      [
        cell(item.name, item.workload_id, 'name'),
        cell(teamName(item.initiative_id), item.initiative_id),
        change,
        cell(formatNumber(item.evidence.p95_gpu_utilization), item.evidence.p95_gpu_utilization, 'number'),
        cell(formatNumber(item.evidence.p99_memory_used_gib), item.evidence.p99_memory_used_gib, 'number'),
        coverage,
        cell(formatNumber(item.risk * 100, 2), item.risk, 'number'),
        cell(formatNumber(item.gpu_hours_saved), item.gpu_hours_saved, 'number'),
        cell(formatMoney(item.cost_saved, currency), item.cost_saved, 'number'),
      ],
      { workload: item.workload_id },
    );
  });
  fillTable(
    'recommendations-table',
    rows.length ? rows : [row([cell('Nothing could have run smaller in the last 7 days.')])],
  );
}

/** How many could run smaller and what that adds up to a week, in all and per team (most first). */
function summary(total: number, teams: TeamSavings[], currency: string | null): (string | HTMLElement)[] {
  if (total === 0) return [];
  const hours = teams.reduce((sum, team) => sum + team.gpu_hours_saved, 0);
  const largestFirst = [...teams].sort((a, b) => b.gpu_hours_saved - a.gpu_hours_saved);
  const perTeam = largestFirst.flatMap((team, index) => {
    const entry = document.createElement('span');
    entry.dataset.team = team.initiative_id;
    entry.dataset.value = String(team.gpu_hours_saved);
    entry.dataset.cost = team.cost_saved ?? '';
    // A team's cost_saved adds its priced recommendations only: the rest is said, never left out.
    const unpriced = team.unpriced_gpu_hours_saved
      ? `, ${formatNumber(team.unpriced_gpu_hours_saved)} GPU-h without a price`
      : '';
    const money = currency ? ` (${formatMoney(team.cost_saved, currency)}${unpriced})` : '';
    entry.textContent = `${teamName(team.initiative_id)} ${formatNumber(team.gpu_hours_saved)} GPU-h${money}`;
    return index === 0 ? [entry] : [', ', entry];
  });
  return [
    figure('recommendations-count', total, 'workloads', 0),
    ` ${total === 1 ? 'workload' : 'workloads'} could have run smaller, saving `,
    figure('recommendations-gpu-hours', hours, 'GPU-hours a week'),
    ` GPU-hours a week${total > SHOWN ? `; the ${SHOWN} saving most below` : ''}. By team: `,
    ...perTeam,
    '.',
  ];
}
