import { seriesShareUnits } from '../../../src/ingest/gpu-shares';
import {
  engineActiveScale,
  framebufferMiB,
  type GpuDevice,
  physicalGpuKey,
  ReadingAssembler,
  wholeGpu,
} from '../../../src/ingest/prometheus/dcgm-readings';
import {
  fieldQuery,
  POINTS_PER_QUERY,
  readRange,
  windowSteps,
} from '../../../src/ingest/prometheus/prometheus-source';
import { parseSyncConfig } from '../../../src/ingest/sync-config';

const HELD_WHOLE = {
  gpu_count: 1,
  gpu_share_units: 5040,
  gpu_sharing_mode: null,
  gpu_sharing_replicas: null,
};

/** A complete reading of one device of a workload at t = 60 s, drawing `watts` on its GPU. */
function addReading(assembler: ReadingAssembler, workloadId: string, device: GpuDevice, watts = 350): void {
  assembler.add('graphicsEngineActive', workloadId, device, 60, 50);
  assembler.add('framebufferUsed', workloadId, device, 60, 1);
  assembler.add('framebufferFree', workloadId, device, 60, 1);
  assembler.add('power', workloadId, device, 60, watts);
  assembler.add('temperature', workloadId, device, 60, 50);
}

describe('DCGM readings', () => {
  it('combines a workload’s GPUs: mean utilization and memory, summed power, highest temperature', () => {
    const assembler = new ReadingAssembler();
    for (const [gpu, util, used, free, power, temperature] of [
      ['a', 40, 20_000, 60_000, 250, 61],
      ['b', 90, 40_000, 40_000, 300, 70],
    ] as const) {
      assembler.add('gpuUtil', 'w', wholeGpu(gpu), 60, util);
      assembler.add('framebufferUsed', 'w', wholeGpu(gpu), 60, used);
      assembler.add('framebufferFree', 'w', wholeGpu(gpu), 60, free);
      assembler.add('power', 'w', wholeGpu(gpu), 60, power);
      assembler.add('temperature', 'w', wholeGpu(gpu), 60, temperature);
    }
    assembler.add('temperature', 'w', wholeGpu('a'), 120, 50);
    expect([...assembler.drain()]).toEqual([
      {
        workloadId: 'w',
        timestamp: 60,
        reading: { gpu_utilization: 65, memory_utilization: 37.5, power_usage: 550, temperature: 70 },
      },
      { missing: 'incomplete reading (no GPU utilization)' },
    ]);
  });

  it('MIG instances: utilization from GR_ENGINE_ACTIVE, memory per instance, each GPU’s power by its slices', () => {
    // Two 1g.10gb instances of one A100 and a 2g.20gb of another, as dcgm-exporter labels them.
    const instance = (uuid: string, id: string, profile: string) => ({
      gpu: uuid.slice(-1),
      UUID: uuid,
      device: `nvidia${uuid.slice(-1)}`,
      modelName: 'NVIDIA A100-SXM4-80GB',
      GPU_I_PROFILE: profile,
      GPU_I_ID: id,
      Hostname: 'gpu-mig-mixed-1',
      namespace: 'ml-inference',
      pod: 'llm-mig-mixed-7f9c2',
    });
    const assembler = new ReadingAssembler();
    for (const [labels, engine, used, free, power, temperature] of [
      [instance('GPU-m0', '7', '1g.10gb'), 20, 2_000, 8_000, 300, 60],
      [instance('GPU-m0', '8', '1g.10gb'), 40, 5_000, 5_000, 300, 60],
      [instance('GPU-m1', '3', '2g.20gb'), 90, 10_000, 10_000, 250, 66],
    ] as const) {
      const key = JSON.stringify(labels);
      const device = {
        series: key,
        physicalGpu: physicalGpuKey(labels, key),
        shareUnits: seriesShareUnits(labels.GPU_I_PROFILE, HELD_WHOLE, {}),
      };
      assembler.add('graphicsEngineActive', 'w', device, 60, engine);
      assembler.add('framebufferUsed', 'w', device, 60, used);
      assembler.add('framebufferFree', 'w', device, 60, free);
      assembler.add('power', 'w', device, 60, power);
      assembler.add('temperature', 'w', device, 60, temperature);
    }
    // 2/7 of the first GPU (two 1g instances), 2/7 of the second (one 2g).
    expect([...assembler.drain()]).toEqual([
      {
        workloadId: 'w',
        timestamp: 60,
        reading: {
          gpu_utilization: 50,
          memory_utilization: 40,
          power_usage: (300 * 1440 + 250 * 1440) / 5040,
          temperature: 66,
        },
      },
    ]);
    expect(physicalGpuKey({ gpu: '0', UUID: 'GPU-a0' }, 'series')).toBe('series');
  });

  it('charges each workload its slice of a GPU’s power, exactly: 3g, 2g and 1g of an H100 at 350 W', () => {
    const assembler = new ReadingAssembler();
    for (const [workload, profile] of [
      ['w3', '3g.40gb'],
      ['w2', '2g.20gb'],
      ['w1', '1g.10gb'],
    ] as const) {
      addReading(assembler, workload, {
        series: `GPU-h0/${profile}`,
        physicalGpu: 'host/GPU-h0',
        shareUnits: seriesShareUnits(profile, HELD_WHOLE, {}),
      });
    }
    const power = [...assembler.drain()].map((entry) =>
      'missing' in entry ? entry : [entry.workloadId, entry.reading.power_usage],
    );
    expect(power).toEqual([
      ['w3', 150],
      ['w2', 100],
      ['w1', 50],
    ]);
  });

  it('a series’ share of its GPU: MIG slices (A30 quarters too), 1/replicas, the whole GPU', () => {
    const held = (mode: 'mig' | 'time-slicing' | 'mps' | null, replicas: number | null = null) => ({
      gpu_count: 3,
      gpu_share_units: 2880,
      gpu_sharing_mode: mode,
      gpu_sharing_replicas: replicas,
    });
    expect(seriesShareUnits('3g.40gb', held('mig'), {})).toBe(2160);
    expect(seriesShareUnits('2g.20gb', held('mig'), {})).toBe(1440);
    expect(seriesShareUnits('1g.10gb', held('mig'), {})).toBe(720);
    expect(seriesShareUnits('1g.10gb+me', held('mig'), {})).toBe(720);
    expect(seriesShareUnits('1g.6gb', held('mig'), {})).toBe(1260);
    expect(seriesShareUnits('2g.12gb', held('mig'), {})).toBe(2520);
    expect(seriesShareUnits('4g.24gb', held('mig'), {})).toBe(5040);
    // A configured share wins; a profile known nowhere holds the workload's mean per device.
    expect(seriesShareUnits('1g.10gb', held('mig'), { '1g.10gb': 0.25 })).toBe(1260);
    expect(seriesShareUnits('7g.79gb', held('mig'), {})).toBe(960);
    expect(seriesShareUnits('', held('mig'), {})).toBe(960);
    expect(seriesShareUnits(null, held('time-slicing', 4), {})).toBe(1260);
    expect(seriesShareUnits(null, held('mps', 3), {})).toBe(1680);
    expect(seriesShareUnits(null, held('mig'), {})).toBe(5040);
    expect(seriesShareUnits(null, held(null), {})).toBe(5040);
  });

  it('never charges a workload more of its GPUs than it holds (replicated MIG instances)', () => {
    // A 1g.10gb instance replicated four ways: the labels name 1/7, the workload holds 1/28.
    const assembler = new ReadingAssembler(new Map([['w', 180]]));
    addReading(
      assembler,
      'w',
      { series: 'GPU-h0/7/vgpu1', physicalGpu: 'host/GPU-h0', shareUnits: 720 },
      280,
    );
    const [entry] = [...assembler.drain()];
    expect('reading' in entry && entry.reading.power_usage).toBe(10);
  });

  it('normalizes units: GR_ENGINE_ACTIVE ratio or percent, framebuffer bytes or MiB', () => {
    expect(engineActiveScale([0.2, 0.9], 'auto')).toBe(100);
    expect(engineActiveScale([20, 90], 'auto')).toBe(1);
    expect(engineActiveScale([0.5], 'percent')).toBe(1);
    expect(framebufferMiB(8 * 1024 ** 3)).toBe(8192);
    expect(framebufferMiB(81_920)).toBe(81_920);
  });

  it('reads each series per step from raw samples, for pod, renamed pod and job labels', () => {
    expect(fieldQuery('DCGM_FI_DEV_GPU_TEMP', 60, { pods: true, jobLabel: 'hpc_job' })).toBe(
      'avg_over_time(DCGM_FI_DEV_GPU_TEMP{pod!=""}[59999ms]) or avg_over_time(DCGM_FI_DEV_GPU_TEMP{exported_pod!=""}[59999ms])' +
        ' or avg_over_time(DCGM_FI_DEV_GPU_TEMP{hpc_job!=""}[59999ms])',
    );
    expect(fieldQuery('M', 60, { pods: true, jobLabel: null }, { pods: ['a.b'], jobs: [] })).toBe(
      'avg_over_time(M{pod=~"a\\\\.b"}[59999ms]) or avg_over_time(M{exported_pod=~"a\\\\.b"}[59999ms])',
    );
  });

  it('sizes query windows to at most 11,000 points per series and a bounded number of points per query', () => {
    expect(windowSteps(60, null)).toBe(10);
    expect(windowSteps(60, 1_000)).toBe(60);
    expect(windowSteps(60, 10_000)).toBe(10);
    expect(windowSteps(60, 80_000)).toBe(Math.floor(POINTS_PER_QUERY / 80_000));
    expect(windowSteps(11_000, 1)).toBe(11_000);
    expect(windowSteps(11_000, 10_000_000)).toBe(1);
  });

  it('reads from the watermark less the overlap, never past the last listing of a workload source', () => {
    const config = parseSyncConfig(
      { organization_id: 'o', kubernetes: {}, prometheus: { url: 'http://p' } },
      '/',
    );
    const listed = new Date(10_000 * 1000);
    expect(
      readRange(config, config.prometheus!, { kubernetes: listed, prometheus: new Date(9_000_000) }, 20_000),
    ).toEqual({
      start: 8_400,
      end: 10_020,
    });
    expect(readRange(config, config.prometheus!, {}, 20_000)).toEqual({ waitingFor: 'kubernetes' });
  });
});
