import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../../src/core/project-root';
import { SECTION_BY_KIND, SECTIONS, type SectionName } from '../../../src/import/import-sections';
import { validateRecord } from '../../../src/import/record-validator';
import { parseSacctDocument } from '../../../src/ingest/slurm/slurm-source';
import { mapSacctJob } from '../../../src/ingest/slurm/sacct-mapping';
import { loadSyncConfig } from '../../../src/ingest/sync-config';

/**
 * docs/import-format.schema.json is shipped for other tools to check a document before `gpucap
 * import`; it must say what the importer's own validation says. Every fixture record is accepted by
 * both, and every single-field change below gets the same verdict from both, except the rules no
 * JSON Schema can state (listed in docs/import-format.md), which only the importer refuses.
 */
const root = projectRoot();
const readJson = (path: string): unknown => JSON.parse(readFileSync(join(root, path), 'utf8'));
const schema = readJson('docs/import-format.schema.json') as { $defs: Record<string, unknown> };
const fixture = readJson('test/fixtures/import/valid-dataset.json') as Record<
  SectionName,
  Record<string, unknown>[]
>;

const ajv = new Ajv2020({ allErrors: true, strict: true });
const documentValidator = ajv.compile(schema);
const KIND_OF: Record<SectionName, string> = Object.fromEntries(
  Object.entries(SECTION_BY_KIND).map(([kind, section]) => [section, kind]),
) as Record<SectionName, string>;
const recordValidators = new Map<SectionName, ValidateFunction>(
  SECTIONS.map((section) => [section, ajv.getSchema(`urn:gpucap:import-format#/$defs/${KIND_OF[section]}`)!]),
);
const ndjsonValidator = ajv.getSchema('urn:gpucap:import-format#/$defs/ndjson_line')!;

const schemaAccepts = (section: SectionName, record: unknown) => recordValidators.get(section)!(record);
const importerAccepts = (section: SectionName, record: unknown) =>
  validateRecord(section, structuredClone(record)).issues === undefined;

/** Values tried in place of every field: right and wrong types, bounds, and each format's edges. */
const CANDIDATES: unknown[] = [
  undefined,
  null,
  '',
  '   ',
  'x',
  'bad id',
  'a'.repeat(128),
  'a'.repeat(129),
  't'.repeat(256),
  't'.repeat(257),
  'line\nbreak',
  'vision',
  'Europe/Berlin',
  'UTC',
  'BST',
  'US/Pacific',
  'ORG_ADMIN',
  'MEMBER',
  'owner',
  'pending',
  'running',
  'completed',
  'failed',
  'cancelled',
  'done',
  '2026-11-20T08:00:00Z',
  '2026-11-20t08:00z',
  '2026-11-20T08:00:00.123456789+01:00',
  '2026-11-20T08:00:00',
  '2026-11-20',
  0,
  -1,
  0.5,
  1,
  2,
  8,
  100,
  100.5,
  100_000,
  100_001,
  2_147_483_648,
  true,
  false,
  [],
  ['vision'],
  ['vision', 'vision'],
  ['bad id'],
  {},
  { mode: 'mig', profile: '1g.10gb' },
  { mode: 'mig', profile: '' },
  { mode: 'mig', replicas: 4 },
  { mode: 'time-slicing', replicas: 4 },
  { mode: 'mps', replicas: 0 },
  { mode: 'mps', replicas: 1001 },
  { mode: 'mps', replicas: 2, profile: '1g.10gb' },
  { mode: 'vgpu', replicas: 2 },
];

/**
 * Changes the importer refuses and the schema cannot: whether the record is otherwise valid decides
 * (a real calendar date, a start before an end, a share within the devices, a known MIG profile).
 */
function onlyTheImporterRefuses(section: SectionName, field: string, value: unknown): boolean {
  if (section === 'organizations' && (field === 'budget_period_start' || field === 'budget_period_end'))
    return true; // start before end
  if (section === 'workloads') {
    if (['submitted_at', 'started_at', 'completed_at'].includes(field)) return true; // time order
    if (field === 'gpu_share' || field === 'gpu_count') return true; // share at most gpu_count
    if (field === 'gpu_sharing') return true; // a MIG profile gpucap knows, or a gpu_share given
  }
  if (section === 'prices') {
    if (field === 'effective_from' || field === 'effective_to') return true; // start before end
    if (field === 'currency') return true; // a code ICU knows
    if (field === 'price_per_gpu_hour') return true; // a number written with at most 12 + 10 digits
  }
  if (section === 'carbon_intensity' && (field === 'effective_from' || field === 'effective_to')) return true; // start before end
  if (section === 'instance_types' && field === 'gpu_memory_gib') return true; // at least each profile's
  void value;
  return false;
}

describe('docs/import-format.schema.json', () => {
  it('accepts the valid fixture as a whole document', () => {
    expect(documentValidator(fixture)).toBe(true);
    expect(documentValidator.errors ?? null).toBeNull();
  });

  it('accepts every fixture record, as the importer does, and as an NDJSON line', () => {
    for (const section of SECTIONS) {
      expect(fixture[section]?.length).toBeGreaterThan(0);
      for (const record of fixture[section]) {
        expect({ section, record, importer: importerAccepts(section, record) }).toEqual({
          section,
          record,
          importer: true,
        });
        expect({ section, record, schema: schemaAccepts(section, record) }).toEqual({
          section,
          record,
          schema: true,
        });
        expect(ndjsonValidator({ kind: KIND_OF[section], ...record })).toBe(true);
      }
    }
  });

  it('gives the verdict of the importer for every single-field change of every fixture record', () => {
    const disagreements: string[] = [];
    let refused = 0;
    for (const section of SECTIONS) {
      for (const record of fixture[section]) {
        const fields = new Set([
          ...Object.keys(record),
          'gpu_share',
          'gpu_sharing',
          'timezone',
          'initiative_ids',
        ]);
        for (const field of fields) {
          if (
            !(field in record) &&
            section !== 'workloads' &&
            section !== 'organizations' &&
            section !== 'members'
          )
            continue;
          for (const value of CANDIDATES) {
            const changed: Record<string, unknown> = { ...record, [field]: value };
            if (value === undefined) delete changed[field];
            const importer = importerAccepts(section, changed);
            const schemaVerdict = schemaAccepts(section, changed);
            if (!importer) refused += 1;
            if (importer === schemaVerdict) continue;
            if (!importer && schemaVerdict && onlyTheImporterRefuses(section, field, value)) continue;
            disagreements.push(
              `${section} ${String(record[Object.keys(record).find((key) => key.endsWith('_id') && key !== 'organization_id') ?? 'organization_id'])} ${field}=${JSON.stringify(value)}: importer ${importer ? 'accepts' : 'refuses'}, schema ${schemaVerdict ? 'accepts' : 'refuses'}`,
            );
          }
        }
      }
    }
    expect(disagreements).toEqual([]);
    expect(refused).toBeGreaterThan(500);
  });

  it.each([
    ['an unknown field', 'workloads', { colour: 'red' }],
    ['a derived field', 'workloads', { gpu_hours_used: 16 }],
    [
      'a pending workload with a start',
      'workloads',
      { status: 'pending', started_at: '2026-11-20T08:02:00Z' },
    ],
    ['a running workload with an end', 'workloads', { status: 'running' }],
    [
      'a running workload without a start',
      'workloads',
      { status: 'running', started_at: null, completed_at: null, exit_code: null },
    ],
    ['a finished workload without an exit code', 'workloads', { exit_code: null }],
    ['a cancelled workload without an end', 'workloads', { status: 'cancelled', completed_at: null }],
    ['a share on no device', 'workloads', { gpu_count: 0, gpu_share: 0.5 }],
    ['a sample over 100 %', 'metric_samples', { gpu_utilization: 100.5 }],
    ['a sample gap of no time', 'organizations', { max_sample_gap_seconds: 0 }],
    ['a sample gap over a day', 'organizations', { max_sample_gap_seconds: 86_401 }],
    ['a PUE below 1', 'carbon_intensity', { pue: 0.9 }],
    ['a negative carbon intensity', 'carbon_intensity', { grams_co2e_per_kwh: -1 }],
    ['a time zone abbreviation', 'organizations', { timezone: 'CEST' }],
    ['a MIG-capable GPU without profiles', 'instance_types', { mig_profiles: [] }],
    ['profiles of a GPU that cannot be sliced', 'instance_types', { mig_capable: false }],
    [
      'a MIG profile without its compute slices',
      'instance_types',
      { mig_profiles: [{ profile: '1g.10gb', memory_gib: 10 }] },
    ],
  ] as const)('refuses %s, as the importer does', (_, section, change) => {
    const record: Record<string, unknown> = { ...fixture[section][0], ...change };
    expect(importerAccepts(section, record)).toBe(false);
    expect(schemaAccepts(section, record)).toBe(false);
  });

  it.each([
    ['a workload on MIG instances', { gpu_count: 2, gpu_sharing: { mode: 'mig', profile: '1g.10gb' } }],
    [
      'a time-sliced replica with its share',
      { gpu_count: 1, gpu_share: 0.25, gpu_sharing: { mode: 'time-slicing', replicas: 4 } },
    ],
    ['an MPS replica', { gpu_count: 2, gpu_sharing: { mode: 'mps', replicas: 4 } }],
    [
      'an unknown MIG profile with its share',
      { gpu_count: 1, gpu_share: 0.5, gpu_sharing: { mode: 'mig', profile: 'a100l.2' } },
    ],
  ])('accepts %s, as the importer does', (_, change) => {
    const record = { ...fixture.workloads[0], ...change };
    expect(importerAccepts('workloads', record)).toBe(true);
    expect(schemaAccepts('workloads', record)).toBe(true);
  });

  it('refuses an unknown section, a section that is not an array, and an NDJSON line without its kind', () => {
    expect(documentValidator({ teams: [] })).toBe(false);
    expect(documentValidator({ workloads: {} })).toBe(false);
    expect(ndjsonValidator(fixture.workloads[0])).toBe(false);
    expect(ndjsonValidator({ kind: 'pool', ...fixture.workloads[0] })).toBe(false);
  });

  it('accepts the examples/ import document, as the importer does', () => {
    const example = readJson('examples/organization.json') as Record<SectionName, unknown[]>;
    expect(documentValidator(example)).toBe(true);
    for (const section of Object.keys(example) as SectionName[])
      for (const record of example[section]) expect(importerAccepts(section, record)).toBe(true);
  });
});

describe('docs/import-format.md', () => {
  it('shows for every section an example record that the importer and the schema accept', () => {
    const text = readFileSync(join(root, 'docs', 'import-format.md'), 'utf8');
    const shown = new Map<SectionName, unknown[]>();
    for (const part of text.split(/^## /m).slice(1)) {
      const section = /^`([a-z_]+)`/.exec(part)?.[1] as SectionName | undefined;
      if (!section || !SECTIONS.includes(section)) continue;
      const blocks = [...part.matchAll(/```json\n([\s\S]*?)```/g)].map(
        (match) => JSON.parse(match[1]) as unknown,
      );
      shown.set(section, blocks);
    }
    expect([...shown.keys()]).toEqual([...SECTIONS]);
    for (const [section, records] of shown) {
      expect(records.length).toBeGreaterThan(0);
      for (const record of records) {
        expect({ section, record, importer: importerAccepts(section, record) }).toMatchObject({
          importer: true,
        });
        expect({ section, record, schema: schemaAccepts(section, record) }).toMatchObject({ schema: true });
      }
    }
  });
});

describe('examples/', () => {
  it('ships a sync config that the loader accepts as it is, reading the sacct document beside it', () => {
    const config = loadSyncConfig(join(root, 'examples', 'sync.yaml'));
    expect(config.organizationId).toBe('org-example');
    expect(config.slurm?.sacctJsonFile).toBe(join(root, 'examples', 'sacct.json'));
  });

  it('ships a sacct --json document whose GPU jobs become valid workloads of known initiatives', () => {
    const config = loadSyncConfig(join(root, 'examples', 'sync.yaml'));
    const jobs = parseSacctDocument(readFileSync(config.slurm!.sacctJsonFile!, 'utf8'));
    const mapped = jobs.map((job) => mapSacctJob(job, config.slurm!, config.organizationId));
    const workloads = mapped.flatMap((mapping) => ('workload' in mapping ? [mapping.workload] : []));
    expect(workloads.map((workload) => workload.status).sort()).toEqual([
      'completed',
      'failed',
      'pending',
      'running',
    ]);
    const initiatives = (
      readJson('examples/organization.json') as { initiatives: { initiative_id: string }[] }
    ).initiatives.map((initiative) => initiative.initiative_id);
    for (const workload of workloads) {
      expect(importerAccepts('workloads', workload)).toBe(true);
      expect(schemaAccepts('workloads', workload)).toBe(true);
      expect(initiatives).toContain(workload.initiative_id);
    }
    expect(workloads.find((workload) => workload.status === 'running')?.gpu_sharing).toEqual({
      mode: 'mig',
      profile: '1g.10gb',
    });
  });
});
