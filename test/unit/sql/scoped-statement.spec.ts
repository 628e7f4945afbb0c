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
