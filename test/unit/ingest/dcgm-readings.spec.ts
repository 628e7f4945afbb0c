import {
  engineActiveScale,
  framebufferMiB,
  physicalGpuKey,
  ReadingAssembler,
} from '../../../src/ingest/prometheus/dcgm-readings';
import {
  fieldQuery,
  POINTS_PER_QUERY,
  readRange,
  windowSteps,
} from '../../../src/ingest/prometheus/prometheus-source';
import { parseSyncConfig } from '../../../src/ingest/sync-config';

describe('DCGM readings', () => {
  it('combines a workload’s GPUs: mean utilization and memory, summed power, highest temperature', () => {
    const assembler = new ReadingAssembler();
    for (const [gpu, util, used, free, power, temperature] of [
      ['a', 40, 20_000, 60_000, 250, 61],
      ['b', 90, 40_000, 40_000, 300, 70],
    ] as const) {
      assembler.add('gpuUtil', 'w', gpu, 60, util);
      assembler.add('framebufferUsed', 'w', gpu, 60, used);
      assembler.add('framebufferFree', 'w', gpu, 60, free);
      assembler.add('power', 'w', gpu, 60, power);
      assembler.add('temperature', 'w', gpu, 60, temperature);
    }
    assembler.add('temperature', 'w', 'a', 120, 50);
    expect([...assembler.drain()]).toEqual([
      {
        workloadId: 'w',
        timestamp: 60,
        reading: { gpu_utilization: 65, memory_utilization: 37.5, power_usage: 550, temperature: 70 },
      },
      { missing: 'incomplete reading (no GPU utilization)' },
    ]);
  });

  it('MIG instances: utilization from GR_ENGINE_ACTIVE, memory per instance, a GPU’s power once', () => {
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
      const physical = physicalGpuKey(labels, key);
      assembler.add('graphicsEngineActive', 'w', key, 60, engine, physical);
      assembler.add('framebufferUsed', 'w', key, 60, used, physical);
      assembler.add('framebufferFree', 'w', key, 60, free, physical);
      assembler.add('power', 'w', key, 60, power, physical);
      assembler.add('temperature', 'w', key, 60, temperature, physical);
    }
    expect([...assembler.drain()]).toEqual([
      {
        workloadId: 'w',
        timestamp: 60,
        reading: { gpu_utilization: 50, memory_utilization: 40, power_usage: 550, temperature: 66 },
      },
    ]);
    expect(physicalGpuKey({ gpu: '0', UUID: 'GPU-a0' }, 'series')).toBe('series');
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
