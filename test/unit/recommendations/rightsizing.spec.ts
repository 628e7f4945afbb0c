import { BUILT_IN_INSTANCE_TYPES, GpuCatalogue } from '../../../src/common/gpu-catalogue';
import { GPU_SHARE_UNITS, knownMigProfileShare, MIG_PROFILES_BY_GPU } from '../../../src/common/gpu-sharing';
import { type AdviceOutcome, adviseWorkload } from '../../../src/recommendations/rightsizing';
import type { WorkloadEvidenceRow } from '../../../src/recommendations/rightsizing.queries';

/**
 * The rule on synthetic samples with known percentiles: the evidence a row carries is computed here
 * as the SQL computes it (percentile_cont: linear between the two nearest ranks), then every advice
 * figure is stated exactly.
 */
const HOUR_SECONDS = 3600;

function percentileCont(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const position = fraction * (sorted.length - 1);
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - lower);
}

interface Workload {
  instanceType?: string;
  gpuCount?: number;
  profile?: string;
  hours?: number;
  /** [gpu_utilization, memory_utilization], evenly over the run, first and last at its ends. */
  samples: [number, number][];
}

function evidence({ instanceType = 'p5.48xlarge', gpuCount = 1, profile, hours = 10, samples }: Workload) {
  const gpu = samples.map(([utilization]) => utilization);
  const memory = samples.map(([, utilization]) => utilization);
  const share = profile === undefined ? gpuCount : gpuCount * (knownMigProfileShare(profile) as number);
  const row: WorkloadEvidenceRow = {
    workload_id: 'wl-1',
    name: 'job',
    initiative_id: 'team-a',
    submitted_by: 'a@example.com',
    status: 'completed',
    instance_type: instanceType,
    cluster_id: 'cl-1',
    gpu_count: gpuCount,
    gpu_share_units: Math.round(share * GPU_SHARE_UNITS),
    gpu_sharing_mode: profile === undefined ? null : 'mig',
    gpu_sharing_profile: profile ?? null,
    gpu_sharing_replicas: null,
    run_seconds: hours * HOUR_SECONDS,
    sample_count: samples.length,
    sampled_seconds: samples.length > 1 ? hours * HOUR_SECONDS : 0,
    p95_gpu_utilization: percentileCont(gpu, 0.95),
    p99_memory_utilization: percentileCont(memory, 0.99),
    top_memory_utilization: [...memory].sort((a, b) => b - a).slice(0, Math.floor(samples.length / 100) + 1),
    price_us: '0',
    priced: false,
  };
  return row;
}

const catalogue = new GpuCatalogue([]);

function advise(workload: Workload): AdviceOutcome {
  const row = evidence(workload);
  return adviseWorkload(row, catalogue.gpusOf(row.instance_type));
}

/** The figures of an advice, rounded as the API shows them. */
function figures(outcome: AdviceOutcome) {
  if (!('advice' in outcome)) return outcome;
  const { advice } = outcome;
  const round = (value: number) => Math.round(value * 10_000) / 10_000;
  return {
    current: {
      units: advice.current.units,
      sharing: advice.current.gpu_sharing,
      count: advice.current.gpu_count,
    },
    recommended: {
      units: advice.recommended.units,
      sharing: advice.recommended.gpu_sharing,
      count: advice.recommended.gpu_count,
      memory_gib: advice.recommended.memory_gib,
    },
    p95_gpu_utilization: round(advice.p95_gpu_utilization),
    p99_memory_used_gib: round(advice.p99_memory_used_gib),
    memory_need_gib: round(advice.memory_need_gib),
    compute_need_gpus: round(advice.compute_need_gpus),
    risk: advice.risk,
    saved_units: advice.saved_units,
    gpu_hours_saved: round(advice.gpu_hours_saved),
  };
}

const steady = (count: number, gpu: number, memory: number): [number, number][] =>
  Array.from({ length: count }, () => [gpu, memory]);

/** `samples` with the memory utilization of the readings at `indices` raised to `memory`. */
const withPeaks = (samples: [number, number][], indices: number[], memory: number): [number, number][] =>
  samples.map(([gpu, usual], index) => [gpu, indices.includes(index) ? memory : usual]);

describe('the advice rule', () => {
  it('moves a whole H100 at 8 % and 6 GiB to 1g.10gb, saving 6/7 of its GPU-hours', () => {
    expect(figures(advise({ samples: steady(40, 8, 7.5) }))).toEqual({
      current: { units: 5040, sharing: null, count: 1 },
      recommended: { units: 720, sharing: { mode: 'mig', profile: '1g.10gb' }, count: 1, memory_gib: 10 },
      p95_gpu_utilization: 8,
      p99_memory_used_gib: 6,
      memory_need_gib: 7.2,
      compute_need_gpus: 0.096,
      risk: 0,
      saved_units: 4320,
      gpu_hours_saved: 8.5714,
    });
  });

  it('moves an 8-GPU A100 40GB job at a steady 20 % and 30 % memory to 3 GPUs', () => {
    const outcome = advise({ instanceType: 'p4d.24xlarge', gpuCount: 8, samples: steady(40, 20, 30) });
    expect(figures(outcome)).toMatchObject({
      recommended: { units: 3 * 5040, sharing: null, count: 3, memory_gib: 120 },
      p99_memory_used_gib: 96,
      memory_need_gib: 115.2,
      compute_need_gpus: 1.92,
      saved_units: 5 * 5040,
      gpu_hours_saved: 50,
    });
  });

  it('leaves a job at 90 % where it is: it needs 1.08 GPUs', () => {
    expect(advise({ samples: steady(40, 90, 50) })).toEqual({ reason: 'not_smaller' });
  });

  it('gives a job with 10 samples no advice', () => {
    expect(advise({ samples: steady(10, 8, 7.5) })).toEqual({ reason: 'too_few_samples' });
  });

  it('moves a MIG 3g.40gb slice using 5 GiB at 10 % to 1g.10gb', () => {
    expect(figures(advise({ profile: '3g.40gb', samples: steady(40, 10, 12.5) }))).toMatchObject({
      current: { units: 2160, sharing: { mode: 'mig', profile: '3g.40gb' }, count: 1 },
      recommended: { units: 720, sharing: { mode: 'mig', profile: '1g.10gb' }, count: 1, memory_gib: 10 },
      p99_memory_used_gib: 5,
      memory_need_gib: 6,
      compute_need_gpus: 0.0514,
      saved_units: 1440,
      gpu_hours_saved: 2.8571,
    });
  });

  it('covers peaks in 2 % of the samples (the 99th percentile lands on them), with risk 0', () => {
    const samples = withPeaks(steady(200, 8, 7.5), [50, 100, 150, 199], 15);
    expect(figures(advise({ samples }))).toMatchObject({
      recommended: { units: 720, sharing: { mode: 'mig', profile: '1g.20gb' }, memory_gib: 20 },
      p99_memory_used_gib: 12,
      memory_need_gib: 14.4,
      risk: 0,
    });
  });

  it('takes the risk of one peak in 200 (0.5 %): 1g.10gb with risk 0.005', () => {
    const samples = withPeaks(steady(200, 8, 7.5), [100], 15);
    expect(figures(advise({ samples }))).toMatchObject({
      recommended: { units: 720, sharing: { mode: 'mig', profile: '1g.10gb' }, memory_gib: 10 },
      p99_memory_used_gib: 6,
      risk: 0.005,
    });
  });

  it('recommends nothing whose risk is above 1 %: one reading in 30 over 3g.40gb', () => {
    const samples = withPeaks(steady(30, 8, 1.25), [29], 56.25);
    // p99 = 1 + 0.71 × 44 = 32.24 GiB, × 1.2 = 38.69: 3g.40gb, which the 45 GiB reading exceeds.
    expect(advise({ samples })).toEqual({ reason: 'risk_above_limit' });
  });

  it('says why the others get none', () => {
    expect(advise({ instanceType: 'onprem-x', samples: steady(40, 8, 7.5) })).toEqual({
      reason: 'unknown_instance_type',
    });
    expect(advise({ profile: '1g.5gb', samples: steady(40, 8, 7.5) })).toEqual({
      reason: 'unknown_mig_profile',
    });
    const sliced = { ...evidence({ samples: steady(40, 8, 7.5) }), gpu_sharing_mode: 'mps' as const };
    expect(adviseWorkload(sliced, catalogue.gpusOf('p5.48xlarge'))).toEqual({ reason: 'shared_gpu' });
    const sparse = { ...evidence({ samples: steady(40, 8, 7.5) }), sampled_seconds: 4.99 * HOUR_SECONDS };
    expect(adviseWorkload(sparse, catalogue.gpusOf('p5.48xlarge'))).toEqual({ reason: 'low_coverage' });
  });

  it('takes whole GPUs on a GPU that cannot be sliced, and whole GPUs once a MIG slice would be the whole GPU', () => {
    expect(
      figures(advise({ instanceType: 'g5.48xlarge', gpuCount: 8, samples: steady(40, 10, 10) })),
    ).toMatchObject({ recommended: { count: 1, sharing: null, memory_gib: 24 }, saved_units: 7 * 5040 });
    // 4 GPUs at 30 %: 1.44 GPUs of compute, no profile short of 7g covers it.
    expect(
      figures(advise({ instanceType: 'p5.48xlarge', gpuCount: 4, samples: steady(40, 30, 10) })),
    ).toMatchObject({ recommended: { count: 2, sharing: null, memory_gib: 160 }, compute_need_gpus: 1.44 });
  });

  it('follows an imported entry over the built-in one of the same name', () => {
    const imported = new GpuCatalogue([
      {
        instance_type: 'p5.48xlarge',
        gpu_model: 'H100 80GB',
        gpu_memory_gib: 80,
        mig_capable: false,
        mig_profiles: [],
      },
    ]);
    const row = evidence({ samples: steady(40, 8, 7.5) });
    expect(adviseWorkload(row, imported.gpusOf('p5.48xlarge'))).toEqual({ reason: 'not_smaller' });
  });
});

describe('the GPU catalogue', () => {
  it('knows the common GPU instance types of AWS, Google Cloud and Azure by their GPU', () => {
    const models = (names: string[]) => names.map((name) => BUILT_IN_INSTANCE_TYPES.get(name)?.gpu_model);
    expect(
      models([
        'p4d.24xlarge',
        'p4de.24xlarge',
        'p5.48xlarge',
        'p5e.48xlarge',
        'g4dn.xlarge',
        'g5.12xlarge',
        'g6.xlarge',
        'g6e.48xlarge',
        'a2-highgpu-8g',
        'a2-ultragpu-1g',
        'a3-highgpu-8g',
        'a3-ultragpu-8g',
        'Standard_ND96asr_v4',
        'Standard_ND96amsr_A100_v4',
        'Standard_ND96isr_H100_v5',
      ]),
    ).toEqual([
      'A100 40GB',
      'A100 80GB',
      'H100 80GB',
      'H200 141GB',
      'T4 16GB',
      'A10G 24GB',
      'L4 24GB',
      'L40S 48GB',
      'A100 40GB',
      'A100 80GB',
      'H100 80GB',
      'H200 141GB',
      'A100 40GB',
      'A100 80GB',
      'H100 80GB',
    ]);
    expect(BUILT_IN_INSTANCE_TYPES.get('g6e.xlarge')).toEqual({
      gpu_model: 'L40S 48GB',
      gpu_memory_gib: 48,
      mig_capable: false,
      mig_profiles: [],
    });
  });

  it("lists each GPU's MIG profiles from NVIDIA's MIG user guide, with memory and compute slices", () => {
    const names = (model: string) =>
      MIG_PROFILES_BY_GPU[model].map((mig) => `${mig.profile}:${mig.memory_gib}:${mig.compute_slices}`);
    expect(names('H100 80GB')).toEqual([
      '1g.10gb:10:1',
      '1g.20gb:20:1',
      '2g.20gb:20:2',
      '3g.40gb:40:3',
      '4g.40gb:40:4',
      '7g.80gb:80:7',
    ]);
    expect(names('A100 40GB')).toEqual([
      '1g.5gb:5:1',
      '1g.10gb:10:1',
      '2g.10gb:10:2',
      '3g.20gb:20:3',
      '4g.20gb:20:4',
      '7g.40gb:40:7',
    ]);
    expect(names('H200 141GB')).toEqual([
      '1g.18gb:18:1',
      '1g.35gb:35:1',
      '2g.35gb:35:2',
      '3g.71gb:71:3',
      '4g.71gb:71:4',
      '7g.141gb:141:7',
    ]);
    expect(names('A30 24GB')).toEqual(['1g.6gb:6:1', '2g.12gb:12:2', '4g.24gb:24:4']);
    expect([
      knownMigProfileShare('3g.40gb'),
      knownMigProfileShare('2g.12gb+me'),
      knownMigProfileShare('9g.1gb'),
    ]).toEqual([3 / 7, 1 / 2, null]);
  });
});
