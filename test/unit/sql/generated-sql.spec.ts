import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generatedSqlFiles, HEADER, SCHEMA_FILE } from '../../../scripts/sql-catalog';

const DIRECTORY = join(__dirname, '..', '..', '..', 'docs', 'sql');
const HINT = 'docs/sql/ is out of date: run `npm run sql:generate` and commit the result';

describe('docs/sql (generated SQL of every tenant endpoint)', () => {
  const files = generatedSqlFiles();

  it.each(Object.keys(files))('%s matches what the builders produce', (name) => {
    const committed = readFileSync(join(DIRECTORY, name), 'utf8');
    if (committed !== files[name]) throw new Error(`${HINT} (${name} differs)`);
  });

  it('holds no file the generators no longer write', () => {
    const committed = readdirSync(DIRECTORY).filter((name) => name.endsWith('.sql'));
    const expected = [...Object.keys(files), SCHEMA_FILE];
    expect({ hint: HINT, files: committed.sort() }).toEqual({ hint: HINT, files: expected.sort() });
  });

  it('is deterministic and marked as generated', () => {
    expect(generatedSqlFiles()).toEqual(files);
    for (const content of Object.values(files)) expect(content.startsWith(`${HEADER}\n`)).toBe(true);
  });
});
