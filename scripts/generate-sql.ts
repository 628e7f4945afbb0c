import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatedSqlFiles, SCHEMA_FILE } from './sql-catalog';

/** Rewrites docs/sql/ from the builders: `npm run sql:generate` (schema.sql has its own command). */
const directory = join(__dirname, '..', 'docs', 'sql');
const files = generatedSqlFiles();
mkdirSync(directory, { recursive: true });
for (const stale of readdirSync(directory).filter(
  (name) => name.endsWith('.sql') && name !== SCHEMA_FILE && !(name in files),
)) {
  rmSync(join(directory, stale));
}
for (const [name, content] of Object.entries(files)) writeFileSync(join(directory, name), content);
console.log(`docs/sql: ${Object.keys(files).join(', ')}`);
