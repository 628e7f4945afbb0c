import type { MetricSampleRow } from '../import/import-sections';
import { DEMO_UTC_OFFSET_HOURS } from './demo-organization';
import { clamp, mixSeed, mulberry32, normal, round2 } from './demo-random';
import type { DemoWorkload } from './demo-workloads';

export const SAMPLE_INTERVAL_MS = 30_000;
const HOUR = 3_600_000;

/** Sample instants of a run on the 30 s grid, the last `cap` of them. */
export function sampleSlots(
  run: { start: number; end: number },
  cap: number,
): { first: number; count: number } {
  const first = Math.ceil(run.start / SAMPLE_INTERVAL_MS) * SAMPLE_INTERVAL_MS;
  if (first > run.end) return { first, count: 0 };
  const all = Math.floor((run.end - first) / SAMPLE_INTERVAL_MS) + 1;
  const count = Math.min(all, cap);
  return { first: first + (all - count) * SAMPLE_INTERVAL_MS, count };
}

/**
 * Readings for one workload: a per-job utilization level, a daily rhythm (stronger for evaluation and
 * inference-like jobs than for training, strongest on GPU slices), idle stretches (data loading,
 * checkpoints), memory that follows utilization, power that follows utilization (summed over the
 * GPUs, or the slice's share of one) and a temperature that lags it.
 */
export function* demoSamples(workload: DemoWorkload, seed: number, cap: number): Generator<MetricSampleRow> {
  if (!workload.run) return;
  const { first, count } = sampleSlots(workload.run, cap);
  const random = mulberry32(mixSeed(seed, workload.index, 2));
  const healthcheck = workload.initiative.initiativeId === 'platform';
  const shared = workload.sharing !== null;
  // Work on GPU slices is mostly notebooks and inference: low, bursty, following the working day.
  const level = healthcheck
    ? 92
    : shared
      ? 8 + 50 * random()
      : workload.isLongTraining
        ? 70 + 25 * random()
        : 30 + 60 * random();
  const rhythm = shared ? 0.5 : workload.isLongTraining ? 0.06 : 0.3;
  const memoryBase = 20 + 35 * random();
  const { idleWatts, maxWatts } = workload.instance;
  const gpus = workload.gpuShare;
  let temperature = 36 + 4 * random();
  let idleLeft = 0;
  for (let slot = 0; slot < count; slot += 1) {
    const time = first + slot * SAMPLE_INTERVAL_MS;
    if (idleLeft === 0 && random() < 0.008) idleLeft = 4 + Math.floor(random() * 36);
    const idle = idleLeft > 0;
    if (idle) idleLeft -= 1;
    const localHour = (((time / HOUR + DEMO_UTC_OFFSET_HOURS) % 24) + 24) % 24;
    const daily = 0.5 + 0.5 * Math.sin((2 * Math.PI * (localHour - 9)) / 24);
    const utilization = idle
      ? 4 * random()
      : clamp(level * (1 - rhythm + rhythm * daily) + 4 * normal(random), 0, 100);
    const memory = clamp(memoryBase + (idle ? 5 : 0.35 * utilization) + 1.5 * normal(random), 0, 100);
    const target = 34 + 0.5 * utilization;
    temperature += 0.15 * (target - temperature) + 0.3 * normal(random);
    const power =
      gpus * (idleWatts + ((maxWatts - idleWatts) * utilization) / 100) * (0.97 + 0.06 * random());
    yield {
      organization_id: workload.row.organization_id,
      workload_id: workload.row.workload_id,
      timestamp: new Date(time),
      gpu_utilization: round2(utilization),
      memory_utilization: round2(memory),
      temperature: Math.round(temperature * 10) / 10,
      power_usage: Math.round(power * 10) / 10,
    };
  }
}
