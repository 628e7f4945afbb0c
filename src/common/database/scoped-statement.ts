import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type AuthScope, scopedInitiativeIds } from '../auth/auth-scope';
import { untiedOrganizationTable } from '../../database/organization-ties';

declare const scopedBrand: unique symbol;

/**
 * A parameterised statement known to carry the caller's scope: only the constructors below make one,
 * and ScopedDatabase runs nothing else, so a tenant query that forgets the scope does not compile.
 */
export interface ScopedStatement {
  readonly text: string;
  readonly values: unknown[];
  /** Set by preparedStatement: the name it is kept under on each connection. */
  readonly name?: string;
  readonly [scopedBrand]: true;
}

/** Statements made here; ScopedDatabase refuses one forged with a cast. */
const issued = new WeakSet<object>();

export function isIssued(statement: ScopedStatement): boolean {
  return issued.has(statement);
}

/**
 * The one predicate that limits rows to the caller's initiatives: `column` within the array bound at
 * `parameter`. A NULL array means every initiative, so a statement whose text must not vary by caller
 * binds NULL for an organization admin; PostgreSQL folds the test away when it plans with the value.
 */
export function initiativeScopeSql(column: string, parameter: string): string {
  return `(${parameter}::text[] IS NULL OR ${column} = ANY (${parameter}::text[]))`;
}

/**
 * The caller's initiatives as rows `scoped(initiative_id)`, for a statement that reads each
 * initiative's index range in turn (LATERAL) and joins it with `<alias>.initiative_id = scoped.initiative_id`.
 */
export function scopedInitiativeRowsSql(parameter: string): string {
  return `unnest(${parameter}::text[]) AS scoped(initiative_id)`;
}

/**
 * A statement over rows that belong to initiatives (workloads, samples, rollups, allocations): the
 * organization must be $1, every table it reads must have its organization_id tied to $1
 * (organization-ties.ts: directly, or through joins, CTEs and subqueries to a tied one) and, for a
 * caller limited to some initiatives, that list must be a parameter used only inside
 * initiativeScopeSql's predicate (AND-ed into a WHERE, never OR-ed) or scopedInitiativeRowsSql's
 * rows. A check of the text, against slips rather than intent: the scope-walk e2e test is what
 * proves no answer leaves the scope.
 */
export function scopedStatement(scope: AuthScope, text: string, values: unknown[]): ScopedStatement {
  assertOrganizationAtFirst(scope, text, values);
  const initiatives = scopedInitiativeIds(scope);
  if (initiatives !== null) {
    const index = values.findIndex((value) => isDeepStrictEqual(value, [...initiatives]));
    if (index < 0) throw new Error("A scoped statement must take the caller's initiatives as a parameter");
    assertInitiativesOnlyInScopeForms(text, index + 1);
  }
  assertOrganizationTied(text);
  return issue(text, values);
}

/**
 * Every table, by whose rows they are. A tenant table's rows belong to initiatives and are read only
 * through scopedStatement; an organization table's rows are the organization's own (settings, pools,
 * how far sync has read) and any member may read them; the rest (credentials, bookkeeping) no tenant
 * statement reads.
 * test/e2e/database/table-classes.e2e-spec.ts fails when a migration adds a table missing here.
 */
export const TENANT_TABLES = [
  'alert_states',
  'allocations',
  'capacity_usage_daily',
  'capacity_usage_hourly',
  'initiatives',
  'metric_aggregates',
  'metric_ranked_totals',
  'metric_sample_days',
  'metric_sample_hours',
  'metric_samples',
  'workload_period_rollups',
  'workload_period_waits',
  'workload_sample_summaries',
  'workload_status_totals',
  'workloads',
] as const;
export const ORGANIZATION_TABLES = [
  'capacity_pools',
  'carbon_intensities',
  'gpu_prices',
  'instance_type_gpus',
  'organizations',
  'pool_instance_types',
  'sample_retention',
  'sample_seal_watermarks',
  'sync_watermarks',
] as const;
export const UNREADABLE_TABLES = [
  'api_tokens',
  'members',
  'organization_data_versions',
  'schema_backfills',
  'schema_definitions',
  'schema_migrations',
] as const;

const NOT_ORGANIZATION_TABLE = new RegExp(
  `\\b(${[...TENANT_TABLES, ...UNREADABLE_TABLES].join('|')})\\b`,
  'i',
);

/**
 * A statement over rows of the organization itself (its settings, its pools): only $1 is required,
 * so it must name no table whose rows belong to initiatives or hold credentials, and it must tie
 * every table it reads to $1 like scopedStatement.
 */
export function organizationStatement(scope: AuthScope, text: string, values: unknown[]): ScopedStatement {
  assertOrganizationAtFirst(scope, text, values);
  const named = NOT_ORGANIZATION_TABLE.exec(text);
  if (named) throw new Error(`An organization statement must not read ${named[1]}: use scopedStatement`);
  assertOrganizationTied(text);
  return issue(text, values);
}

/** A statement that reads no table (an answer known without data) needs no scope. */
export function constantStatement(text: string): ScopedStatement {
  if (/\bfrom\b/i.test(text)) throw new Error('A constant statement must not read a table');
  return issue(text, []);
}

/**
 * The same statement, run as a named prepared statement: parsed and planned once per connection,
 * after PostgreSQL's five custom plans a generic one. Only for statements measured to gain and whose
 * generic plan is as good for every parameter value (bench/prepared-statements.ts: the detail and
 * series reads), and of a fixed text: every distinct text is kept on every
 * connection, so a builder whose text varies with the filters must not use it.
 */
export function preparedStatement(statement: ScopedStatement): ScopedStatement {
  if (!isIssued(statement)) throw new Error('Only statements made by scopedStatement can be prepared');
  return issue(statement.text, statement.values, preparedName(statement.text));
}

/** The few fixed texts that are prepared, each named once rather than hashed on every request. */
const preparedNames = new Map<string, string>();

function preparedName(text: string): string {
  let name = preparedNames.get(text);
  if (name === undefined) {
    name = `gpucap_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return name;
}

function assertOrganizationAtFirst(scope: AuthScope, text: string, values: unknown[]): void {
  if (values[0] !== scope.organizationId || !usesParameter(text, 1)) {
    throw new Error("A scoped statement must take the caller's organization as $1");
  }
}

function assertInitiativesOnlyInScopeForms(text: string, position: number): void {
  const parameter = `\\$${position}(?!\\d)`;
  const predicate = new RegExp(
    `\\b(WHERE|AND)\\s+\\(${parameter}::text\\[\\] IS NULL OR [a-z_][\\w.]* = ANY \\(${parameter}::text\\[\\]\\)\\)(?!\\s*OR\\b)`,
    'gi',
  );
  const rows = new RegExp(`\\bunnest\\(${parameter}::text\\[\\]\\) AS scoped\\(initiative_id\\)`, 'g');
  const joinsRows = /\.initiative_id = scoped\.initiative_id\b/.test(text);
  const rest = text.replace(predicate, '$1 TRUE').replace(rows, joinsRows ? 'rows' : '$&');
  if (rest === text || new RegExp(parameter).test(rest)) {
    throw new Error(
      "A scoped statement must take the caller's initiatives through initiativeScopeSql or scopedInitiativeRowsSql",
    );
  }
}

/** Every table whose rows carry an organization_id. */
const ORGANIZATION_ROW_TABLES: ReadonlySet<string> = new Set([...TENANT_TABLES, ...ORGANIZATION_TABLES]);

function assertOrganizationTied(text: string): void {
  const table = untiedOrganizationTable(text, ORGANIZATION_ROW_TABLES);
  if (table !== undefined) {
    throw new Error(`A scoped statement must tie ${table}.organization_id to the caller's organization ($1)`);
  }
}

function usesParameter(text: string, position: number): boolean {
  return new RegExp(`\\$${position}(?!\\d)`).test(text);
}

function issue(text: string, values: unknown[], name?: string): ScopedStatement {
  const statement = (name ? { text, values, name } : { text, values }) as ScopedStatement;
  issued.add(statement);
  return statement;
}
