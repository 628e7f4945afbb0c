import { createHash } from 'node:crypto';
import type { CapacityReportDto } from '../capacity/dto/capacity-report.dto';
import type { AlertRules } from './alerts-config';
import { GPU_SHARE_UNITS } from '../common/gpu-sharing';
import { round4 } from '../common/http/decimal';
import type { Advice, Holding } from '../recommendations/rightsizing';
import type { WorkloadEvidenceRow } from '../recommendations/rightsizing.queries';

/** One alert as Alertmanager identifies it (its label set) with what a person reads (annotations). */
export interface EvaluatedAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The team it concerns, which decides who sees it in GET /v1/alerts; null for a pool or a source. */
  initiativeId: string | null;
}

/** A running workload whose GPUs averaged at most the idle threshold over the rule's window. */
export interface IdleWorkloadRow {
  initiative_id: string;
  workload_id: string;
  submitted_by: string;
  gpu_count: number;
  instance_type: string;
  average_utilization: number;
  sample_count: number;
}

/** A sync source (per cluster; `''` is the config's top-level cluster) and its last successful run. */
export interface SyncSourceRow {
  cluster_id: string;
  source: string;
  updated_at: Date;
}

/** A running workload and its advice over the last day (src/common/rightsizing.ts). */
export interface AdvisedWorkload {
  row: WorkloadEvidenceRow;
  advice: Advice;
}

export interface EvaluationInput {
  organizationId: string;
  rules: AlertRules;
  capacity: CapacityReportDto;
  idle: IdleWorkloadRow[];
  advised: AdvisedWorkload[];
  staleSources: SyncSourceRow[];
}

type BudgetEntry = {
  kind: 'pool' | 'initiative';
  id: string;
  name: string;
  allocated_gpu_hours: number;
  used_gpu_hours: number;
  remaining_gpu_hours: number;
  burn_rate_gpu_hours_per_day: number;
  projected_exhaustion_date: string | null;
  budget_status: string;
};

/** Every alert whose condition holds now, from the figures GET /v1/capacity answers for an ORG_ADMIN. */
export function evaluateAlerts(input: EvaluationInput): EvaluatedAlert[] {
  const { organizationId, rules, capacity } = input;
  const entries: BudgetEntry[] = [
    ...capacity.pools.map((pool) => ({ kind: 'pool' as const, id: pool.pool_id, ...pool })),
    ...capacity.initiatives.map((initiative) => ({
      kind: 'initiative' as const,
      id: initiative.initiative_id,
      ...initiative,
    })),
  ];
  const period = `${capacity.period.start.slice(0, 10)} to ${capacity.period.end.slice(0, 10)}`;
  const alerts: EvaluatedAlert[] = [];
  for (const entry of entries) {
    const crossed = thresholdCrossed(entry, rules);
    if (crossed) alerts.push(budgetAlert(organizationId, entry, crossed, period));
    if (rules.exhaustionForecast && entry.budget_status === 'at_risk' && entry.projected_exhaustion_date) {
      alerts.push(forecastAlert(organizationId, entry, capacity.period.end));
    }
  }
  if (rules.idleWorkload) {
    for (const row of input.idle) alerts.push(idleAlert(organizationId, row, rules.idleWorkload));
  }
  if (rules.oversizedWorkload) {
    for (const workload of input.advised) {
      const perDay = (workload.advice.saved_units / GPU_SHARE_UNITS) * 24;
      if (perDay >= rules.oversizedWorkload.minGpuHoursSavedPerDay)
        alerts.push(oversizedAlert(organizationId, workload, perDay));
    }
  }
  if (rules.syncStaleMinutes !== null) {
    for (const row of input.staleSources)
      alerts.push(staleAlert(organizationId, row, rules.syncStaleMinutes));
  }
  return alerts;
}

/** Alertmanager's identity of an alert is its label set: the same hash whatever the label order. */
export function fingerprintOf(labels: Record<string, string>): string {
  const sorted = Object.keys(labels)
    .sort()
    .map((key) => [key, labels[key]]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 32);
}

/** The highest configured threshold the share used has reached, from the figures as shown. */
function thresholdCrossed(entry: BudgetEntry, rules: AlertRules) {
  if (entry.allocated_gpu_hours <= 0) return null;
  const share = entry.used_gpu_hours / entry.allocated_gpu_hours;
  return rules.budgetThresholds.filter((threshold) => share >= threshold.value).at(-1) ?? null;
}

function identity(organizationId: string, entry: BudgetEntry): Record<string, string> {
  return {
    organization_id: organizationId,
    kind: entry.kind,
    [entry.kind === 'pool' ? 'pool_id' : 'initiative_id']: entry.id,
  };
}

function subject(entry: BudgetEntry): string {
  return entry.kind === 'pool' ? `Pool '${entry.id}'` : `Team '${entry.id}'`;
}

function budgetAlert(
  organizationId: string,
  entry: BudgetEntry,
  threshold: { value: number; label: string },
  period: string,
): EvaluatedAlert {
  const percent = percentOf(entry.used_gpu_hours / entry.allocated_gpu_hours);
  return {
    labels: {
      alertname: 'GpuBudgetThresholdCrossed',
      ...identity(organizationId, entry),
      threshold: threshold.label,
      severity: threshold.value >= 1 ? 'critical' : 'warning',
    },
    annotations: {
      summary: `${subject(entry)} has used ${percent} % of its GPU-hour budget`,
      description:
        `${subject(entry)} (${entry.name}) has used ${entry.used_gpu_hours} of its ` +
        `${entry.allocated_gpu_hours} allocated GPU hours (${percent} %, threshold ${threshold.label}) ` +
        `in the budget period ${period}; ${entry.remaining_gpu_hours} GPU hours remain.`,
    },
    initiativeId: entry.kind === 'initiative' ? entry.id : null,
  };
}

function forecastAlert(organizationId: string, entry: BudgetEntry, periodEnd: string): EvaluatedAlert {
  const date = entry.projected_exhaustion_date!;
  return {
    labels: {
      alertname: 'GpuBudgetExhaustionForecast',
      ...identity(organizationId, entry),
      severity: 'warning',
    },
    annotations: {
      summary: `${subject(entry)} will exhaust its GPU-hour budget on ${date.slice(0, 10)}, before the period ends`,
      description:
        `${subject(entry)} (${entry.name}) burns ${entry.burn_rate_gpu_hours_per_day} GPU hours per day ` +
        `(the last 7 days): its remaining ${entry.remaining_gpu_hours} of ${entry.allocated_gpu_hours} ` +
        `GPU hours run out at ${date}, before the budget period ends at ${periodEnd}.`,
      projected_exhaustion_date: date,
    },
    initiativeId: entry.kind === 'initiative' ? entry.id : null,
  };
}

function idleAlert(
  organizationId: string,
  row: IdleWorkloadRow,
  rule: { maxUtilization: number; forMinutes: number },
): EvaluatedAlert {
  const average = Math.round(row.average_utilization * 10) / 10;
  return {
    labels: {
      alertname: 'GpuWorkloadIdle',
      organization_id: organizationId,
      initiative_id: row.initiative_id,
      workload_id: row.workload_id,
      submitted_by: row.submitted_by,
      severity: 'warning',
    },
    annotations: {
      summary: `Workload '${row.workload_id}' of team '${row.initiative_id}' averaged ${average} % GPU utilization for ${rule.forMinutes} minutes`,
      description:
        `Workload '${row.workload_id}' (team '${row.initiative_id}', submitted by ${row.submitted_by}) ` +
        `holds ${row.gpu_count} GPU(s) of ${row.instance_type} and averaged ${average} % GPU utilization ` +
        `over the last ${rule.forMinutes} minutes (${row.sample_count} samples; idle at or below ` +
        `${rule.maxUtilization} %).`,
    },
    initiativeId: row.initiative_id,
  };
}

/** The recommendation in words: the shrink, the evidence it rests on and its risk. */
function oversizedAlert(
  organizationId: string,
  { row, advice }: AdvisedWorkload,
  perDay: number,
): EvaluatedAlert {
  const current = holdingText(advice.current, advice.gpus.gpu_model);
  const recommended = holdingText(advice.recommended, advice.gpus.gpu_model);
  const saved = round4(perDay);
  return {
    labels: {
      alertname: 'GpuWorkloadOversized',
      organization_id: organizationId,
      initiative_id: row.initiative_id,
      workload_id: row.workload_id,
      submitted_by: row.submitted_by,
      severity: 'info',
    },
    annotations: {
      summary: `Workload '${row.workload_id}' of team '${row.initiative_id}' could run on ${recommended} instead of ${current}, saving ${saved} GPU-hours a day`,
      description:
        `Workload '${row.workload_id}' (team '${row.initiative_id}', submitted by ${row.submitted_by}) on ` +
        `${row.instance_type} used at most ${tenth(advice.p95_gpu_utilization)} % GPU utilization (p95) and ` +
        `${tenth(advice.p99_memory_used_gib)} GiB of its ${tenth(advice.current.memory_gib)} GiB of GPU memory (p99) ` +
        `over the last 24 hours (${advice.samples} samples covering ${tenth(advice.coverage * 100)} % of its run ` +
        `there). ${recommended} (${tenth(advice.recommended.memory_gib)} GiB) covers both with 20 % headroom; ` +
        `${tenth(advice.risk * 100)} % of the samples used more memory than that.`,
      current,
      recommended,
      gpu_hours_saved_per_day: String(saved),
      risk: String(round4(advice.risk)),
    },
    initiativeId: row.initiative_id,
  };
}

function holdingText(holding: Holding, gpuModel: string): string {
  return holding.gpu_sharing?.mode === 'mig'
    ? `${holding.gpu_count} × MIG ${holding.gpu_sharing.profile}`
    : `${holding.gpu_count} × ${gpuModel}`;
}

function tenth(value: number): number {
  return Math.round(value * 10) / 10;
}

/**
 * Worded from the last success and the rule, not from the minutes since: the annotations stay the
 * same while the source stays stale, so a cycle rewrites nothing.
 */
function staleAlert(organizationId: string, row: SyncSourceRow, staleMinutes: number): EvaluatedAlert {
  const where = row.cluster_id === '' ? '' : ` of cluster '${row.cluster_id}'`;
  return {
    labels: {
      alertname: 'GpucapSyncStale',
      organization_id: organizationId,
      source: row.source,
      ...(row.cluster_id === '' ? {} : { cluster_id: row.cluster_id }),
      severity: 'warning',
    },
    annotations: {
      summary: `Sync source '${row.source}'${where} has not succeeded for more than ${staleMinutes} minutes`,
      description:
        `gpucap sync last read '${row.source}'${where} successfully at ${row.updated_at.toISOString()}, ` +
        `more than ${staleMinutes} minutes ago: the figures of organization '${organizationId}' may be out of date.`,
    },
    initiativeId: null,
  };
}

function percentOf(share: number): number {
  return Math.round(share * 1000) / 10;
}
