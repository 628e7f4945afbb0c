import { GPU_SHARE_UNITS } from '../../common/gpu-sharing';
import type { RatioUnit } from '../sync-config';

/** DCGM exporter series the sync reads (field names as dcgm-exporter exports them). */
export const DCGM_METRICS = {
  gpuUtil: 'DCGM_FI_DEV_GPU_UTIL',
  graphicsEngineActive: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
  framebufferUsed: 'DCGM_FI_DEV_FB_USED',
  framebufferFree: 'DCGM_FI_DEV_FB_FREE',
  power: 'DCGM_FI_DEV_POWER_USAGE',
  temperature: 'DCGM_FI_DEV_GPU_TEMP',
} as const;
export type DcgmField = keyof typeof DCGM_METRICS;

/**
 * Framebuffer values above this are bytes, not MiB: 16,777,216 MiB is 16 TiB, far beyond any GPU,
 * while any GPU in use holds more than 16 MiB. (The memory ratio does not depend on the unit when
 * used and free share one; converting keeps a pair right when two exporter versions disagree.)
 */
export const BYTES_THRESHOLD = 16_777_216;
const MIB = 1_048_576;

export interface Reading {
  gpu_utilization: number;
  memory_utilization: number;
  temperature: number;
  power_usage: number;
}

/** One GPU series as a workload holds it. */
export interface GpuDevice {
  /** The series' labels as one key: a whole GPU, a MIG instance, or a shared GPU's copy for one pod. */
  series: string;
  /** The physical GPU whose power the series reports: the series itself unless it is a MIG instance. */
  physicalGpu: string;
  /** The workload's share of that GPU through this device, in units of 1/GPU_SHARE_UNITS. */
  shareUnits: number;
}

/** A series of a GPU the workload holds whole. */
export function wholeGpu(series: string): GpuDevice {
  return { series, physicalGpu: series, shareUnits: GPU_SHARE_UNITS };
}

/** One physical GPU's draw and the workload's devices on it, each with its share in units. */
interface GpuPower {
  watts: number;
  devices: Map<string, number>;
}

interface Accumulator {
  utilSum: number;
  utilCount: number;
  engineSum: number;
  engineCount: number;
  /** Power per physical GPU: the MIG instances of one GPU each report that GPU's whole power. */
  powerByGpu: Map<string, GpuPower>;
  temperatureMax: number;
  memorySum: number;
  memoryCount: number;
}

function newAccumulator(): Accumulator {
  return {
    utilSum: 0,
    utilCount: 0,
    engineSum: 0,
    engineCount: 0,
    powerByGpu: new Map(),
    temperatureMax: -Infinity,
    memorySum: 0,
    memoryCount: 0,
  };
}

/** Percent when the config says so, or (auto) when the series goes above 1 in the window. */
export function engineActiveScale(values: number[], unit: RatioUnit): number {
  if (unit === 'percent') return 1;
  if (unit === 'ratio') return 100;
  return values.some((value) => value > 1) ? 1 : 100;
}

export function framebufferMiB(value: number): number {
  return value > BYTES_THRESHOLD ? value / MIB : value;
}

const clampPercent = (value: number) => Math.min(100, Math.max(0, value));

/**
 * The physical GPU a series reads: its own labels, except for a MIG instance (`GPU_I_ID`), whose
 * device-level fields (power, temperature) are its parent GPU's: the GPU's UUID on its host.
 */
export function physicalGpuKey(labels: Record<string, string>, seriesKey: string): string {
  if (labels.GPU_I_ID === undefined) return seriesKey;
  const host = labels.Hostname ?? labels.hostname ?? labels.instance ?? '';
  const gpu = labels.UUID ?? labels.uuid ?? labels.gpu_uuid ?? labels.gpu ?? '';
  return `${host}/${gpu}`;
}

/**
 * Per workload and timestamp, the readings of its GPUs (whole GPUs or MIG instances) combined into
 * one sample: utilization and memory utilization are the mean over its GPUs, temperature the maximum,
 * power the workload's own draw: over its physical GPUs, each GPU's draw times the workload's share of
 * it (the sum of its devices' shares there, at most the whole GPU). dcgm-exporter reports a GPU's
 * whole draw on each of its MIG instances and on each pod's copy of a shared GPU, so summing series
 * would charge that draw once per device. Where its GPUs' shares add up to more than the workload
 * holds (`heldUnits`: replicated MIG instances, whose labels name only the profile), they are scaled
 * down to it. Utilization is DCGM_FI_DEV_GPU_UTIL (percent) where the workload's GPUs export it, else
 * DCGM_FI_PROF_GR_ENGINE_ACTIVE × 100 (a 0–1 ratio; MIG instances export only this one). Memory
 * utilization is FB_USED / (FB_USED + FB_FREE) × 100 per GPU (per instance for MIG: its own memory).
 */
export class ReadingAssembler {
  private readonly byWorkload = new Map<string, Map<number, Accumulator>>();
  /** FB_USED per GPU and timestamp until that GPU's FB_FREE arrives (callers add FB_USED first). */
  private readonly used = new Map<string, Map<number, number>>();

  /** `heldUnits`: the share units each workload holds in all (its `gpu_share`); unknown: no bound. */
  constructor(private readonly heldUnits: ReadonlyMap<string, number> = new Map()) {}

  private accumulator(workloadId: string, timestamp: number): Accumulator {
    let byTime = this.byWorkload.get(workloadId);
    if (!byTime) this.byWorkload.set(workloadId, (byTime = new Map()));
    let accumulator = byTime.get(timestamp);
    if (!accumulator) byTime.set(timestamp, (accumulator = newAccumulator()));
    return accumulator;
  }

  /** One point of one GPU series of the workload, already unit-normalized. */
  add(field: DcgmField, workloadId: string, device: GpuDevice, timestamp: number, value: number): void {
    if (!Number.isFinite(value)) return;
    const gpu = device.series;
    const accumulator = this.accumulator(workloadId, timestamp);
    switch (field) {
      case 'gpuUtil':
        accumulator.utilSum += value;
        accumulator.utilCount += 1;
        break;
      case 'graphicsEngineActive':
        accumulator.engineSum += value;
        accumulator.engineCount += 1;
        break;
      case 'power': {
        // The instances of one GPU report the same draw: the last one read stands for it.
        const power = accumulator.powerByGpu.get(device.physicalGpu) ?? { watts: value, devices: new Map() };
        power.watts = value;
        power.devices.set(device.series, device.shareUnits);
        accumulator.powerByGpu.set(device.physicalGpu, power);
        break;
      }
      case 'temperature':
        accumulator.temperatureMax = Math.max(accumulator.temperatureMax, value);
        break;
      case 'framebufferUsed': {
        let byTime = this.used.get(gpu);
        if (!byTime) this.used.set(gpu, (byTime = new Map()));
        byTime.set(timestamp, value);
        break;
      }
      case 'framebufferFree': {
        const used = this.used.get(gpu)?.get(timestamp);
        if (used !== undefined && used + value > 0) {
          accumulator.memorySum += (used / (used + value)) * 100;
          accumulator.memoryCount += 1;
        }
        break;
      }
    }
  }

  /** Complete readings, and the number of incomplete ones by what they lacked; clears the assembler. */
  *drain(): Generator<{ workloadId: string; timestamp: number; reading: Reading } | { missing: string }> {
    for (const [workloadId, byTime] of this.byWorkload) {
      for (const [timestamp, accumulator] of byTime) {
        const reading = complete(accumulator, this.heldUnits.get(workloadId));
        if (typeof reading === 'string') yield { missing: reading };
        else yield { workloadId, timestamp, reading };
      }
    }
    this.byWorkload.clear();
    this.used.clear();
  }
}

function complete(accumulator: Accumulator, heldUnits: number | undefined): Reading | string {
  const utilization =
    accumulator.utilCount > 0
      ? accumulator.utilSum / accumulator.utilCount
      : accumulator.engineCount > 0
        ? accumulator.engineSum / accumulator.engineCount
        : null;
  if (utilization === null) return 'incomplete reading (no GPU utilization)';
  if (accumulator.memoryCount === 0) return 'incomplete reading (no FB_USED/FB_FREE pair)';
  if (accumulator.powerByGpu.size === 0) return 'incomplete reading (no power)';
  if (accumulator.temperatureMax === -Infinity) return 'incomplete reading (no temperature)';
  return {
    gpu_utilization: clampPercent(utilization),
    memory_utilization: clampPercent(accumulator.memorySum / accumulator.memoryCount),
    temperature: accumulator.temperatureMax,
    power_usage: Math.max(0, ownPower(accumulator.powerByGpu, heldUnits)),
  };
}

/**
 * Σ watts × share units over the GPUs, divided once at the end: whole watts on slices of 1/5040 stay
 * exact (350 W × 2160 / 5040 is 150 W, where 350 × 3/7 is not).
 */
function ownPower(powerByGpu: Map<string, GpuPower>, heldUnits: number | undefined): number {
  let wattUnits = 0;
  let units = 0;
  for (const { watts, devices } of powerByGpu.values()) {
    const share = Math.min(
      GPU_SHARE_UNITS,
      [...devices.values()].reduce((sum, deviceUnits) => sum + deviceUnits, 0),
    );
    wattUnits += watts * share;
    units += share;
  }
  const scaled = heldUnits !== undefined && units > heldUnits ? (wattUnits * heldUnits) / units : wattUnits;
  return scaled / GPU_SHARE_UNITS;
}
