import type { ImportRecord } from './import-sections';

/** Runs one parameterised statement and returns its rows (the loader's connection, inside its transaction). */
export type QueryFn = <T>(sql: string, params: unknown[]) => Promise<T[]>;

export interface RecordIssue {
  location: number;
  section: ImportRecord['section'];
  message: string;
  /** Another record the issue concerns (the first occurrence of a repeated identifier). */
  seeAlso?: number;
}

type Target = 'organization' | 'initiative' | 'pool' | 'workload';

interface PendingReference {
  target: Target;
  organizationId: string;
  id: string;
  /** The first records that name it (enough to report; the rest only add noise). */
  users: { section: ImportRecord['section']; location: number }[];
}

const MAX_USERS_PER_REFERENCE = 20;
const SEP = '\u0000';

/**
 * Remembers every identifier the file declares and every reference it makes, so references can be
 * checked once the whole file has been read (NDJSON lines may come in any order), against the file
 * and then the database. Holds keys only, never whole records (a million workloads is fine; samples
 * add one entry per distinct workload they name).
 */
export class ReferenceTracker {
  private readonly declared = new Map<string, number>();
  private readonly pending = new Map<string, PendingReference>();
  /** organization + instance type → the pool that claims it in the file. */
  private readonly instanceTypes = new Map<string, { poolId: string; location: number }>();
  private readonly poolsByOrganization = new Map<string, Set<string>>();
  /** initiative or pool id → an organization the file declares it in (for "belongs to another organization"). */
  private readonly fileOwners = new Map<string, string>();

  /** Tracks one valid record; returns an issue when it repeats an identifier of the file. */
  track(record: ImportRecord): Omit<RecordIssue, 'section' | 'location'> | null {
    const { row } = record;
    switch (record.section) {
      case 'organizations':
        return this.declare('organization', row.organization_id, row.organization_id, record.location);
      case 'initiatives':
        this.reference('organization', row.organization_id, row.organization_id, record);
        return this.declare(
          'initiative',
          record.row.organization_id,
          record.row.initiative_id,
          record.location,
        );
      case 'pools':
        this.reference('organization', row.organization_id, row.organization_id, record);
        return this.declarePool(record);
      case 'allocations':
        this.reference('initiative', record.row.organization_id, record.row.initiative_id, record);
        this.reference('pool', record.row.organization_id, record.row.pool_id, record);
        return this.declare(
          'allocation',
          record.row.organization_id,
          `${record.row.initiative_id}/${record.row.pool_id}`,
          record.location,
        );
      case 'members':
        this.reference('organization', row.organization_id, row.organization_id, record);
        for (const initiativeId of record.row.initiative_ids) {
          this.reference('initiative', row.organization_id, initiativeId, record);
        }
        return this.declare('member', row.organization_id, record.row.subject, record.location);
      case 'workloads':
        this.reference('initiative', row.organization_id, record.row.initiative_id, record);
        return this.declare('workload', row.organization_id, record.row.workload_id, record.location);
      case 'metric_samples':
        this.reference('workload', row.organization_id, record.row.workload_id, record);
        return null;
    }
  }

  private declare(kind: string, organizationId: string, id: string, location: number) {
    const key = `${kind}${SEP}${organizationId}${SEP}${id}`;
    const previous = this.declared.get(key);
    if (previous !== undefined) {
      return {
        message: `repeats the ${kind} '${id}' of organization '${organizationId}'`,
        seeAlso: previous,
      };
    }
    this.declared.set(key, location);
    if (kind === 'initiative' || kind === 'pool') this.fileOwners.set(`${kind}${SEP}${id}`, organizationId);
    return null;
  }

  private declarePool(record: Extract<ImportRecord, { section: 'pools' }>) {
    const { organization_id: organizationId, pool_id: poolId, instance_types: types } = record.row;
    const duplicate = this.declare('pool', organizationId, poolId, record.location);
    if (duplicate) return duplicate;
    const pools = this.poolsByOrganization.get(organizationId) ?? new Set<string>();
    pools.add(poolId);
    this.poolsByOrganization.set(organizationId, pools);
    for (const instanceType of types) {
      const key = `${organizationId}${SEP}${instanceType}`;
      const owner = this.instanceTypes.get(key);
      if (owner) {
        return {
          message: `instance type '${instanceType}' is already in pool '${owner.poolId}' of organization '${organizationId}' (an instance type belongs to at most one pool)`,
          seeAlso: owner.location,
        };
      }
      this.instanceTypes.set(key, { poolId, location: record.location });
    }
    return null;
  }

  private reference(target: Target, organizationId: string, id: string, record: ImportRecord): void {
    const key = `${target}${SEP}${organizationId}${SEP}${id}`;
    let reference = this.pending.get(key);
    if (!reference) {
      reference = { target, organizationId, id, users: [] };
      this.pending.set(key, reference);
    }
    if (reference.users.length < MAX_USERS_PER_REFERENCE) {
      reference.users.push({ section: record.section, location: record.location });
    }
  }

  /**
   * Issues for references that neither the file nor the database resolves, and for instance types
   * the file gives to a pool while the database keeps them in another pool the file does not redefine.
   */
  async check(query: QueryFn): Promise<RecordIssue[]> {
    const unresolved = [...this.pending.values()].filter(
      (reference) =>
        !this.declared.has(`${reference.target}${SEP}${reference.organizationId}${SEP}${reference.id}`),
    );
    const found = await this.findInDatabase(query, unresolved);
    const issues: RecordIssue[] = [];
    for (const reference of unresolved) {
      const key = `${reference.organizationId}${SEP}${reference.id}`;
      if (found[reference.target].has(key)) continue;
      const owner =
        this.fileOwners.get(`${reference.target}${SEP}${reference.id}`) ??
        found.owners[reference.target].get(reference.id);
      const message = missingMessage(reference, owner);
      for (const user of reference.users) issues.push({ ...user, message });
    }
    issues.push(...(await this.instanceTypeIssues(query)));
    return issues.sort((a, b) => a.location - b.location);
  }

  /** True when every reference made so far resolves (cheap when the file declares them all). */
  async allResolved(query: QueryFn): Promise<boolean> {
    return (await this.check(query)).length === 0;
  }

  private async findInDatabase(query: QueryFn, references: PendingReference[]) {
    const found: Record<Target, Set<string>> = {
      organization: new Set(),
      initiative: new Set(),
      pool: new Set(),
      workload: new Set(),
    };
    const owners: Record<Target, Map<string, string>> = {
      organization: new Map(),
      initiative: new Map(),
      pool: new Map(),
      workload: new Map(),
    };
    const sql: Record<Target, string> = {
      organization: `SELECT organization_id, organization_id AS id FROM organizations WHERE organization_id = ANY($1::text[])`,
      initiative: `SELECT organization_id, initiative_id AS id FROM initiatives WHERE initiative_id = ANY($1::text[])`,
      pool: `SELECT organization_id, pool_id AS id FROM capacity_pools WHERE pool_id = ANY($1::text[])`,
      workload: `SELECT organization_id, workload_id AS id FROM workloads WHERE workload_id = ANY($1::text[])`,
    };
    for (const target of Object.keys(sql) as Target[]) {
      const ids = [...new Set(references.filter((r) => r.target === target).map((r) => r.id))];
      for (let start = 0; start < ids.length; start += 50_000) {
        const rows = await query<{ organization_id: string; id: string }>(sql[target], [
          ids.slice(start, start + 50_000),
        ]);
        for (const row of rows) {
          found[target].add(`${row.organization_id}${SEP}${row.id}`);
          owners[target].set(row.id, row.organization_id);
        }
      }
    }
    return { ...found, owners };
  }

  private async instanceTypeIssues(query: QueryFn): Promise<RecordIssue[]> {
    if (this.instanceTypes.size === 0) return [];
    const rows = await query<{ organization_id: string; instance_type: string; pool_id: string }>(
      `SELECT organization_id, instance_type, pool_id FROM pool_instance_types WHERE organization_id = ANY($1::text[])`,
      [[...this.poolsByOrganization.keys()]],
    );
    const issues: RecordIssue[] = [];
    for (const row of rows) {
      const claim = this.instanceTypes.get(`${row.organization_id}${SEP}${row.instance_type}`);
      const ownerRedefined = this.poolsByOrganization.get(row.organization_id)?.has(row.pool_id);
      if (!claim || claim.poolId === row.pool_id || ownerRedefined) continue;
      issues.push({
        section: 'pools',
        location: claim.location,
        message: `instance type '${row.instance_type}' already belongs to pool '${row.pool_id}' of organization '${row.organization_id}' in the database (an instance type belongs to at most one pool)`,
      });
    }
    return issues;
  }
}

function missingMessage(reference: PendingReference, otherOrganization: string | undefined): string {
  const { target, id, organizationId } = reference;
  if (target === 'organization')
    return `organization '${id}' does not exist (neither in the file nor in the database)`;
  if (otherOrganization && otherOrganization !== organizationId) {
    return `${target} '${id}' belongs to organization '${otherOrganization}', not '${organizationId}'`;
  }
  return `${target} '${id}' does not exist in organization '${organizationId}' (neither in the file nor in the database)`;
}
