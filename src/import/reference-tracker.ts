import { ImportRecord, SECTIONS } from './import-sections';

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
type Kind = Target | 'allocation' | 'member' | 'price' | 'carbon intensity' | 'instance type';

const MAX_USERS_PER_REFERENCE = 20;
const SECTION_COUNT = SECTIONS.length;
/** Joins organization and id in the short-lived sets of database answers. */
const SEP = '\u0000';

/** Identifiers by kind, then organization: no long concatenated keys, one short string per id. */
class IdMap<V> {
  private readonly byKind = new Map<Kind, Map<string, Map<string, V>>>();

  get(kind: Kind, organizationId: string, id: string): V | undefined {
    return this.byKind.get(kind)?.get(organizationId)?.get(id);
  }

  set(kind: Kind, organizationId: string, id: string, value: V): void {
    let byOrganization = this.byKind.get(kind);
    if (!byOrganization) this.byKind.set(kind, (byOrganization = new Map()));
    let ids = byOrganization.get(organizationId);
    if (!ids) byOrganization.set(organizationId, (ids = new Map()));
    ids.set(id, value);
  }

  delete(kind: Kind, organizationId: string, id: string): void {
    this.byKind.get(kind)?.get(organizationId)?.delete(id);
  }

  *entries(): Generator<[Kind, string, string, V]> {
    for (const [kind, byOrganization] of this.byKind) {
      for (const [organizationId, ids] of byOrganization) {
        for (const [id, value] of ids) yield [kind, organizationId, id, value];
      }
    }
  }
}

interface PendingReference {
  target: Target;
  organizationId: string;
  id: string;
  users: RecordRef[];
}

type RecordRef = Pick<RecordIssue, 'section' | 'location'>;

/** A record as one number (no object per user): its location and its section's index. */
function encodeUser(record: RecordRef): number {
  return record.location * SECTION_COUNT + SECTIONS.indexOf(record.section);
}

function decodeUser(user: number): RecordRef {
  const section = SECTIONS[user % SECTION_COUNT];
  return { section, location: (user - (user % SECTION_COUNT)) / SECTION_COUNT };
}

/**
 * Remembers every identifier the file declares, and the references the file makes to identifiers it
 * has not declared (so far: NDJSON lines and document sections may come in any order), so that
 * references can be checked once the whole file has been read, against the file and then the
 * database. A reference to something already declared costs nothing, and a declaration drops the
 * references waiting for it; what stays is one number per identifier and per waiting record (at most
 * MAX_USERS_PER_REFERENCE of them per identifier, enough to report).
 */
export class ReferenceTracker {
  private readonly declared = new IdMap<number>();
  /** Records naming an identifier not declared (yet): one encoded user, or the first few. */
  private readonly pending = new IdMap<number | number[]>();
  /** organization → instance type → the pool that claims it in the file. */
  private readonly instanceTypes = new Map<string, Map<string, { poolId: string; location: number }>>();
  private readonly poolsByOrganization = new Map<string, Set<string>>();
  /** initiative or pool id → an organization the file declares it in (for "belongs to another organization"). */
  private readonly fileOwners = new Map<'initiative' | 'pool', Map<string, string>>([
    ['initiative', new Map()],
    ['pool', new Map()],
  ]);

  /** Whether the file prices anything (its periods and currencies are then checked against the database). */
  private readonly pricedOrganizations = new Set<string>();
  /** Whether the file gives carbon intensities (their periods are then checked against the database). */
  private hasCarbonIntensities = false;

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
      case 'prices':
        this.reference('organization', row.organization_id, row.organization_id, record);
        this.pricedOrganizations.add(row.organization_id);
        return this.declare(
          'price',
          row.organization_id,
          `${record.row.instance_type} from ${record.row.effective_from.toISOString()}`,
          record.location,
        );
      case 'carbon_intensity':
        this.reference('organization', row.organization_id, row.organization_id, record);
        this.hasCarbonIntensities = true;
        return this.declare(
          'carbon intensity',
          row.organization_id,
          `${record.row.cluster_id} from ${record.row.effective_from.toISOString()}`,
          record.location,
        );
      case 'instance_types':
        this.reference('organization', row.organization_id, row.organization_id, record);
        return this.declare('instance type', row.organization_id, record.row.instance_type, record.location);
      case 'workloads':
        this.reference('initiative', row.organization_id, record.row.initiative_id, record);
        return this.declare('workload', row.organization_id, record.row.workload_id, record.location);
      case 'metric_samples':
        this.reference('workload', row.organization_id, record.row.workload_id, record);
        return null;
    }
  }

  private declare(kind: Kind, organizationId: string, id: string, location: number) {
    const previous = this.declared.get(kind, organizationId, id);
    if (previous !== undefined) {
      return {
        message: `repeats the ${kind} '${id}' of organization '${organizationId}'`,
        seeAlso: previous,
      };
    }
    this.declared.set(kind, organizationId, id, location);
    this.pending.delete(kind, organizationId, id);
    if (kind === 'initiative' || kind === 'pool') this.fileOwners.get(kind)?.set(id, organizationId);
    return null;
  }

  private declarePool(record: Extract<ImportRecord, { section: 'pools' }>) {
    const { organization_id: organizationId, pool_id: poolId, instance_types: types } = record.row;
    const duplicate = this.declare('pool', organizationId, poolId, record.location);
    if (duplicate) return duplicate;
    const pools = this.poolsByOrganization.get(organizationId) ?? new Set<string>();
    pools.add(poolId);
    this.poolsByOrganization.set(organizationId, pools);
    const claims =
      this.instanceTypes.get(organizationId) ?? new Map<string, { poolId: string; location: number }>();
    this.instanceTypes.set(organizationId, claims);
    for (const instanceType of types) {
      const owner = claims.get(instanceType);
      if (owner) {
        return {
          message: `instance type '${instanceType}' is already in pool '${owner.poolId}' of organization '${organizationId}' (an instance type belongs to at most one pool)`,
          seeAlso: owner.location,
        };
      }
      claims.set(instanceType, { poolId, location: record.location });
    }
    return null;
  }

  private reference(target: Target, organizationId: string, id: string, record: ImportRecord): void {
    if (this.declared.get(target, organizationId, id) !== undefined) return;
    const users = this.pending.get(target, organizationId, id);
    const user = encodeUser(record);
    if (users === undefined) this.pending.set(target, organizationId, id, user);
    else if (typeof users === 'number') this.pending.set(target, organizationId, id, [users, user]);
    else if (users.length < MAX_USERS_PER_REFERENCE) users.push(user);
  }

  /** The references still waiting, with their users decoded. */
  private *unresolved(): Generator<PendingReference> {
    for (const [target, organizationId, id, users] of this.pending.entries()) {
      const list = typeof users === 'number' ? [users] : users;
      yield { target: target as Target, organizationId, id, users: list.map(decodeUser) };
    }
  }

  /**
   * Issues for references that neither the file nor the database resolves, and for instance types
   * the file gives to a pool while the database keeps them in another pool the file does not redefine.
   */
  async check(query: QueryFn): Promise<RecordIssue[]> {
    const unresolved = [...this.unresolved()];
    const found = await this.findInDatabase(query, unresolved);
    const issues: RecordIssue[] = [];
    for (const reference of unresolved) {
      const key = `${reference.organizationId}${SEP}${reference.id}`;
      if (found[reference.target].has(key)) continue;
      const owner =
        this.fileOwner(reference.target, reference.id) ?? found.owners[reference.target].get(reference.id);
      const message = missingMessage(reference, owner);
      for (const user of reference.users) issues.push({ ...user, message });
    }
    issues.push(...(await this.instanceTypeIssues(query)));
    if (this.pricedOrganizations.size > 0) issues.push(...(await priceIssues(query)));
    if (this.hasCarbonIntensities) issues.push(...(await carbonIntensityIssues(query)));
    return issues.sort((a, b) => a.location - b.location);
  }

  private fileOwner(target: Target, id: string): string | undefined {
    return target === 'initiative' || target === 'pool' ? this.fileOwners.get(target)?.get(id) : undefined;
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
      const claim = this.instanceTypes.get(row.organization_id)?.get(row.instance_type);
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

const PERIOD_TEXT = (alias: string) =>
  `to_char(${alias}.effective_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' to ' ||
   coalesce(to_char(${alias}.effective_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'open end')`;

/** Records of periods keyed by organization, one column and their start: prices and carbon intensities. */
interface PeriodTable {
  stage: string;
  stored: string;
  /** The column a period belongs to, and what to call it and a record in a message. */
  key: string;
  keyName: string;
  recordName: string;
}

const PRICE_PERIODS: PeriodTable = {
  stage: 'stage_prices',
  stored: 'gpu_prices',
  key: 'instance_type',
  keyName: 'instance type',
  recordName: 'price',
};

const CARBON_INTENSITY_PERIODS: PeriodTable = {
  stage: 'stage_carbon_intensity',
  stored: 'carbon_intensities',
  key: 'cluster_id',
  keyName: 'cluster',
  recordName: 'carbon intensity',
};

/** A stored period that the file re-sends (same key) is replaced, not compared. */
function notResent({ stage, key }: PeriodTable): string {
  return `NOT EXISTS (SELECT 1 FROM ${stage} s WHERE s.organization_id = a.organization_id
                     AND s.${key} = a.${key} AND s.effective_from = a.effective_from)`;
}

/**
 * Staged periods (after the writer lock) that overlap another of the same key, in the file (naming
 * both records) or stored (naming the stored period): location, see_also and message columns.
 * Periods are half-open: one may end where the next begins.
 */
function periodOverlapSql(table: PeriodTable): string {
  const { stage, stored, key, keyName, recordName } = table;
  const overlaps = `(a.effective_to IS NULL OR a.effective_to > b.effective_from)
      AND (b.effective_to IS NULL OR b.effective_to > a.effective_from)`;
  return `SELECT b.loc AS location, a.loc AS see_also,
        format('its period overlaps the ${recordName} of ${keyName} %L from %s (periods of one ${keyName} must not overlap)',
               b.${key}, ${PERIOD_TEXT('a')}) AS message
      FROM ${stage} a JOIN ${stage} b
        ON a.organization_id = b.organization_id AND a.${key} = b.${key} AND a.loc < b.loc
      WHERE ${overlaps}
    UNION ALL
    SELECT b.loc, NULL,
        format('its period overlaps the stored ${recordName} of ${keyName} %L from %s in organization %L (periods of one ${keyName} must not overlap; re-send that period with an earlier effective_to)',
               b.${key}, ${PERIOD_TEXT('a')}, b.organization_id)
      FROM ${stored} a JOIN ${stage} b
        ON a.organization_id = b.organization_id AND a.${key} = b.${key}
      WHERE ${overlaps} AND ${notResent(table)}`;
}

type IssueRow = { location: number; see_also: number | null; message: string };

function periodIssues(section: 'prices' | 'carbon_intensity', rows: IssueRow[]): RecordIssue[] {
  return rows.map((row) => ({
    section,
    location: row.location,
    message: row.message,
    ...(row.see_also === null ? {} : { seeAlso: row.see_also }),
  }));
}

/**
 * Staged prices (stage_prices, after the writer lock) whose period overlaps another of the same
 * instance type, in the file or stored, and prices in a second currency of their organization.
 */
async function priceIssues(query: QueryFn): Promise<RecordIssue[]> {
  const rows = await query<IssueRow>(
    `${periodOverlapSql(PRICE_PERIODS)}
    UNION ALL
    SELECT b.loc, a.loc, format('currency %s differs from %s (one currency per organization)', b.currency, a.currency)
      FROM stage_prices b
      JOIN LATERAL (SELECT loc, currency FROM stage_prices f WHERE f.organization_id = b.organization_id
                    ORDER BY loc LIMIT 1) a ON a.currency <> b.currency
    UNION ALL
    SELECT b.loc, NULL,
        format('currency %s differs from %s, the currency of the stored prices of organization %L (one currency per organization)',
               b.currency, a.currency, b.organization_id)
      FROM stage_prices b
      JOIN LATERAL (SELECT currency FROM gpu_prices a WHERE a.organization_id = b.organization_id AND ${notResent(PRICE_PERIODS)}
                    LIMIT 1) a ON a.currency <> b.currency
    ORDER BY 1
    LIMIT 100`,
    [],
  );
  return periodIssues('prices', rows);
}

/** Staged carbon intensities whose period overlaps another of the same cluster, in the file or stored. */
async function carbonIntensityIssues(query: QueryFn): Promise<RecordIssue[]> {
  const rows = await query<IssueRow>(
    `${periodOverlapSql(CARBON_INTENSITY_PERIODS)}
    ORDER BY 1
    LIMIT 100`,
    [],
  );
  return periodIssues('carbon_intensity', rows);
}
