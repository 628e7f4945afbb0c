import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../support/import-fixture';
import type { SeriesData } from './prometheus-harness';

const FIXTURES = join(PROJECT_ROOT, 'test/fixtures/sync');
const MINUTE = 60;

/**
 * Fixture documents hold times relative to the test's start as `{{iso:-180m}}` (RFC 3339, as the API
 * server writes them) and `"{{epoch:-120m}}"` (Unix seconds, as sacct writes them).
 */
export function fixture<T>(name: string, base: number): T {
  const text = readFileSync(join(FIXTURES, name), 'utf8')
    .replace(/\{\{iso:(-?\d+)m\}\}/g, (_, minutes: string) =>
      new Date((base + Number(minutes) * MINUTE) * 1000).toISOString().replace('.000Z', 'Z'),
    )
    .replace(/"\{\{epoch:(-?\d+)m\}\}"/g, (_, minutes: string) => String(base + Number(minutes) * MINUTE));
  return JSON.parse(text) as T;
}

export function writeFixture(name: string, base: number, file: string): void {
  writeFileSync(file, JSON.stringify(fixture(name, base)));
}

/** Minute marks from `from` to `to` minutes relative to base (inclusive), as Unix seconds. */
export function minutes(base: number, from: number, to: number): number[] {
  const times: number[] = [];
  for (let minute = from; minute <= to; minute += 1) times.push(base + minute * MINUTE);
  return times;
}

export interface GpuSeries {
  labels: Record<string, string>;
  utilization?: (index: number) => number;
  engineActive?: (index: number) => number;
  used: number;
  free: number;
  power: number;
  temperature: (index: number) => number;
}

/** The DCGM exporter series of one GPU over the given times. */
export function dcgmSeries(gpu: GpuSeries, times: number[]): SeriesData[] {
  const points = (value: (index: number) => number) =>
    times.map((time, index) => [time, value(index)] as [number, number]);
  const series: SeriesData[] = [];
  const add = (name: string, value: (index: number) => number) =>
    series.push({ name, labels: gpu.labels, points: points(value) });
  if (gpu.utilization) add('DCGM_FI_DEV_GPU_UTIL', gpu.utilization);
  if (gpu.engineActive) add('DCGM_FI_PROF_GR_ENGINE_ACTIVE', gpu.engineActive);
  add('DCGM_FI_DEV_FB_USED', () => gpu.used);
  add('DCGM_FI_DEV_FB_FREE', () => gpu.free);
  add('DCGM_FI_DEV_POWER_USAGE', () => gpu.power);
  add('DCGM_FI_DEV_GPU_TEMP', gpu.temperature);
  return series;
}

export function mean(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

export function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
