import type { DataSource } from 'typeorm';
import type { DatabaseStallWatch } from '../../../src/database/database-stall-watch';
import type { AuthScope } from '../../../src/common/auth/auth-scope';
import { ScopedDatabase } from '../../../src/common/database/scoped-database';
import {
  constantStatement,
  initiativeScopeSql,
  organizationStatement,
  preparedStatement,
  type ScopedStatement,
  scopedStatement,
} from '../../../src/common/database/scoped-statement';

const admin: AuthScope = {
  organizationId: 'org-a',
  role: 'ORG_ADMIN',
  initiativeIds: 'all',
  credentialKey: 'k',
  subject: 's',
};
const member: AuthScope = { ...admin, role: 'MEMBER', initiativeIds: ['init-1', 'init-2'] };

describe('scopedStatement', () => {
  it("refuses a statement without the caller's organization as $1", () => {
    const forgot = () => scopedStatement(admin, 'SELECT * FROM workloads WHERE workload_id = $1', ['wl-1']);
    expect(forgot).toThrow("must take the caller's organization as $1");
    const other = () =>
      scopedStatement(admin, 'SELECT * FROM workloads WHERE organization_id = $1', ['org-b']);
    expect(other).toThrow("must take the caller's organization as $1");
    const unused = () => scopedStatement(admin, 'SELECT * FROM workloads', ['org-a']);
    expect(unused).toThrow("must take the caller's organization as $1");
  });

  it("refuses a restricted caller's statement that leaves out their initiatives", () => {
    const text = 'SELECT * FROM workloads WHERE organization_id = $1';
    expect(() => scopedStatement(member, text, ['org-a'])).toThrow("must take the caller's initiatives");
    // Passed but never referenced ($20 is not $2) counts as left out.
    expect(() => scopedStatement(member, `${text} AND $20 IS NULL`, ['org-a', ['init-1', 'init-2']])).toThrow(
      "must take the caller's initiatives",
    );
    expect(() =>
      scopedStatement(member, `${text} AND initiative_id = ANY($2)`, ['org-a', ['init-1']]),
    ).toThrow("must take the caller's initiatives");
  });

  it("refuses the caller's initiatives anywhere but inside the scope helper's forms", () => {
    const values = ['org-a', ['init-1', 'init-2']];
    const base = 'SELECT * FROM workloads WHERE organization_id = $1';
    const scoped = `${base} AND ${initiativeScopeSql('initiative_id', '$2')}`;
    const refused = [
      `${base} AND initiative_id = ANY($2::text[])`,
      `${scoped} OR $2 IS NOT NULL`,
      `${scoped} OR TRUE`,
      `${base} OR ${initiativeScopeSql('initiative_id', '$2')}`,
      `${scoped} AND cardinality($2::text[]) > 0`,
      'SELECT * FROM unnest($2::text[]) AS scoped(initiative_id), workloads WHERE organization_id = $1',
    ];
    for (const text of refused) {
      expect(() => scopedStatement(member, text, values)).toThrow(
        "must take the caller's initiatives through initiativeScopeSql",
      );
    }
    const perInitiative = `SELECT w.* FROM unnest($2::text[]) AS scoped(initiative_id)
      CROSS JOIN LATERAL (SELECT * FROM workloads w WHERE organization_id = $1
        AND w.initiative_id = scoped.initiative_id LIMIT 5) AS w`;
    expect(scopedStatement(member, perInitiative, values).text).toBe(perInitiative);
  });

  it('accepts the organization at $1 and, for a restricted caller, their initiatives', () => {
    const text = `SELECT * FROM workloads WHERE organization_id = $1 AND ${initiativeScopeSql('initiative_id', '$2')}`;
    const statement = scopedStatement(member, text, ['org-a', ['init-1', 'init-2']]);
    expect({ text: statement.text, values: statement.values }).toEqual({
      text,
      values: ['org-a', ['init-1', 'init-2']],
    });
    expect(
      scopedStatement(admin, 'SELECT 1 FROM workloads WHERE organization_id = $1', ['org-a']).values,
    ).toEqual(['org-a']);
  });

  it('takes only the organization for rows of the organization itself', () => {
    const text = 'SELECT timezone FROM organizations WHERE organization_id = $1';
    expect(organizationStatement(member, text, ['org-a']).text).toBe(text);
    expect(() => organizationStatement(member, text, ['org-b'])).toThrow("caller's organization");
  });

  it("refuses an organization statement that reads a tenant's rows or credentials", () => {
    const workloads =
      'SELECT count(*) FROM organizations o JOIN workloads w USING (organization_id) WHERE o.organization_id = $1';
    expect(() => organizationStatement(member, workloads, ['org-a'])).toThrow('must not read workloads');
    const listed = 'SELECT 1 FROM organizations, metric_samples WHERE organizations.organization_id = $1';
    expect(() => organizationStatement(admin, listed, ['org-a'])).toThrow('must not read metric_samples');
    const tokens = 'SELECT token_hash FROM api_tokens WHERE organization_id = $1';
    expect(() => organizationStatement(admin, tokens, ['org-a'])).toThrow('must not read api_tokens');
  });

  it('lets a statement without a scope read no table', () => {
    expect(constantStatement('SELECT 0::float8 AS total_count').values).toEqual([]);
    expect(() => constantStatement('SELECT count(*) FROM workloads')).toThrow('must not read a table');
  });
});

describe("scopedStatement: every table tied to the caller's organization", () => {
  const scoped = (text: string) => () => scopedStatement(admin, text, ['org-a']);
  const refusal = (table: string) =>
    `A scoped statement must tie ${table}.organization_id to the caller's organization ($1)`;

  it.each([
    ['a qualified equality', 'SELECT w.name FROM workloads w WHERE w.status = $2 AND w.organization_id = $1'],
    [
      'an unqualified one in its own SELECT',
      'DELETE FROM alert_states WHERE organization_id = $1 AND ends_at IS NULL',
    ],
    [
      'a join to a tied table',
      `SELECT w.name, i.name FROM workloads w
       JOIN initiatives i ON i.organization_id = w.organization_id AND i.initiative_id = w.initiative_id
       WHERE w.organization_id = $1`,
    ],
    [
      'a chain of joins written in any order',
      `SELECT 1 FROM allocations a
       JOIN initiatives i ON a.organization_id = i.organization_id AND a.initiative_id = i.initiative_id
       JOIN capacity_pools p ON $1 = p.organization_id AND p.organization_id = a.organization_id`,
    ],
    [
      'JOIN ... USING (organization_id, ...)',
      `SELECT w.name, m.sample_count FROM workloads w JOIN metric_aggregates m USING (organization_id, workload_id)
       WHERE w.organization_id = $1`,
    ],
    [
      'a correlated subquery, tied to its outer row',
      `SELECT w.workload_id, a.sample_count FROM workloads w
       LEFT JOIN LATERAL (SELECT m.sample_count FROM metric_aggregates m
         WHERE m.organization_id = w.organization_id AND m.workload_id = w.workload_id OFFSET 0) AS a ON true
       WHERE w.organization_id = $1`,
    ],
    [
      "a subquery's renamed output column",
      `SELECT w.workload_id FROM workloads w
       LEFT JOIN (SELECT m.organization_id AS aggregate_organization_id, m.workload_id AS aggregate_workload_id
                  FROM metric_aggregates m WHERE m.status = 'running') AS a
         ON a.aggregate_organization_id = w.organization_id AND a.aggregate_workload_id = w.workload_id
       WHERE w.organization_id = $1 AND w.status = 'running'`,
    ],
    [
      "a CTE's output column",
      `WITH page AS MATERIALIZED (SELECT w.organization_id, w.initiative_id FROM workloads w WHERE w.organization_id = $1)
       SELECT i.name FROM page JOIN initiatives i ON i.organization_id = page.organization_id
         AND i.initiative_id = page.initiative_id`,
    ],
    [
      'an inner join to a tied table',
      `SELECT w.workload_id FROM workloads w
       JOIN gpu_prices p ON p.organization_id = $1 AND p.organization_id = w.organization_id`,
    ],
    [
      'a parenthesised condition among the ANDs',
      'SELECT 1 FROM workloads w WHERE (w.status = $2 AND (w.organization_id = $1)) AND w.gpu_count > 0',
    ],
    [
      'an INSERT of $1 as the organization',
      `INSERT INTO alert_states AS a (organization_id, fingerprint, starts_at) SELECT $1, f, $2 FROM unnest($3::text[]) AS f
       ON CONFLICT (organization_id, fingerprint) DO UPDATE SET starts_at = excluded.starts_at
       WHERE a.ends_at IS NOT NULL OR a.starts_at IS DISTINCT FROM excluded.starts_at`,
    ],
    [
      'names in comments and literals, which read nothing',
      `SELECT 'workloads' AS kind -- no initiatives here
       FROM workloads w WHERE w.organization_id = $1`,
    ],
  ])('accepts a table tied by %s', (_, text) => {
    expect(scoped(text)().text).toBe(text);
  });

  it.each([
    [
      'a join that drops organization_id',
      `SELECT w.name, i.name FROM workloads w JOIN initiatives i ON i.initiative_id = w.initiative_id
       WHERE w.organization_id = $1`,
      'initiatives',
    ],
    [
      'a join to a table that is not tied itself',
      `SELECT 1 FROM workloads w JOIN metric_aggregates m ON m.organization_id = w.organization_id
       WHERE w.workload_id = $2 AND $1::text IS NOT NULL`,
      'workloads',
    ],
    [
      'a tie OR-ed away',
      'SELECT 1 FROM workloads w WHERE w.organization_id = $1 OR w.status = $2',
      'workloads',
    ],
    ['a tie negated', 'SELECT 1 FROM workloads w WHERE NOT (w.organization_id = $1)', 'workloads'],
    [
      'an equality that filters nothing',
      'SELECT w.organization_id = $1 AS mine FROM workloads w',
      'workloads',
    ],
    [
      "a subquery's condition, which leaves the outer rows free",
      `SELECT w.workload_id FROM workloads w
       LEFT JOIN LATERAL (SELECT m.sample_count FROM metric_aggregates m
         WHERE m.organization_id = $1 AND m.organization_id = w.organization_id) AS a ON true`,
      'workloads',
    ],
    [
      'the ON of a LEFT JOIN, which leaves the rows before it free',
      `SELECT w.workload_id FROM workloads w
       LEFT JOIN gpu_prices p ON p.organization_id = $1 AND p.organization_id = w.organization_id`,
      'workloads',
    ],
    [
      "a tie inside a function's arguments",
      'SELECT 1 FROM workloads w WHERE coalesce(w.organization_id = $1, true)',
      'workloads',
    ],
    [
      'the same alias tied in another subquery only',
      `SELECT * FROM (SELECT w.workload_id FROM workloads w WHERE w.organization_id = $1) AS a
       CROSS JOIN LATERAL (SELECT w.name FROM workloads w WHERE w.workload_id = a.workload_id) AS b`,
      'workloads',
    ],
    [
      'one branch of a UNION',
      `SELECT w.workload_id FROM workloads w WHERE w.organization_id = $1
       UNION ALL SELECT w.workload_id FROM workloads w WHERE w.status = 'running'`,
      'workloads',
    ],
    [
      'a CTE that reads other organizations',
      `WITH page AS (SELECT w.organization_id, w.initiative_id FROM workloads w WHERE w.status = $2)
       SELECT i.name FROM page JOIN initiatives i ON i.organization_id = page.organization_id AND $1::text IS NOT NULL`,
      'workloads',
    ],
    [
      'an INSERT of another organization',
      'INSERT INTO alert_states (organization_id, fingerprint) SELECT $2, f FROM unnest($3::text[]) AS f WHERE $1 IS NOT NULL',
      'alert_states',
    ],
    [
      'a table named where the check cannot tell how it is read',
      'SELECT 1 FROM public.workloads WHERE organization_id = $1',
      'workloads',
    ],
    [
      'a price joined by instance type only',
      `SELECT w.workload_id, p.price_per_gpu_hour FROM workloads w
       JOIN gpu_prices p ON p.instance_type = w.instance_type WHERE w.organization_id = $1`,
      'gpu_prices',
    ],
  ])('refuses %s', (_, text, table) => {
    expect(scoped(text)).toThrow(refusal(table));
  });

  it("refuses an organization statement whose organization rows are not all the caller's", () => {
    const text = `SELECT p.pool_id, t.instance_type FROM capacity_pools p
      JOIN pool_instance_types t ON t.pool_id = p.pool_id WHERE p.organization_id = $1`;
    expect(() => organizationStatement(admin, text, ['org-a'])).toThrow(refusal('pool_instance_types'));
    const tied = text.replace(
      't.pool_id = p.pool_id',
      't.organization_id = p.organization_id AND t.pool_id = p.pool_id',
    );
    expect(organizationStatement(admin, tied, ['org-a']).text).toBe(tied);
  });
});

describe('preparedStatement', () => {
  const text = 'SELECT 1 AS n FROM workloads WHERE organization_id = $1';

  it('names a statement by its text, whatever its values', () => {
    const one = preparedStatement(scopedStatement(admin, text, ['org-a']));
    const other = preparedStatement(scopedStatement({ ...admin, organizationId: 'org-b' }, text, ['org-b']));
    expect(one.name).toMatch(/^gpucap_[0-9a-f]{24}$/);
    expect(other.name).toBe(one.name);
    expect(other.values).toEqual(['org-b']);
    const longer = preparedStatement(scopedStatement(admin, `${text} LIMIT 1`, ['org-a']));
    expect(longer.name).not.toBe(one.name);
  });

  it('prepares only issued statements', () => {
    const forged = { text, values: ['org-a'] } as unknown as ScopedStatement;
    expect(() => preparedStatement(forged)).toThrow(
      'Only statements made by scopedStatement can be prepared',
    );
  });
});

describe('ScopedDatabase.run', () => {
  const query = jest.fn().mockResolvedValue([{ n: 1 }]);
  const poolQuery = jest.fn().mockResolvedValue({ rows: [{ n: 2 }] });
  const passThrough = { watch: <T>(work: () => Promise<T>) => work() } as unknown as DatabaseStallWatch;
  const database = new ScopedDatabase(
    { query, driver: { master: { query: poolQuery } } } as unknown as DataSource,
    passThrough,
  );

  it('runs a prepared statement by its name on the same pool', async () => {
    const text = 'SELECT 2 AS n FROM workloads WHERE organization_id = $1';
    const statement = preparedStatement(scopedStatement(admin, text, ['org-a']));
    await expect(database.run(statement)).resolves.toEqual([{ n: 2 }]);
    expect(poolQuery).toHaveBeenCalledWith({ name: statement.name, text, values: ['org-a'] });
    expect(query).not.toHaveBeenCalled();
  });

  it('runs a scoped statement with its parameters', async () => {
    const text = 'SELECT 1 AS n FROM workloads WHERE organization_id = $1';
    await expect(database.run(scopedStatement(admin, text, ['org-a']))).resolves.toEqual([{ n: 1 }]);
    expect(query).toHaveBeenCalledWith(text, ['org-a']);
  });

  it('refuses a plain {text, values}, at compile time and at run time', async () => {
    const plain = { text: 'SELECT * FROM workloads', values: [] };
    // @ts-expect-error a statement not made from an AuthScope does not type-check
    await expect(database.run(plain)).rejects.toThrow('Only statements made by scopedStatement can run');
    const forged = plain as unknown as ScopedStatement;
    await expect(database.run(forged)).rejects.toThrow('Only statements made by scopedStatement can run');
    expect(query).toHaveBeenCalledTimes(1);
  });
});
