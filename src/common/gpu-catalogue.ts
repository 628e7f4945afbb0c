import { MIG_PROFILES_BY_GPU, type MigProfile } from './gpu-sharing';

/** What the advice needs to know of the GPUs of an instance type. */
export interface InstanceTypeGpus {
  gpu_model: string;
  /** Memory of one GPU, GiB as NVIDIA names it (an "80GB" H100 holds 80). */
  gpu_memory_gib: number;
  mig_capable: boolean;
  /** Empty unless MIG-capable; the largest profile is the whole GPU. */
  mig_profiles: readonly MigProfile[];
}

function gpu(model: string, memoryGib: number): InstanceTypeGpus {
  const profiles = MIG_PROFILES_BY_GPU[model] ?? [];
  return {
    gpu_model: model,
    gpu_memory_gib: memoryGib,
    mig_capable: profiles.length > 0,
    mig_profiles: profiles,
  };
}

const A100_40 = gpu('A100 40GB', 40);
const A100_80 = gpu('A100 80GB', 80);
const H100_80 = gpu('H100 80GB', 80);
const H200_141 = gpu('H200 141GB', 141);
const T4 = gpu('T4 16GB', 16);
const A10G = gpu('A10G 24GB', 24);
const L4 = gpu('L4 24GB', 24);
const L40S = gpu('L40S 48GB', 48);

const SIZES = ['xlarge', '2xlarge', '4xlarge', '8xlarge', '12xlarge', '16xlarge'];

/**
 * The common GPU instance types of AWS, Google Cloud and Azure, by the GPU each carries. An
 * organization's imported `instance_types` add to these and override them by name.
 */
export const BUILT_IN_INSTANCE_TYPES: ReadonlyMap<string, InstanceTypeGpus> = new Map([
  ['p4d.24xlarge', A100_40],
  ['p4de.24xlarge', A100_80],
  ['p5.4xlarge', H100_80],
  ['p5.48xlarge', H100_80],
  ['p5e.48xlarge', H200_141],
  ['p5en.48xlarge', H200_141],
  ...[...SIZES, 'metal'].map((size) => [`g4dn.${size}`, T4] as const),
  ...[...SIZES, '24xlarge', '48xlarge'].map((size) => [`g5.${size}`, A10G] as const),
  ...[...SIZES, '24xlarge', '48xlarge'].map((size) => [`g6.${size}`, L4] as const),
  ...[...SIZES, '24xlarge', '48xlarge'].map((size) => [`g6e.${size}`, L40S] as const),
  ...['1g', '2g', '4g', '8g'].map((gpus) => [`a2-highgpu-${gpus}`, A100_40] as const),
  ['a2-megagpu-16g', A100_40],
  ...['1g', '2g', '4g', '8g'].map((gpus) => [`a2-ultragpu-${gpus}`, A100_80] as const),
  ...['1g', '2g', '4g', '8g'].map((gpus) => [`a3-highgpu-${gpus}`, H100_80] as const),
  ['a3-megagpu-8g', H100_80],
  ['a3-edgegpu-8g', H100_80],
  ['a3-ultragpu-8g', H200_141],
  ['Standard_ND96asr_v4', A100_40],
  ['Standard_ND96amsr_A100_v4', A100_80],
  ['Standard_ND96isr_H100_v5', H100_80],
]);

/** The instance types an organization's advice knows: its imported entries over the built-in ones. */
export class GpuCatalogue {
  private readonly entries: Map<string, InstanceTypeGpus>;

  constructor(imported: readonly ({ instance_type: string } & InstanceTypeGpus)[]) {
    this.entries = new Map(BUILT_IN_INSTANCE_TYPES);
    for (const { instance_type: name, ...gpus } of imported) this.entries.set(name, gpus);
  }

  gpusOf(instanceType: string): InstanceTypeGpus | null {
    return this.entries.get(instanceType) ?? null;
  }

  instanceTypes(): string[] {
    return [...this.entries.keys()];
  }
}
