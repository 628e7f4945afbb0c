import { Client } from 'pg';
import {
  ORGANIZATION_TABLES,
  TENANT_TABLES,
  UNREADABLE_TABLES,
} from '../../../src/common/database/scoped-statement';

/**
 * The scoped layer decides what an organization statement may read from its list of tables: a table
 * a migration adds must be placed there (tenant, organization, or unreadable) before anything ships.
 */
describe('table classes of the scoped layer', () => {
  it('names every table of the migrated schema once', async () => {
    const client = new Client({ connectionString: process.env.GPUCAP_TEST_DATABASE_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string; has_initiative: boolean }>(
        `SELECT c.relname AS name,
                EXISTS (SELECT 1 FROM pg_attribute a
                        WHERE a.attrelid = c.oid AND a.attname = 'initiative_id' AND NOT a.attisdropped) AS has_initiative
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') AND NOT c.relispartition
         ORDER BY 1`,
      );
      const classified = [...TENANT_TABLES, ...ORGANIZATION_TABLES, ...UNREADABLE_TABLES] as string[];
      expect(rows.map((row) => row.name).filter((name) => !classified.includes(name))).toEqual([]);
      expect(new Set(classified).size).toBe(classified.length);
      // A table with an initiative column holds a team's rows: never an organization table.
      const organizationWithInitiative = rows.filter(
        (row) => row.has_initiative && (ORGANIZATION_TABLES as readonly string[]).includes(row.name),
      );
      expect(organizationWithInitiative).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
