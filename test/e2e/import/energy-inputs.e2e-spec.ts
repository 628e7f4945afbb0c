import { spawnSync } from 'node:child_process';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../../../src/database/database-target';
import { ImportRejectedError } from '../../../src/import/import-errors';
import { importDocument, uniqueId } from '../../support/factories';
import { PROJECT_ROOT } from '../../support/import-fixture';

/*
 * What energy and carbon are computed from: `carbon_intensity` records (per cluster, periods as
 * prices have, hourly ones included) and an organization's `max_sample_gap_seconds`, through the real
 * importer: stored exactly, re-sent periods replaced, overlaps and bad values refused naming the
 * records, nothing written.
 */

let dataSource: DataSource;

beforeAll(async () => {
  dataSource = await openDataSource(process.env.GPUCAP_TEST_DATABASE_URL as string, 2);
});

afterAll(async () => {
  await dataSource.destroy();
});

type Period = Record<string, unknown>;

function organization(organizationId: string, extra: Record<string, unknown> = {}) {
  return {
    organization_id: organizationId,
    name: 'Energy Robotics',
    budget_period_start: '2026-10-01T00:00:00Z',
    budget_period_end: '2027-01-01T00:00:00Z',
    ...extra,
  };
}

function period(organizationId: string, from: string, to: string | null, grams: number, extra: Period = {}) {
  return {
    organization_id: organizationId,
    cluster_id: 'eks-use1',
    effective_from: from,
    effective_to: to,
    grams_co2e_per_kwh: grams,
    ...extra,
  };
}

async function intensities(organizationId: string) {
  return dataSource.query(
    `SELECT cluster_id, effective_from, effective_to, grams_co2e_per_kwh::text AS grams, pue::text AS pue
     FROM carbon_intensities WHERE organization_id = $1 ORDER BY cluster_id, effective_from`,
    [organizationId],
  );
}

async function sampleGap(organizationId: string): Promise<number> {
  const [row] = await dataSource.query(
    'SELECT max_sample_gap_seconds FROM organizations WHERE organization_id = $1',
    [organizationId],
  );
  return row.max_sample_gap_seconds as number;
}

async function version(organizationId: string): Promise<string> {
  const [row] = await dataSource.query(
    'SELECT version::text AS version FROM organization_data_versions WHERE organization_id = $1',
    [organizationId],
  );
  return row.version as string;
}

async function rejection(document: object): Promise<string[]> {
  const error = await importDocument(dataSource, document).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ImportRejectedError);
  return (error as ImportRejectedError).lines();
}

describe('gpucap import: carbon_intensity', () => {
  it('stores hourly and open-ended periods per cluster exactly, PUE 1 when not given', async () => {
    const org = uniqueId('org-carbon');
    const hours = Array.from({ length: 24 }, (_, hour) => {
      const from = new Date(Date.UTC(2026, 10, 20, hour));
      const to = new Date(from.getTime() + 3_600_000);
      return period(org, from.toISOString(), to.toISOString(), 300 + hour * 10.25, { pue: 1.18 });
    });
    const summary = await importDocument(dataSource, {
      organizations: [organization(org)],
      carbon_intensity: [
        ...hours,
        period(org, '2026-11-21T00:00:00Z', null, 412.5),
        { ...period(org, '2026-01-01T00:00:00+01:00', null, 0.125), cluster_id: 'onprem-hydro' },
      ],
    });
    expect(summary.records.carbon_intensity).toBe(26);
    expect(summary.written.carbon_intensity).toBe(26);

    const rows = await intensities(org);
    expect(rows).toHaveLength(26);
    expect(rows[0]).toEqual({
      cluster_id: 'eks-use1',
      effective_from: new Date('2026-11-20T00:00:00Z'),
      effective_to: new Date('2026-11-20T01:00:00Z'),
      grams: '300',
      pue: '1.18',
    });
    expect(rows[23]).toEqual({
      cluster_id: 'eks-use1',
      effective_from: new Date('2026-11-20T23:00:00Z'),
      effective_to: new Date('2026-11-21T00:00:00Z'),
      grams: '535.75',
      pue: '1.18',
    });
    expect(rows.slice(24)).toEqual([
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-21T00:00:00Z'),
        effective_to: null,
        grams: '412.5',
        pue: '1',
      },
      {
        cluster_id: 'onprem-hydro',
        effective_from: new Date('2025-12-31T23:00:00Z'),
        effective_to: null,
        grams: '0.125',
        pue: '1',
      },
    ]);
  });

  it('replaces a re-sent period (same cluster and start); an unchanged one writes nothing', async () => {
    const org = uniqueId('org-carbon');
    const first = {
      organizations: [organization(org)],
      carbon_intensity: [
        period(org, '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z', 400, { pue: 1.2 }),
        period(org, '2026-11-20T09:00:00Z', null, 380),
      ],
    };
    await importDocument(dataSource, first);
    const before = await version(org);
    const unchanged = await importDocument(dataSource, first);
    expect(unchanged.written.carbon_intensity).toBe(0);
    expect(await version(org)).toBe(before);

    // The open period is closed and a new one follows it, in the same file.
    const resent = await importDocument(dataSource, {
      carbon_intensity: [
        period(org, '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z', 390.5, { pue: 1.1 }),
        period(org, '2026-11-20T09:00:00Z', '2026-11-20T10:00:00Z', 380),
        period(org, '2026-11-20T10:00:00Z', null, 150),
      ],
    });
    expect(resent.written.carbon_intensity).toBe(3);
    expect(await intensities(org)).toEqual([
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-20T08:00:00Z'),
        effective_to: new Date('2026-11-20T09:00:00Z'),
        grams: '390.5',
        pue: '1.1',
      },
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-20T09:00:00Z'),
        effective_to: new Date('2026-11-20T10:00:00Z'),
        grams: '380',
        pue: '1',
      },
      {
        cluster_id: 'eks-use1',
        effective_from: new Date('2026-11-20T10:00:00Z'),
        effective_to: null,
        grams: '150',
        pue: '1',
      },
    ]);
    // Cached answers expire: the write moved the organization's data version.
    expect(BigInt(await version(org))).toBeGreaterThan(BigInt(before));
  });

  it('refuses periods of one cluster that overlap in the file, naming both records', async () => {
    const org = uniqueId('org-carbon');
    const lines = await rejection({
      organizations: [organization(org)],
      carbon_intensity: [
        period(org, '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z', 400),
        period(org, '2026-11-20T08:30:00Z', '2026-11-20T09:30:00Z', 410),
        { ...period(org, '2026-11-20T08:30:00Z', null, 20), cluster_id: 'other-cluster' },
      ],
    });
    expect(lines).toEqual([
      "carbon_intensity[1]: its period overlaps the carbon intensity of cluster 'eks-use1' from 2026-11-20T08:00:00Z to 2026-11-20T09:00:00Z (periods of one cluster must not overlap) (see carbon_intensity[0])",
    ]);
    expect(await dataSource.query('SELECT 1 FROM organizations WHERE organization_id = $1', [org])).toEqual(
      [],
    );
  });

  it('refuses a period that overlaps a stored one, naming it; accepts it with the stored one re-sent shorter', async () => {
    const org = uniqueId('org-carbon');
    await importDocument(dataSource, {
      organizations: [organization(org)],
      carbon_intensity: [period(org, '2026-11-20T08:00:00Z', null, 400)],
    });
    const later = period(org, '2026-11-21T00:00:00Z', null, 300);
    expect(await rejection({ carbon_intensity: [later] })).toEqual([
      `carbon_intensity[0]: its period overlaps the stored carbon intensity of cluster 'eks-use1' from 2026-11-20T08:00:00Z to open end in organization '${org}' (periods of one cluster must not overlap; re-send that period with an earlier effective_to)`,
    ]);
    expect(await intensities(org)).toHaveLength(1);

    await importDocument(dataSource, {
      carbon_intensity: [period(org, '2026-11-20T08:00:00Z', '2026-11-21T00:00:00Z', 400), later],
    });
    expect((await intensities(org)).map((row: { grams: string }) => row.grams)).toEqual(['400', '300']);
  });

  it.each([
    [
      { grams_co2e_per_kwh: -1 },
      'carbon_intensity[0]: grams_co2e_per_kwh must be a number greater than or equal to 0',
    ],
    [
      { grams_co2e_per_kwh: '400' },
      'carbon_intensity[0]: grams_co2e_per_kwh must be a number greater than or equal to 0',
    ],
    [
      { pue: 0.95 },
      'carbon_intensity[0]: pue must be a number greater than or equal to 1 (power usage effectiveness: facility power over IT power)',
    ],
    [
      { effective_to: '2026-11-20T07:00:00Z' },
      'carbon_intensity[0]: effective_from must be before effective_to',
    ],
    [
      { effective_from: '2026-11-20T08:00:00' },
      'carbon_intensity[0]: effective_from must be an ISO 8601 timestamp with an offset, such as 2026-11-20T08:00:00Z',
    ],
    [
      { cluster_id: ' ' },
      'carbon_intensity[0]: cluster_id must be a non-empty string of at most 256 characters without control characters',
    ],
    [{ region: 'us-east-1' }, "carbon_intensity[0]: unknown field 'region'"],
  ])('refuses %p with a line naming the record and the rule, writing nothing', async (change, expected) => {
    const org = uniqueId('org-carbon');
    const lines = await rejection({
      organizations: [organization(org)],
      carbon_intensity: [{ ...period(org, '2026-11-20T08:00:00Z', '2026-11-20T09:00:00Z', 400), ...change }],
    });
    expect(lines).toEqual([expected]);
    expect(await dataSource.query('SELECT 1 FROM organizations WHERE organization_id = $1', [org])).toEqual(
      [],
    );
  });

  it('refuses an overlap written by any other writer too (the table’s own trigger)', async () => {
    const org = uniqueId('org-carbon');
    await importDocument(dataSource, {
      organizations: [organization(org)],
      carbon_intensity: [period(org, '2026-11-20T08:00:00Z', null, 400)],
    });
    await expect(
      dataSource.query(
        `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, grams_co2e_per_kwh)
         VALUES ($1, 'eks-use1', '2026-11-20T09:00:00Z', 300)`,
        [org],
      ),
    ).rejects.toMatchObject({ code: '23P01', message: 'carbon intensity periods of one cluster overlap' });
    await expect(
      dataSource.query(
        `INSERT INTO carbon_intensities (organization_id, cluster_id, effective_from, grams_co2e_per_kwh, pue)
         VALUES ($1, 'eks-use2', '2026-11-20T09:00:00Z', 300, 0.9)`,
        [org],
      ),
    ).rejects.toMatchObject({ code: '23514', constraint: 'carbon_intensities_pue_check' });
  });

  it('refuses a bad record through the command line: exit 1, the record and the rule, no stack trace', () => {
    const org = uniqueId('org-carbon');
    const run = spawnSync('node', ['bin/gpucap.js', 'import', '-'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DATABASE_URL: process.env.GPUCAP_TEST_DATABASE_URL },
      input: [
        JSON.stringify({ kind: 'organization', ...organization(org) }),
        JSON.stringify({
          kind: 'carbon_intensity',
          ...period(org, '2026-11-20T08:00:00Z', null, 400, { pue: 0 }),
        }),
      ].join('\n'),
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('Import rejected, nothing was written:');
    expect(run.stderr).toContain('line 2: pue must be a number greater than or equal to 1');
    expect(run.stderr).not.toMatch(/\s+at .*\.[jt]s:\d+/);
  });
});

describe('gpucap import: organizations.max_sample_gap_seconds', () => {
  it('stores the given bound, 120 s when left out or null (a re-sent record without it resets it)', async () => {
    const org = uniqueId('org-gap');
    await importDocument(dataSource, { organizations: [organization(org, { max_sample_gap_seconds: 300 })] });
    expect(await sampleGap(org)).toBe(300);
    await importDocument(dataSource, {
      organizations: [organization(org, { max_sample_gap_seconds: 86_400 })],
    });
    expect(await sampleGap(org)).toBe(86_400);
    await importDocument(dataSource, {
      organizations: [organization(org, { max_sample_gap_seconds: null })],
    });
    expect(await sampleGap(org)).toBe(120);
    await importDocument(dataSource, { organizations: [organization(org, { max_sample_gap_seconds: 1 })] });
    await importDocument(dataSource, { organizations: [organization(org)] });
    expect(await sampleGap(org)).toBe(120);
  });

  it.each([0, 86_401, 90.5, '60', -120])('refuses %p, writing nothing', async (value) => {
    const org = uniqueId('org-gap');
    expect(
      await rejection({ organizations: [organization(org, { max_sample_gap_seconds: value })] }),
    ).toEqual(['organizations[0]: max_sample_gap_seconds must be an integer from 1 to 86400 (seconds)']);
    expect(await dataSource.query('SELECT 1 FROM organizations WHERE organization_id = $1', [org])).toEqual(
      [],
    );
  });

  it('the table refuses a bound outside 1 to 86,400 from any writer', async () => {
    const org = uniqueId('org-gap');
    await importDocument(dataSource, { organizations: [organization(org)] });
    await expect(
      dataSource.query('UPDATE organizations SET max_sample_gap_seconds = 0 WHERE organization_id = $1', [
        org,
      ]),
    ).rejects.toMatchObject({ code: '23514', constraint: 'organizations_max_sample_gap_seconds_check' });
  });
});
