import { derivedGpuShare, type GpuSharing } from '../common/gpu-sharing';
import type { WorkloadRow } from '../import/import-sections';
import {
  DEMO_ORGANIZATION_ID,
  DEMO_UTC_OFFSET_HOURS,
  DemoInitiative,
  demoMembers,
  INITIATIVES,
  INSTANCE_TYPES,
  InstanceType,
} from './demo-organization';
import { integerBetween, logNormal, mixSeed, mulberry32, pickWeighted, Random } from './demo-random';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
export const HISTORY_DAYS = 182;
const MAX_RUN = 30 * DAY;
/** The newest workloads arrive over these last hours up to `now`, busy whatever the hour. */
const LIVE_WINDOW = 2 * HOUR;
/**
 * The longest a workload waits for its GPUs: a queue of days would leave work pending since the day
 * before, which no platform team lets stand.
 */
const MAX_QUEUE = 4 * HOUR;
/** Small profiles are the common ask: most slice work is a notebook or a light inference server. */
const MIG_PROFILE_WEIGHTS = [6, 2.5, 1.5];

/** A generated workload plus what samples need to know about its run. */
export interface DemoWorkload {
  index: number;
  row: WorkloadRow;
  initiative: DemoInitiative;
  instance: InstanceType;
  isLongTraining: boolean;
  /** How the workload's devices share their GPUs (null: whole GPUs), and the physical GPUs it holds. */
  sharing: GpuSharing | null;
  gpuShare: number;
  /** Start and end (now while running) of the run; null when it never started. */
  run: { start: number; end: number } | null;
}

export interface WorkloadPlan {
  seed: number;
  count: number;
  now: number;
}

const submittersByInitiative = new Map(
  INITIATIVES.map((initiative) => [
    initiative.initiativeId,
    demoMembers()
      .filter((member) => member.initiativeIds.includes(initiative.initiativeId))
      .map((member) => member.subject),
  ]),
);

export function demoWorkloadId(index: number): string {
  return `wl-${String(index).padStart(7, '0')}`;
}

/**
 * Workload `index` of the plan, computed on its own (its own random stream), so the samples pass can
 * regenerate any workload without holding a million of them in memory. Submission times grow with
 * the index, so the highest indexes are the most recent workloads.
 */
export function demoWorkload(plan: WorkloadPlan, index: number): DemoWorkload {
  const random = mulberry32(mixSeed(plan.seed, index, 1));
  const initiative = pickWeighted(random, INITIATIVES, (item) => item.weight);
  const instance =
    INSTANCE_TYPES[
      pickWeighted(
        random,
        Object.keys(initiative.instanceWeights),
        (name) => initiative.instanceWeights[name],
      )
    ];
  const nodes =
    1 +
    pickWeighted(
      random,
      instance.nodeWeights.map((_, i) => i),
      (i) => instance.nodeWeights[i],
    );
  const slice = nodes === 1 ? gpuSlice(plan, index, instance) : null;
  // On a slice, "long" is a notebook or an inference server left up for a day or more.
  const isLongTraining = random() < (slice ? 0.25 : instance.gpusPerNode === 8 ? 0.16 : 0.06);
  const submitters = submittersByInitiative.get(initiative.initiativeId) ?? [];
  const submittedAt = submissionTime(plan, index, random());
  const times = lifecycle(plan, index, random, submittedAt, isLongTraining, instance);
  const jobNames = slice ? initiative.sharedJobNames : initiative.jobNames;
  const jobName = jobNames[integerBetween(random, 0, jobNames.length - 1)];
  const gpuCount = slice ? slice.devices : instance.gpusPerNode * nodes;
  const sharing = slice?.sharing ?? null;
  const gpuShare = derivedGpuShare(gpuCount, sharing) ?? gpuCount;
  const namespaceSuffix = ['', '', '-research', '-batch'][integerBetween(random, 0, 3)];
  const row: WorkloadRow = {
    organization_id: DEMO_ORGANIZATION_ID,
    workload_id: demoWorkloadId(index),
    initiative_id: initiative.initiativeId,
    name: `${jobName}-${integerBetween(random, 1, 400)}`,
    status: times.status,
    submitted_by: submitters[integerBetween(random, 0, submitters.length - 1)],
    instance_type: instance.name,
    gpu_count: gpuCount,
    gpu_sharing: sharing,
    gpu_share: gpuShare,
    is_managed: random() < 0.85,
    cluster_id: instance.clusterId,
    namespace: `${initiative.initiativeId}${namespaceSuffix}`,
    submitted_at: new Date(submittedAt),
    started_at: times.startedAt === null ? null : new Date(times.startedAt),
    completed_at: times.completedAt === null ? null : new Date(times.completedAt),
    exit_code: times.exitCode,
  };
  const run =
    times.startedAt === null ? null : { start: times.startedAt, end: times.completedAt ?? plan.now };
  return { index, row, initiative, instance, isLongTraining, sharing, gpuShare, run };
}

/**
 * Whether a single-node workload lands on a node that slices its GPUs, and on how many devices. Drawn
 * from a stream of its own, so the draws behind the workload's other fields stay in step.
 */
function gpuSlice(
  plan: WorkloadPlan,
  index: number,
  instance: InstanceType,
): { sharing: GpuSharing; devices: number } | null {
  if (!instance.sharing) return null;
  const random = mulberry32(mixSeed(plan.seed, index, 3));
  if (random() >= instance.sharing.nodeShare) return null;
  const devices = instance.sharing.devices;
  if (devices.mode !== 'mig') return { sharing: { ...devices }, devices: random() < 0.8 ? 1 : 2 };
  const size = pickWeighted(random, [0, 1, 2], (i) => MIG_PROFILE_WEIGHTS[i]);
  const profile = devices.profiles[size];
  // A second small instance is common (two notebooks, a model and its evaluator); large ones come alone.
  const second = size === 0 ? 0.25 : size === 1 ? 0.15 : 0;
  return { sharing: { mode: 'mig', profile }, devices: random() < second ? 2 : 1 };
}

interface Lifecycle {
  status: WorkloadRow['status'];
  startedAt: number | null;
  completedAt: number | null;
  exitCode: number | null;
}

function lifecycle(
  plan: WorkloadPlan,
  index: number,
  random: Random,
  submittedAt: number,
  isLongTraining: boolean,
  instance: InstanceType,
): Lifecycle {
  const pending: Lifecycle = { status: 'pending', startedAt: null, completedAt: null, exitCode: null };
  // The newest few are still queued, so the demo always shows pending work.
  if (index >= plan.count - Math.max(3, Math.round(plan.count * 0.0005))) return pending;
  const contended = instance.name === 'p5.48xlarge' ? 4 : 1;
  const queued = Math.min(logNormal(random, 90_000 * contended, 1.3), MAX_QUEUE);
  const outcome = random();
  if (outcome < 0.02) {
    const cancelledAt = submittedAt + Math.min(logNormal(random, 20 * MINUTE, 1), 3 * DAY);
    return cancelledAt <= plan.now
      ? { status: 'cancelled', startedAt: null, completedAt: Math.round(cancelledAt), exitCode: null }
      : pending;
  }
  const startedAt = Math.round(submittedAt + queued);
  if (startedAt > plan.now) return pending;
  const planned = isLongTraining ? logNormal(random, 36 * HOUR, 0.9) : logNormal(random, 35 * MINUTE, 1.3);
  const duration = Math.min(Math.max(planned, MINUTE), MAX_RUN);
  const cut = 0.05 + 0.85 * random();
  let ending: Omit<Lifecycle, 'startedAt'>;
  if (outcome < 0.09)
    ending = {
      status: 'failed',
      completedAt: startedAt + duration * cut,
      exitCode: [1, 137, 139, 2][index % 4],
    };
  else if (outcome < 0.12)
    ending = {
      status: 'cancelled',
      completedAt: startedAt + duration * cut,
      exitCode: index % 2 ? 143 : null,
    };
  else ending = { status: 'completed', completedAt: startedAt + duration, exitCode: 0 };
  const completedAt = Math.round(ending.completedAt as number);
  if (completedAt > plan.now) return { status: 'running', startedAt, completedAt: null, exitCode: null };
  return { ...ending, startedAt, completedAt };
}

/** Hour-of-week weights in local time: busy working days, quiet nights and weekends. */
const WEEK_CDF = (() => {
  const weights: number[] = [];
  for (let hour = 0; hour < 168; hour += 1) {
    const day = Math.floor(hour / 24);
    const hourOfDay = hour % 24;
    const weekday = day < 5;
    const working = hourOfDay >= 9 && hourOfDay < 18;
    const shoulder = (hourOfDay >= 7 && hourOfDay < 9) || (hourOfDay >= 18 && hourOfDay < 22);
    weights.push(weekday ? (working ? 4 : shoulder ? 2 : 0.6) : working ? 1 : 0.4);
  }
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  let running = 0;
  return weights.map((weight) => (running += weight / total));
})();
/** A Monday 00:00 local time (1970-01-05 was a Monday). */
const LOCAL_MONDAY = 4 * DAY - DEMO_UTC_OFFSET_HOURS * HOUR;

/** How many of the newest workloads arrive in the live window. */
function liveWorkloads(count: number): number {
  return Math.min(count, Math.max(12, Math.round(count * 0.002)));
}

/**
 * Spreads workloads evenly over the history, then bends each week so that more land on working
 * hours. The bend is monotonic within a week, so submission time still grows with the index. The
 * newest few arrive evenly over the live window up to `now`, so the demo is busy the minute it starts.
 */
function submissionTime(plan: WorkloadPlan, index: number, jitter: number): number {
  const live = liveWorkloads(plan.count);
  const end = plan.now - LIVE_WINDOW;
  const first = plan.count - live;
  if (index >= first) return Math.round(end + ((index - first + jitter) / live) * LIVE_WINDOW);
  const start = end - HISTORY_DAYS * DAY;
  const linear = start + ((index + jitter) / first) * (end - start);
  const weekStart = linear - ((((linear - LOCAL_MONDAY) % WEEK) + WEEK) % WEEK);
  const fraction = (linear - weekStart) / WEEK;
  let hour = 0;
  while (hour < 167 && WEEK_CDF[hour] < fraction) hour += 1;
  const below = hour === 0 ? 0 : WEEK_CDF[hour - 1];
  const within = (fraction - below) / (WEEK_CDF[hour] - below);
  const bent = weekStart + (hour + within) * HOUR;
  return Math.round(Math.min(Math.max(bent, start), end));
}
