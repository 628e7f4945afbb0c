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
import type { StatsGroupBy } from './workload-stats.queries';
import {
  energyFigures,
  type EnergyFiguresJson,
  type StatsGroupJson,
  successRate,
  toStatsGroup,
} from './workload-stats.responses';
import type { TimelineRow } from './workload-timeline.queries';

export interface TimelineBucketJson
  extends IdleGpuJson, QueueFiguresJson, CostFiguresJson, EnergyFiguresJson {
  bucket_start: string;
  bucket_end: string;
  total_workloads: number;
  total_gpu_hours: number;
  success_rate: number | null;
  grouped?: StatsGroupJson[];
}

/** Every bucket, empty ones with zeros; the groups of a bucket in the order of the summary's groups. */
export function toTimeline(
  rows: TimelineRow[],
  boundaries: Date[],
  groupBy: StatsGroupBy | undefined,
  queueRows: QueueWaitRow[],
  minorUnits: number | null,
): TimelineBucketJson[] {
  return boundaries.slice(0, -1).map((start, index) => {
    const inBucket = rows.filter((row) => row.bucket_index === index + 1);
    const queue = queueRowsByGroup(queueRows.filter((row) => row.bucket_index === index + 1));
    const summary = inBucket.find((row) => row.is_summary);
    const bucket: TimelineBucketJson = {
      bucket_start: start.toISOString(),
      bucket_end: boundaries[index + 1].toISOString(),
      total_workloads: summary?.workload_count ?? 0,
      total_gpu_hours: round4(gpuHoursOfUnitSeconds(summary?.gpu_seconds ?? 0)),
      ...costFigures(summary, minorUnits),
      ...energyFigures(summary),
      success_rate: summary ? successRate(summary) : null,
      ...idleGpuFigures(summary ?? { sampled_gpu_seconds: 0, busy_gpu_seconds: 0 }),
      ...queueFigures(queue.get(null)),
    };
    if (groupBy) {
      bucket.grouped = inBucket
        .filter((row) => !row.is_summary)
        .map((row) => toStatsGroup(row, groupBy, queue, minorUnits));
    }
    return bucket;
  });
}
