import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { uniqueId } from './factories';

export const PROJECT_ROOT = join(__dirname, '..', '..');
const FIXTURE = readFileSync(join(PROJECT_ROOT, 'test/fixtures/import/valid-dataset.json'), 'utf8');

export type Dataset = Record<string, Record<string, unknown>[]>;

/** The import fixture with its organization renamed, so every test works on its own organization. */
export function fixtureDataset(prefix: string): { organizationId: string; data: Dataset } {
  const organizationId = uniqueId(prefix);
  return { organizationId, data: JSON.parse(FIXTURE.replace(/org-fixture/g, organizationId)) as Dataset };
}
