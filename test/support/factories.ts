import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { DataSource, EntityManager } from 'typeorm';
import { Readable } from 'node:stream';
import { importDataset, type ImportOptions, type ImportSummary } from '../../src/import/import.service';
import { withWriterLock } from '../../src/import/writer-lock';
import type { Role } from '../../src/core/roles';
import { ApiTokenService } from '../../src/common/auth/api-token.service';
import { ApiToken } from '../../src/database/entities/api-token.entity';
import type { WorkloadStatus } from '../../src/core/workload-status';
import { GPU_SHARE_UNITS, type GpuSharing } from '../../src/common/gpu-sharing';
import { TEST_JWT_SECRET } from './test-app';

let sequence = 0;

/** Ids unique across test files sharing one database, so no file needs to clean up after another. */
export function uniqueId(prefix: string): string {
  sequence += 1;
  return `${prefix}-${randomBytes(3).toString('hex')}${sequence.toString(36)}`;
}

/** The idle figures of a set of workloads none of which has samples. */
export const NO_SAMPLES = { sampled_gpu_hours: 0, idle_gpu_hours: 0, gpu_efficiency: null };

export interface OrganizationSeed {
  organizationId?: string;
  name?: string;
  timezone?: string;
  budgetPeriodStart?: Date | string;
  budgetPeriodEnd?: Date | string;
  initiatives?: string[];
  pools?: { poolId: string; name?: string; instanceTypes: string[] }[];
  allocations?: { initiativeId: string; poolId: string; allocatedGpuHours: number }[];
  members?: { subject: string; role: Role; initiativeIds?: string[] }[];
}

/** Inserts an organization with its initiatives, pools, allocations and members; returns its id. */
export async function seedOrganization(dataSource: DataSource, seed: OrganizationSeed = {}): Promise<string> {
  const organizationId = seed.organizationId ?? uniqueId('org');
  const periodStart = seed.budgetPeriodStart ?? '2026-10-01T00:00:00Z';
  const periodEnd = seed.budgetPeriodEnd ?? '2027-01-01T00:00:00Z';
  await dataSource.query(
    `INSERT INTO organizations (organization_id, name, timezone, budget_period_start, budget_period_end)
     VALUES ($1, $2, $3, $4, $5)`,
    [organizationId, seed.name ?? organizationId, seed.timezone ?? 'UTC', periodStart, periodEnd],
  );
  for (const initiativeId of seed.initiatives ?? ['init-a', 'init-b']) {
    await dataSource.query(
      'INSERT INTO initiatives (organization_id, initiative_id, name) VALUES ($1, $2, $3)',
      [organizationId, initiativeId, `Initiative ${initiativeId}`],
    );
  }
  for (const pool of seed.pools ?? []) {
    await dataSource.query(
      'INSERT INTO capacity_pools (organization_id, pool_id, name) VALUES ($1, $2, $3)',
      [organizationId, pool.poolId, pool.name ?? `Pool ${pool.poolId}`],
    );
    for (const instanceType of pool.instanceTypes) {
      await dataSource.query(
        'INSERT INTO pool_instance_types (organization_id, instance_type, pool_id) VALUES ($1, $2, $3)',
        [organizationId, instanceType, pool.poolId],
      );
    }
  }
  for (const allocation of seed.allocations ?? []) {
    await dataSource.query(
      `INSERT INTO allocations (organization_id, initiative_id, pool_id, allocated_gpu_hours) VALUES ($1, $2, $3, $4)`,
      [organizationId, allocation.initiativeId, allocation.poolId, allocation.allocatedGpuHours],
    );
  }
  for (const member of seed.members ?? []) {
    await dataSource.query(
      'INSERT INTO members (organization_id, subject, role, initiative_ids) VALUES ($1, $2, $3, $4)',
      [organizationId, member.subject, member.role, member.initiativeIds ?? []],
    );
  }
  return organizationId;
}

export interface WorkloadSeed {
  workloadId?: string;
  initiativeId?: string;
  name?: string;
  status?: WorkloadStatus;
  submittedBy?: string;
  instanceType?: string;
  gpuCount?: number;
  /**
   * The physical share held, in units of 1/5040 GPU (`shareUnits`) or in GPUs (`gpuShare`, rounded
   * to the nearest unit); absent: whole GPUs. Written to share_units only when it is not whole GPUs,
   * as the importer does.
   */
  shareUnits?: number;
  gpuShare?: number;
  gpuSharing?: GpuSharing | null;
  isManaged?: boolean;
  clusterId?: string;
  namespace?: string;
  submittedAt?: Date | string;
  startedAt?: Date | string | null;
  completedAt?: Date | string | null;
  exitCode?: number | null;
}

export interface WorkloadRow extends Required<
  Omit<WorkloadSeed, 'submittedAt' | 'startedAt' | 'completedAt' | 'shareUnits' | 'gpuShare' | 'gpuSharing'>
> {
  /** The share held in units (gpu_share_units): gpu_count × 5040 for whole GPUs. */
  shareUnits: number;
  gpuSharing: GpuSharing | null;
  submittedAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

const HOUR_MS = 3_600_000;

/**
 * Inserts workloads with consistent defaults for their status: a completed one ran for an hour,
 * a running one started a minute after submission, a pending one has no start.
 */
export async function insertWorkloads(
  dataSource: DataSource,
  organizationId: string,
  seeds: WorkloadSeed[],
): Promise<WorkloadRow[]> {
  const rows = seeds.map((seed) => completeWorkload(seed));
  await withWriterLock(dataSource, [organizationId], async (manager) => {
    for (const row of rows) await insertWorkloadRow(manager, organizationId, row);
  });
  return rows;
}

async function insertWorkloadRow(manager: EntityManager, organizationId: string, row: WorkloadRow) {
  const share = shareColumns(row.gpuCount, row.shareUnits, row.gpuSharing);
  await manager.query(
    `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by, instance_type,
         gpu_count, is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code,
         share_units, gpu_sharing_mode, gpu_sharing_profile, gpu_sharing_replicas)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
    [
      organizationId,
      row.workloadId,
      row.initiativeId,
      row.name,
      row.status,
      row.submittedBy,
      row.instanceType,
      row.gpuCount,
      row.isManaged,
      row.clusterId,
      row.namespace,
      row.submittedAt,
      row.startedAt,
      row.completedAt,
      row.exitCode,
      share.share_units,
      share.gpu_sharing_mode,
      share.gpu_sharing_profile,
      share.gpu_sharing_replicas,
    ],
  );
}

/** The share columns a writer sets on a workload row. */
export interface ShareColumns {
  share_units: number | null;
  gpu_sharing_mode: string | null;
  gpu_sharing_profile: string | null;
  gpu_sharing_replicas: number | null;
}

/**
 * The workload columns for a share of `units` (1/5040 GPU) of `gpuCount` devices shared as `sharing`:
 * share_units stays null for whole GPUs, as every writer leaves it.
 */
export function shareColumns(gpuCount: number, units: number, sharing: GpuSharing | null): ShareColumns {
  return {
    share_units: units === gpuCount * GPU_SHARE_UNITS ? null : units,
    gpu_sharing_mode: sharing?.mode ?? null,
    gpu_sharing_profile: sharing?.mode === 'mig' ? sharing.profile : null,
    gpu_sharing_replicas: sharing !== null && sharing.mode !== 'mig' ? sharing.replicas : null,
  };
}

/**
 * Ways a device can be shared, with the units one device holds: MIG 1g/2g/3g of a seven-slice GPU,
 * one of four time-sliced or MPS replicas, and whole GPUs.
 */
export const SHARE_KINDS: readonly { sharing: GpuSharing | null; unitsPerDevice: number }[] = [
  { sharing: null, unitsPerDevice: GPU_SHARE_UNITS },
  { sharing: { mode: 'mig', profile: '1g.10gb' }, unitsPerDevice: 720 },
  { sharing: { mode: 'mig', profile: '2g.20gb' }, unitsPerDevice: 1440 },
  { sharing: { mode: 'mig', profile: '3g.40gb' }, unitsPerDevice: 2160 },
  { sharing: { mode: 'time-slicing', replicas: 4 }, unitsPerDevice: 1260 },
  { sharing: { mode: 'mps', replicas: 4 }, unitsPerDevice: 1260 },
];

/** The share columns a writer sets for `gpuCount` devices of one of SHARE_KINDS (none: whole GPUs). */
export function sharedDevices(gpuCount: number, kind: (typeof SHARE_KINDS)[number]): ShareColumns {
  return shareColumns(gpuCount, deviceShareUnits(gpuCount, kind), gpuCount === 0 ? null : kind.sharing);
}

/** The units (gpu_share_units) `gpuCount` devices of one of SHARE_KINDS hold. */
export function deviceShareUnits(gpuCount: number, kind: (typeof SHARE_KINDS)[number]): number {
  return gpuCount * (gpuCount === 0 || kind.sharing === null ? GPU_SHARE_UNITS : kind.unitsPerDevice);
}

function completeWorkload(seed: WorkloadSeed): WorkloadRow {
  const status = seed.status ?? 'completed';
  const submittedAt = new Date(seed.submittedAt ?? Date.now() - 2 * HOUR_MS);
  const started = status === 'pending' ? null : new Date(submittedAt.getTime() + 60_000);
  const finished =
    status === 'pending' || status === 'running' ? null : new Date(submittedAt.getTime() + 61 * 60_000);
  const exitCode = status === 'completed' ? 0 : status === 'failed' ? 1 : null;
  const gpuCount = seed.gpuCount ?? 1;
  return {
    workloadId: seed.workloadId ?? uniqueId('wl'),
    initiativeId: seed.initiativeId ?? 'init-a',
    name: seed.name ?? 'training-job',
    status,
    submittedBy: seed.submittedBy ?? 'alice@example.com',
    instanceType: seed.instanceType ?? 'p5.48xlarge',
    gpuCount,
    shareUnits:
      seed.shareUnits ??
      (seed.gpuShare === undefined
        ? gpuCount * GPU_SHARE_UNITS
        : Math.round(seed.gpuShare * GPU_SHARE_UNITS)),
    gpuSharing: seed.gpuSharing ?? null,
    isManaged: seed.isManaged ?? true,
    clusterId: seed.clusterId ?? 'cluster-1',
    namespace: seed.namespace ?? 'default',
    submittedAt,
    startedAt:
      seed.startedAt === undefined ? started : seed.startedAt === null ? null : new Date(seed.startedAt),
    completedAt:
      seed.completedAt === undefined
        ? finished
        : seed.completedAt === null
          ? null
          : new Date(seed.completedAt),
    exitCode: seed.exitCode === undefined ? exitCode : seed.exitCode,
  };
}

export interface SampleSeed {
  workloadId: string;
  at: Date | string;
  gpuUtilization?: number;
  memoryUtilization?: number;
  temperature?: number;
  powerUsage?: number;
}

/** Inserts metric samples, creating the weekly partitions they need first. */
export async function insertSamples(dataSource: DataSource, organizationId: string, samples: SampleSeed[]) {
  if (samples.length === 0) return;
  const times = samples.map((sample) => new Date(sample.at).getTime());
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
    new Date(times.reduce((a, b) => Math.min(a, b))),
    new Date(times.reduce((a, b) => Math.max(a, b))),
  ]);
  await withWriterLock(dataSource, [organizationId], async (manager) => {
    for (const sample of samples) await insertSampleRow(manager, organizationId, sample);
  });
}

async function insertSampleRow(manager: EntityManager, organizationId: string, sample: SampleSeed) {
  await manager.query(
    `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization,
         temperature, power_usage) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      organizationId,
      sample.workloadId,
      new Date(sample.at),
      sample.gpuUtilization ?? 50,
      sample.memoryUtilization ?? 40,
      sample.temperature ?? 60,
      sample.powerUsage ?? 300,
    ],
  );
}

export interface TokenSeed {
  role: Role;
  initiativeIds?: string[];
  expiresAt?: Date | null;
  revoked?: boolean;
}

/** Creates an API token the way `gpucap tokens create` does and returns its text. */
export async function createApiToken(
  dataSource: DataSource,
  organizationId: string,
  seed: TokenSeed,
): Promise<string> {
  const service = new ApiTokenService(dataSource.getRepository(ApiToken));
  const { token, record } = await service.create({
    organizationId,
    role: seed.role,
    initiativeIds: seed.initiativeIds ?? [],
    name: `test ${seed.role}`,
    expiresAt: seed.expiresAt ?? null,
  });
  if (seed.revoked) await service.revoke(record.tokenId);
  return token;
}

/** An HS256 JWT signed with the test secret; `exp` one hour ahead unless overridden. */
export function signJwt(
  claims: Record<string, unknown>,
  options: jwt.SignOptions = {},
  secret = TEST_JWT_SECRET,
) {
  const payload = { exp: Math.floor(Date.now() / 1000) + 3600, ...claims };
  return jwt.sign(payload, secret, { algorithm: 'HS256', ...options });
}

export function authHeaders(token: string, organizationId: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'X-Organization-Id': organizationId };
}

/**
 * One statement run as a writer of the organization in its `$1` (tests that move or delete rows
 * directly): writes to workloads and samples need the organization's writer lock.
 */
export async function writeAs(dataSource: DataSource, sql: string, parameters: unknown[]): Promise<unknown> {
  return withWriterLock(dataSource, [parameters[0] as string], (manager) => manager.query(sql, parameters));
}

/** Imports one JSON document through the real importer (validation, staging, writer locks). */
export function importDocument(
  dataSource: DataSource,
  document: object,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  return importDataset(dataSource, Readable.from([JSON.stringify(document)]), options);
}
