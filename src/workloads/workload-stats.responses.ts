import { gpuHoursOfUnitSeconds } from '../common/gpu-sharing';
import { round4 } from '../common/http/decimal';
import { idleGpuFigures, type IdleGpuJson } from '../common/idle-gpu';
import type { QueueWaitRow } from './queue-wait.queries';
import {
  costFigures,
  type CostFiguresJson,
  queueFigures,
  type QueueFiguresJson,
  queueRowsByGroup,
} from './queue-wait.responses';
import type { StatsGroupBy, StatsRow } from './workload-stats.queries';

/** Rows of workload-stats.queries.ts shaped into the statistics' JSON. */

/** A set's energy (src/rollups/workload-energy/), as the statistics' own row carries it. */
export type EnergyFiguresJson = Pick<
  StatsRow,
  'total_energy_kwh' | 'total_carbon_kg' | 'uncovered_energy_kwh'
>;

/** The energy figures of one set (absent: the set is empty). */
export function energyFigures(row: StatsRow | undefined): EnergyFiguresJson {
  return {
    total_energy_kwh: row?.total_energy_kwh ?? 0,
    total_carbon_kg: row?.total_carbon_kg ?? 0,
    uncovered_energy_kwh: row?.uncovered_energy_kwh ?? 0,
  };
}

export interface StatsSummaryJson extends IdleGpuJson, QueueFiguresJson, CostFiguresJson, EnergyFiguresJson {
  total_workloads: number;
  total_gpu_hours: number;
  average_duration_seconds: number | null;
  success_rate: number | null;
}

export type StatsGroupJson = Record<string, string | number | null | object>;

export interface StatsJson {
  summary: StatsSummaryJson;
  grouped: StatsGroupJson[];
}

export function successRate(row: StatsRow): number | null {
  const decided = row.completed_count + row.failed_count;
  return decided === 0 ? null : round4(row.completed_count / decided);
}

/** One `grouped[]` entry, in the summary and in each timeline bucket alike. */
export function toStatsGroup(
  row: StatsRow,
  groupBy: StatsGroupBy,
  queue: Map<string | null, QueueWaitRow>,
  minorUnits: number | null,
): StatsGroupJson {
  return {
    [groupBy]: row.group_key,
    workload_count: row.workload_count,
    gpu_hours: round4(gpuHoursOfUnitSeconds(row.gpu_seconds)),
    ...costFigures(row, minorUnits),
    ...energyFigures(row),
    success_rate: successRate(row),
    ...idleGpuFigures(row),
    ...queueFigures(queue.get(row.group_key)),
  };
}

export function toWorkloadStats(
  rows: StatsRow[],
  groupBy: StatsGroupBy | undefined,
  queueRows: QueueWaitRow[],
  minorUnits: number | null,
): StatsJson {
  const queue = queueRowsByGroup(queueRows.filter((row) => row.bucket_index === null));
  const summaryRow = rows.find((row) => row.is_summary);
  const summary: StatsSummaryJson = summaryRow
    ? {
        total_workloads: summaryRow.workload_count,
        total_gpu_hours: round4(gpuHoursOfUnitSeconds(summaryRow.gpu_seconds)),
        ...costFigures(summaryRow, minorUnits),
        ...energyFigures(summaryRow),
        average_duration_seconds:
          summaryRow.finished_count === 0
            ? null
            : round4(summaryRow.duration_seconds / summaryRow.finished_count),
        success_rate: successRate(summaryRow),
        ...idleGpuFigures(summaryRow),
        ...queueFigures(queue.get(null)),
      }
    : {
        total_workloads: 0,
        total_gpu_hours: 0,
        ...costFigures(undefined, minorUnits),
        ...energyFigures(undefined),
        average_duration_seconds: null,
        success_rate: null,
        ...idleGpuFigures({ sampled_gpu_seconds: 0, busy_gpu_seconds: 0 }),
        ...queueFigures(undefined),
      };
  const grouped = groupBy
    ? rows.filter((row) => !row.is_summary).map((row) => toStatsGroup(row, groupBy, queue, minorUnits))
    : [];
  return { summary, grouped };
}
