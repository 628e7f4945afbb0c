import { ROLES } from '../core/roles';
import {
  derivedGpuShare,
  GPU_SHARE_UNITS,
  type GpuSharing,
  gpuShareUnits,
  type MigProfile,
} from '../common/gpu-sharing';
import { parseContractTimestamp } from '../common/validation/contract-date';
import { IDENTIFIER_PATTERN as IDENTIFIER } from '../core/identifier';
import { WORKLOAD_STATUSES } from '../core/workload-status';
import type { SectionName, SectionRows } from './import-sections';
import { decimalText, isCurrency, PRICING_MODELS } from '../common/money';

const MAX_TEXT = 256;
const MAX_INT32 = 2_147_483_647;
/** A gap in an organization's samples counts as power held for at most this long, by default (seconds). */
export const DEFAULT_MAX_SAMPLE_GAP_SECONDS = 120;
const MAX_SAMPLE_GAP_SECONDS = 86_400;

type FieldType =
  | 'identifier'
  | 'text'
  | 'timestamp'
  | 'percentage'
  | 'non-negative number'
  | 'number'
  | 'gpu count'
  | 'gpu share'
  | 'gpu sharing'
  | 'integer'
  | 'boolean'
  | 'identifier list'
  | 'timezone'
  | 'role'
  | 'status'
  | 'price'
  | 'currency'
  | 'pricing model'
  | 'gib'
  | 'mig profiles'
  | 'sample gap'
  | 'pue';

interface FieldSpec {
  type: FieldType;
  /** Optional fields may be omitted or null; they become null (or the default). */
  optional?: boolean;
  default?: unknown;
}

const FIELDS: { [S in SectionName]: Record<keyof SectionRows[S], FieldSpec> } = {
  organizations: {
    organization_id: { type: 'identifier' },
    name: { type: 'text' },
    timezone: { type: 'timezone', optional: true, default: 'UTC' },
    budget_period_start: { type: 'timestamp' },
    budget_period_end: { type: 'timestamp' },
    max_sample_gap_seconds: { type: 'sample gap', optional: true, default: DEFAULT_MAX_SAMPLE_GAP_SECONDS },
  },
  initiatives: {
    organization_id: { type: 'identifier' },
    initiative_id: { type: 'identifier' },
    name: { type: 'text' },
  },
  pools: {
    organization_id: { type: 'identifier' },
    pool_id: { type: 'identifier' },
    name: { type: 'text' },
    instance_types: { type: 'identifier list' },
  },
  allocations: {
    organization_id: { type: 'identifier' },
    initiative_id: { type: 'identifier' },
    pool_id: { type: 'identifier' },
    allocated_gpu_hours: { type: 'non-negative number' },
  },
  members: {
    organization_id: { type: 'identifier' },
    subject: { type: 'text' },
    role: { type: 'role' },
    initiative_ids: { type: 'identifier list', optional: true, default: [] },
  },
  prices: {
    organization_id: { type: 'identifier' },
    instance_type: { type: 'identifier' },
    price_per_gpu_hour: { type: 'price' },
    currency: { type: 'currency' },
    pricing_model: { type: 'pricing model' },
    effective_from: { type: 'timestamp' },
    effective_to: { type: 'timestamp', optional: true },
  },
  carbon_intensity: {
    organization_id: { type: 'identifier' },
    cluster_id: { type: 'text' },
    effective_from: { type: 'timestamp' },
    effective_to: { type: 'timestamp', optional: true },
    grams_co2e_per_kwh: { type: 'non-negative number' },
    pue: { type: 'pue', optional: true, default: 1 },
  },
  instance_types: {
    organization_id: { type: 'identifier' },
    instance_type: { type: 'identifier' },
    gpu_model: { type: 'text' },
    gpu_memory_gib: { type: 'gib' },
    mig_capable: { type: 'boolean' },
    mig_profiles: { type: 'mig profiles', optional: true, default: [] },
  },
  workloads: {
    organization_id: { type: 'identifier' },
    workload_id: { type: 'identifier' },
    initiative_id: { type: 'identifier' },
    name: { type: 'text' },
    status: { type: 'status' },
    submitted_by: { type: 'text' },
    instance_type: { type: 'identifier' },
    gpu_count: { type: 'gpu count' },
    gpu_share: { type: 'gpu share', optional: true },
    gpu_sharing: { type: 'gpu sharing', optional: true },
    is_managed: { type: 'boolean' },
    cluster_id: { type: 'text' },
    namespace: { type: 'text' },
    submitted_at: { type: 'timestamp' },
    started_at: { type: 'timestamp', optional: true },
    completed_at: { type: 'timestamp', optional: true },
    exit_code: { type: 'integer', optional: true },
  },
  metric_samples: {
    organization_id: { type: 'identifier' },
    workload_id: { type: 'identifier' },
    timestamp: { type: 'timestamp' },
    gpu_utilization: { type: 'percentage' },
    memory_utilization: { type: 'percentage' },
    temperature: { type: 'number' },
    power_usage: { type: 'non-negative number' },
  },
};

const DERIVED_FIELDS = new Set(['duration_seconds', 'gpu_hours_used', 'gpu_usage']);

export type ValidationResult<S extends SectionName> =
  { row: SectionRows[S]; issues?: undefined } | { row?: undefined; issues: string[] };

/**
 * Checks one record on its own: fields, types, ranges and the rules that tie its fields together.
 * References to other records are checked later (ReferenceTracker), once the whole file is known.
 * `ignoredKeys` are envelope fields such as NDJSON's `kind`.
 */
export function validateRecord<S extends SectionName>(
  section: S,
  value: unknown,
  ignoredKeys: readonly string[] = [],
): ValidationResult<S> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { issues: ['must be a JSON object'] };
  }
  const input = value as Record<string, unknown>;
  const specs = FIELDS[section] as Record<string, FieldSpec>;
  const issues: string[] = [];
  for (const key of Object.keys(input)) {
    // Own properties only: `in` would take `constructor` or `toString` for declared fields.
    if (Object.hasOwn(specs, key) || ignoredKeys.includes(key)) continue;
    issues.push(
      DERIVED_FIELDS.has(key)
        ? `${key} is derived by the service and cannot be imported; remove it`
        : `unknown field '${key}'`,
    );
  }
  const row: Record<string, unknown> = {};
  for (const [field, spec] of Object.entries(specs)) {
    const raw = input[field];
    if (raw === undefined || raw === null) {
      if (spec.optional) row[field] = spec.default ?? null;
      else issues.push(`${field} is required`);
      continue;
    }
    const checked = checkField(spec.type, raw);
    if (typeof checked === 'string') issues.push(`${field} ${checked}`);
    else row[field] = checked.value;
  }
  if (issues.length === 0) issues.push(...crossFieldIssues(section, row));
  return issues.length ? { issues } : { row: row as unknown as SectionRows[S] };
}

/** Returns the converted value, or the broken rule as text that follows the field name. */
function checkField(type: FieldType, raw: unknown): { value: unknown } | string {
  switch (type) {
    case 'identifier':
      return typeof raw === 'string' && IDENTIFIER.test(raw)
        ? { value: raw }
        : 'must be an identifier: 1 to 128 characters from A-Z a-z 0-9 . _ : -';
    case 'text':
      return typeof raw === 'string' &&
        raw.trim().length > 0 &&
        raw.length <= MAX_TEXT &&
        !hasControlCharacter(raw)
        ? { value: raw }
        : `must be a non-empty string of at most ${MAX_TEXT} characters without control characters`;
    case 'timestamp':
      return checkTimestamp(raw);
    case 'percentage':
      return typeof raw === 'number' && raw >= 0 && raw <= 100
        ? { value: raw }
        : 'must be a number from 0 to 100';
    case 'non-negative number':
      return typeof raw === 'number' && Number.isFinite(raw) && raw >= 0
        ? { value: raw }
        : 'must be a number greater than or equal to 0';
    case 'number':
      return typeof raw === 'number' && Number.isFinite(raw) ? { value: raw } : 'must be a number';
    case 'gpu count':
      return Number.isInteger(raw) && (raw as number) >= 0 && (raw as number) <= 100_000
        ? { value: raw }
        : 'must be an integer from 0 to 100000';
    case 'gpu share':
      // 0 only with gpu_count 0 (checked with the other fields): a workload without GPUs holds none.
      return typeof raw === 'number' && Number.isFinite(raw) && raw >= 0
        ? { value: raw }
        : 'must be a number greater than 0 (the physical GPUs the workload holds)';
    case 'gpu sharing':
      return checkGpuSharing(raw);
    case 'integer':
      return Number.isInteger(raw) && Math.abs(raw as number) <= MAX_INT32
        ? { value: raw }
        : 'must be an integer';
    case 'boolean':
      return typeof raw === 'boolean' ? { value: raw } : 'must be true or false';
    case 'identifier list':
      return checkIdentifierList(raw);
    case 'timezone':
      return typeof raw === 'string' && isTimeZone(raw)
        ? { value: raw }
        : 'must be an IANA time zone such as Europe/Berlin (Area/Location or UTC, no abbreviation)';
    case 'role':
      return (ROLES as readonly unknown[]).includes(raw)
        ? { value: raw }
        : `must be one of ${ROLES.join(', ')}`;
    case 'price': {
      const text = decimalText(raw);
      return text === null
        ? 'must be a decimal number at least 0, as a string ("2.35") or a number (at most 12 integer and 10 decimal digits)'
        : { value: text };
    }
    case 'currency':
      return typeof raw === 'string' && isCurrency(raw)
        ? { value: raw }
        : 'must be an ISO 4217 currency code such as EUR or USD';
    case 'pricing model':
      return (PRICING_MODELS as readonly unknown[]).includes(raw)
        ? { value: raw }
        : `must be one of ${PRICING_MODELS.join(', ')}`;
    case 'gib':
      return typeof raw === 'number' && Number.isFinite(raw) && raw > 0
        ? { value: raw }
        : 'must be a number greater than 0 (GiB)';
    case 'mig profiles':
      return checkMigProfiles(raw);
    case 'sample gap':
      return Number.isInteger(raw) && (raw as number) >= 1 && (raw as number) <= MAX_SAMPLE_GAP_SECONDS
        ? { value: raw }
        : `must be an integer from 1 to ${MAX_SAMPLE_GAP_SECONDS} (seconds)`;
    case 'pue':
      return typeof raw === 'number' && Number.isFinite(raw) && raw >= 1
        ? { value: raw }
        : 'must be a number greater than or equal to 1 (power usage effectiveness: facility power over IT power)';
    case 'status':
      return (WORKLOAD_STATUSES as readonly unknown[]).includes(raw)
        ? { value: raw }
        : `must be one of ${WORKLOAD_STATUSES.join(', ')} (unknown status ${JSON.stringify(raw)})`;
  }
}

function checkTimestamp(raw: unknown): { value: Date } | string {
  const rule = 'must be an ISO 8601 timestamp with an offset, such as 2026-11-20T08:00:00Z';
  const parsed = typeof raw === 'string' ? parseContractTimestamp(raw) : null;
  return parsed ? { value: parsed } : rule;
}

function checkIdentifierList(raw: unknown): { value: string[] } | string {
  const rule = 'must be an array of distinct identifiers (1 to 128 characters from A-Z a-z 0-9 . _ : -)';
  if (!Array.isArray(raw) || raw.length > 10_000) return rule;
  if (!raw.every((item) => typeof item === 'string' && IDENTIFIER.test(item))) return rule;
  return new Set(raw).size === raw.length ? { value: raw as string[] } : rule;
}

const MIG_PROFILE = /^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$/;
const MAX_REPLICAS = 1_000;

function checkGpuSharing(raw: unknown): { value: GpuSharing } | string {
  const rule =
    'must be {"mode": "mig", "profile": "1g.10gb"}, {"mode": "time-slicing", "replicas": N} or {"mode": "mps", "replicas": N}';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return rule;
  const sharing = raw as Record<string, unknown>;
  const keys = Object.keys(sharing).sort().join(',');
  if (sharing.mode === 'mig') {
    if (keys !== 'mode,profile') return rule;
    return typeof sharing.profile === 'string' && MIG_PROFILE.test(sharing.profile)
      ? { value: { mode: 'mig', profile: sharing.profile } }
      : 'profile must be a MIG profile name such as 1g.10gb (1 to 64 characters from A-Z a-z 0-9 . + _ -)';
  }
  if (sharing.mode === 'time-slicing' || sharing.mode === 'mps') {
    if (keys !== 'mode,replicas') return rule;
    const replicas = sharing.replicas;
    return Number.isInteger(replicas) && (replicas as number) >= 1 && (replicas as number) <= MAX_REPLICAS
      ? { value: { mode: sharing.mode, replicas: replicas as number } }
      : `replicas must be an integer from 1 to ${MAX_REPLICAS}`;
  }
  return rule;
}

const MAX_MIG_PROFILES = 64;
const MAX_COMPUTE_SLICES = 64;

function checkMigProfiles(raw: unknown): { value: MigProfile[] } | string {
  const rule = `must be an array of at most ${MAX_MIG_PROFILES} distinct profiles, each {"profile": "1g.10gb", "memory_gib": 10, "compute_slices": 1} (memory_gib above 0, compute_slices an integer from 1 to ${MAX_COMPUTE_SLICES})`;
  if (!Array.isArray(raw) || raw.length > MAX_MIG_PROFILES) return rule;
  const profiles: MigProfile[] = [];
  for (const item of raw as unknown[]) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return rule;
    const entry = item as Record<string, unknown>;
    if (Object.keys(entry).sort().join(',') !== 'compute_slices,memory_gib,profile') return rule;
    const { profile, memory_gib: memory, compute_slices: slices } = entry;
    if (typeof profile !== 'string' || !MIG_PROFILE.test(profile)) return rule;
    if (typeof memory !== 'number' || !Number.isFinite(memory) || memory <= 0) return rule;
    if (!Number.isInteger(slices) || (slices as number) < 1 || (slices as number) > MAX_COMPUTE_SLICES)
      return rule;
    profiles.push({ profile, memory_gib: memory, compute_slices: slices as number });
  }
  return new Set(profiles.map((mig) => mig.profile)).size === profiles.length ? { value: profiles } : rule;
}

function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) if (text.charCodeAt(index) < 32) return true;
  return false;
}

/** The areas of the IANA database's region/city names (not `US/…` and other legacy links). */
const IANA_AREAS = new Set([
  'Africa',
  'America',
  'Antarctica',
  'Arctic',
  'Asia',
  'Atlantic',
  'Australia',
  'Etc',
  'Europe',
  'Indian',
  'Pacific',
]);
const AREA_LOCATION = /^([A-Z][a-z]+)(?:\/[A-Z0-9][A-Za-z0-9_+-]*){1,2}$/;
const timeZoneCache = new Map<string, boolean>();

/**
 * Stats compute "today" and "this week" in PostgreSQL with the stored name, the rest of the service
 * with ICU: a name must mean the same zone to both. Abbreviations do not (`BST` is Asia/Dhaka to ICU,
 * +01:00 to PostgreSQL), and neither do links tzdata dropped (`US/Pacific-New`, which ICU still knows
 * and PostgreSQL refuses). Area/Location names of the IANA database, as ICU knows them, are safe.
 */
function isTimeZone(name: string): boolean {
  let known = timeZoneCache.get(name);
  if (known === undefined) {
    const area = AREA_LOCATION.exec(name)?.[1];
    known = name === 'UTC' || (area !== undefined && IANA_AREAS.has(area) && icuKnows(name));
    timeZoneCache.set(name, known);
  }
  return known;
}

function icuKnows(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function crossFieldIssues(section: SectionName, row: Record<string, unknown>): string[] {
  if (section === 'organizations') {
    return (row.budget_period_start as Date) < (row.budget_period_end as Date)
      ? []
      : ['budget_period_start must be before budget_period_end'];
  }
  if (section === 'prices' || section === 'carbon_intensity') {
    const period = row as unknown as SectionRows['prices' | 'carbon_intensity'];
    return period.effective_to === null || period.effective_from < period.effective_to
      ? []
      : ['effective_from must be before effective_to'];
  }
  if (section === 'instance_types') {
    const entry = row as unknown as SectionRows['instance_types'];
    if (entry.mig_capable !== entry.mig_profiles.length > 0) {
      return [
        entry.mig_capable
          ? 'mig_profiles must list the profiles of a MIG-capable GPU'
          : 'mig_profiles must be empty when mig_capable is false',
      ];
    }
    return entry.mig_profiles.some((mig) => mig.memory_gib > entry.gpu_memory_gib)
      ? ['mig_profiles: a profile holds at most the memory of its GPU (gpu_memory_gib)']
      : [];
  }
  if (section === 'workloads') {
    const workload = row as unknown as SectionRows['workloads'];
    return [...workloadTimeIssues(workload), ...gpuShareIssues(workload)];
  }
  return [];
}

/** Status and time consistency (contract §4). */
export function workloadTimeIssues(workload: SectionRows['workloads']): string[] {
  const { status, submitted_at: submitted, started_at: started, completed_at: completed } = workload;
  const exitCode = workload.exit_code;
  const issues: string[] = [];
  const mustBeNull = (field: string, value: unknown) => {
    if (value !== null) issues.push(`${field} must be null for a ${status} workload`);
  };
  const mustBeSet = (field: string, value: unknown) => {
    if (value === null) issues.push(`${field} is required for a ${status} workload`);
  };
  if (status === 'pending') {
    mustBeNull('started_at', started);
    mustBeNull('completed_at', completed);
    mustBeNull('exit_code', exitCode);
  } else if (status === 'running') {
    mustBeSet('started_at', started);
    mustBeNull('completed_at', completed);
    mustBeNull('exit_code', exitCode);
  } else if (status === 'cancelled') {
    mustBeSet('completed_at', completed);
  } else {
    mustBeSet('started_at', started);
    mustBeSet('completed_at', completed);
    mustBeSet('exit_code', exitCode);
  }
  if (started && started < submitted) issues.push('started_at must not be before submitted_at');
  if (completed && completed < (started ?? submitted)) {
    issues.push(`completed_at must not be before ${started ? 'started_at' : 'submitted_at'}`);
  }
  return issues;
}

/**
 * Resolves the workload's share (sets `gpu_share` when it was not imported) and checks it: more than
 * 0 and at most one GPU per device, or 0 with no device. Kept to the nearest 1/GPU_SHARE_UNITS GPU.
 */
function gpuShareIssues(workload: SectionRows['workloads']): string[] {
  const { gpu_count: count, gpu_sharing: sharing } = workload;
  if (workload.gpu_share === null) {
    const derived = derivedGpuShare(count, sharing);
    if (derived === null) {
      const profile = sharing?.mode === 'mig' ? sharing.profile : '';
      return [
        `gpu_sharing.profile '${profile}' is not a MIG profile gpucap knows: give gpu_share, the physical GPUs the workload holds`,
      ];
    }
    workload.gpu_share = derived;
  }
  const units = gpuShareUnits(workload.gpu_share);
  if (count === 0) return units === 0 ? [] : ['gpu_share must be absent or 0 when gpu_count is 0'];
  if (units < 1) return [`gpu_share must be at least 1/${GPU_SHARE_UNITS} of a GPU`];
  if (units > count * GPU_SHARE_UNITS)
    return ['gpu_share must not exceed gpu_count (one GPU per device at most)'];
  return [];
}
