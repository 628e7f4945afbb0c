import type { PricingModel } from '../common/money';
import type { Role } from '../core/roles';
import type { GpuSharing, MigProfile } from '../common/gpu-sharing';
import type { WorkloadStatus } from '../core/workload-status';

/** Sections of an import document, in the order they are written (parents before children). */
export const SECTIONS = [
  'organizations',
  'initiatives',
  'pools',
  'allocations',
  'members',
  'prices',
  'carbon_intensity',
  'instance_types',
  'workloads',
  'metric_samples',
] as const;
export type SectionName = (typeof SECTIONS)[number];

/** NDJSON names a record's section by its singular `kind`. */
export const SECTION_BY_KIND: Record<string, SectionName> = {
  organization: 'organizations',
  initiative: 'initiatives',
  pool: 'pools',
  allocation: 'allocations',
  member: 'members',
  price: 'prices',
  carbon_intensity: 'carbon_intensity',
  instance_type: 'instance_types',
  workload: 'workloads',
  metric_sample: 'metric_samples',
};

export interface OrganizationRow {
  organization_id: string;
  name: string;
  timezone: string;
  budget_period_start: Date;
  budget_period_end: Date;
  /** How long a sample's power holds at most until the next one (energy), seconds. */
  max_sample_gap_seconds: number;
}

export interface InitiativeRow {
  organization_id: string;
  initiative_id: string;
  name: string;
}

export interface PoolRow {
  organization_id: string;
  pool_id: string;
  name: string;
  instance_types: string[];
}

export interface AllocationRow {
  organization_id: string;
  initiative_id: string;
  pool_id: string;
  allocated_gpu_hours: number;
}

export interface MemberRow {
  organization_id: string;
  subject: string;
  role: Role;
  initiative_ids: string[];
}

export interface PriceRow {
  organization_id: string;
  instance_type: string;
  /** Canonical decimal text (src/common/money.ts). */
  price_per_gpu_hour: string;
  currency: string;
  pricing_model: PricingModel;
  effective_from: Date;
  effective_to: Date | null;
}

/** A cluster's grid carbon intensity and PUE over a period [effective_from, effective_to). */
export interface CarbonIntensityRow {
  organization_id: string;
  cluster_id: string;
  effective_from: Date;
  effective_to: Date | null;
  grams_co2e_per_kwh: number;
  pue: number;
}

/** GPU facts of one instance type, over the built-in catalogue's (src/common/gpu-catalogue.ts). */
export interface InstanceTypeRow {
  organization_id: string;
  instance_type: string;
  gpu_model: string;
  gpu_memory_gib: number;
  mig_capable: boolean;
  mig_profiles: MigProfile[];
}

export interface WorkloadRow {
  organization_id: string;
  workload_id: string;
  initiative_id: string;
  name: string;
  status: WorkloadStatus;
  submitted_by: string;
  instance_type: string;
  gpu_count: number;
  /** Physical GPUs held; after validation always set (derived from gpu_count and gpu_sharing when not imported). */
  gpu_share: number;
  gpu_sharing: GpuSharing | null;
  is_managed: boolean;
  cluster_id: string;
  namespace: string;
  submitted_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  exit_code: number | null;
}

export interface MetricSampleRow {
  organization_id: string;
  workload_id: string;
  timestamp: Date;
  gpu_utilization: number;
  memory_utilization: number;
  temperature: number;
  power_usage: number;
}

export interface SectionRows {
  organizations: OrganizationRow;
  initiatives: InitiativeRow;
  pools: PoolRow;
  allocations: AllocationRow;
  members: MemberRow;
  prices: PriceRow;
  carbon_intensity: CarbonIntensityRow;
  instance_types: InstanceTypeRow;
  workloads: WorkloadRow;
  metric_samples: MetricSampleRow;
}

/** A validated record with where it came from: an index within its section (JSON) or a line (NDJSON). */
export type ImportRecord = {
  [S in SectionName]: { section: S; location: number; row: SectionRows[S] };
}[SectionName];

export type LocationStyle = 'index' | 'line';

export function describeLocation(style: LocationStyle, section: SectionName, location: number): string {
  return style === 'line' ? `line ${location}` : `${section}[${location}]`;
}
