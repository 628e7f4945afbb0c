import type { DataSource } from 'typeorm';
import { WorkloadSampleSummaries1763800033000 } from '../../../migrations/1763800033000-workload-sample-summaries';
import { pruneSamples } from '../../cli/commands/prune.command';
import type { AuthScope } from '../../common/auth/auth-scope';
import { sealSamples } from '../../import/sample-seal';
import { workloadEvidenceQuery } from '../../recommendations/rightsizing.queries';
import { importDocument, insertWorkloads, seedOrganization, writeAs } from '../../../test/support/factories';
import { createOwnDatabase, type OwnDatabase } from '../../../test/support/own-database';
import { workloadSummaryDifferences } from '../../../test/support/rollup-residue';
import { ALL_SAMPLES_SQL, unsealOrganizations } from '../../../test/support/samples';

/*
 * Workload sample summaries against their recomputation from raw samples, and the right-sizing
 * evidence read through them against the same evidence read from raw samples alone, after every
 * kind of write: samples in rows and day blocks, seals, late and changed samples of finished
 * workloads, deletes, runs that move, end or go, and a prune. Its own database: prune drops weekly
 * partitions.
 */

const HOUR = 3_600_000;
const WEEK_1 = Date.parse('2026-10-26T00:00:00.000Z'); // a Monday: weekly partitions start here
const WEEK_2 = WEEK_1 + 7 * 24 * HOUR;
const WEEK_3 = WEEK_2 + 7 * 24 * HOUR;
const NOW = WEEK_3 + 24 * HOUR;
const KNOWN = ['p5.48xlarge'];

interface Run {
  workloadId: string;
  started: number;
  /** null: running. */
  completed: number | null;
  samples: number;
  instanceType?: string;
  mig?: boolean;
}

const RUNS: Run[] = [
  // Inside one day, with readings before its start and after its end that are not its run's.
  { workloadId: 'in-day', started: WEEK_1 + 34 * HOUR, completed: WEEK_1 + 44 * HOUR, samples: 250 },
  // Across a UTC midnight, and across the weeks' boundary.
  { workloadId: 'midnight', started: WEEK_2 + 22 * HOUR, completed: WEEK_2 + 30 * HOUR, samples: 120 },
  { workloadId: 'weeks', started: WEEK_2 - 4 * HOUR, completed: WEEK_2 + 4 * HOUR, samples: 90 },
  { workloadId: 'running', started: WEEK_2 + 48 * HOUR, completed: null, samples: 60 },
  { workloadId: 'no-samples', started: WEEK_2 + 50 * HOUR, completed: WEEK_2 + 52 * HOUR, samples: 0 },
  { workloadId: 'mig', started: WEEK_2 + 60 * HOUR, completed: WEEK_2 + 70 * HOUR, samples: 301, mig: true },
  {
    workloadId: 'unknown-type',
    started: WEEK_2 + 60 * HOUR,
    completed: WEEK_2 + 62 * HOUR,
    samples: 40,
    instanceType: 'x9.unknown',
  },
];

/** A reading's values from a seed: memory repeats often, so percentiles and the top land on ties. */
function values(seed: number): [gpu: number, memory: number] {
  const x = Math.sin(seed) * 10_000;
  const fraction = x - Math.floor(x);
  return [Math.round(fraction * 1000) / 10, Math.round((1 - fraction) * 20) * 5];
}

type Reading = [workloadId: string, at: number, gpu: number, memory: number];

/** `count` readings spread over the run (running: to NOW), plus one before it and one after it. */
function readingsOf(run: Run, salt: number): Reading[] {
  if (run.samples === 0) return [];
  const end = run.completed ?? NOW - HOUR;
  const step = (end - run.started) / (run.samples - 1);
  const at = [
    run.started - 60_000,
    ...Array.from({ length: run.samples }, (_, i) => run.started + Math.round(i * step)),
  ];
  if (run.completed !== null) at.push(run.completed + 60_000);
  return at.map((time, i) => [run.workloadId, time, ...values(i * 13 + salt + run.workloadId.length)]);
}

/** The factories' statement for rows: one upsert that rewrites only changed readings. */
async function upsertRows(dataSource: DataSource, orgId: string, readings: Reading[]): Promise<void> {
  await dataSource.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [new Date(WEEK_1), new Date(NOW)]);
  await dataSource.query('SELECT gpucap_ensure_sample_day_partitions($1, $2)', [
    new Date(WEEK_1),
    new Date(NOW),
  ]);
  await writeAs(
    dataSource,
    `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization, temperature, power_usage)
     SELECT $1, w, t, g, m, 50, 300 FROM unnest($2::text[], $3::timestamptz[], $4::float8[], $5::float8[]) AS u(w, t, g, m)
     ON CONFLICT (organization_id, workload_id, sampled_at) DO UPDATE
       SET gpu_utilization = excluded.gpu_utilization, memory_utilization = excluded.memory_utilization
       WHERE (metric_samples.gpu_utilization, metric_samples.memory_utilization)
             IS DISTINCT FROM (excluded.gpu_utilization, excluded.memory_utilization)`,
    [
      orgId,
      readings.map((r) => r[0]),
      readings.map((r) => new Date(r[1])),
      readings.map((r) => r[2]),
      readings.map((r) => r[3]),
    ],
  );
}

/** Readings through the real importer: those before the seal watermark go to (existing) day blocks. */
async function importReadings(dataSource: DataSource, orgId: string, readings: Reading[]): Promise<void> {
  await importDocument(dataSource, {
    metric_samples: readings.map(([workloadId, at, gpu, memory]) => ({
      organization_id: orgId,
      workload_id: workloadId,
      timestamp: new Date(at).toISOString(),
      gpu_utilization: gpu,
      memory_utilization: memory,
      temperature: 50,
      power_usage: 300,
    })),
  });
}

/** Seals the organization's readings before `before` into day blocks, as the writers do. */
async function seal(dataSource: DataSource, orgId: string, before: number): Promise<void> {
  await unsealOrganizations(dataSource, [orgId]);
  await sealSamples(dataSource, { organizationIds: [orgId], before: new Date(before) });
}

const EVIDENCE = `count(*)::int AS sample_count,
  date_part('epoch', max(s.sampled_at) - min(s.sampled_at))::float8 AS sampled_seconds,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY s.gpu_utilization) AS p95_gpu_utilization,
  percentile_cont(0.99) WITHIN GROUP (ORDER BY s.memory_utilization) AS p99_memory_utilization,
  (array_agg(s.memory_utilization ORDER BY s.memory_utilization DESC))[1:(count(*) / 100 + 1)::int] AS top_memory_utilization`;

interface Range {
  from: number;
  to: number;
}

type EvidenceRow = Record<string, unknown> & { workload_id: string };

const EVIDENCE_COLUMNS = [
  'workload_id',
  'sample_count',
  'sampled_seconds',
  'p95_gpu_utilization',
  'p99_memory_utilization',
  'top_memory_utilization',
];

/** The right-sizing evidence as the recommendations read it (summaries inside, samples at the edges). */
async function servedEvidence(
  dataSource: DataSource,
  scope: AuthScope,
  range: Range,
): Promise<EvidenceRow[]> {
  const statement = workloadEvidenceQuery(scope, {
    from: new Date(range.from),
    to: new Date(range.to),
    now: new Date(NOW),
    knownInstanceTypes: KNOWN,
  });
  const rows: EvidenceRow[] = await dataSource.query(statement.text, statement.values);
  return rows.map((row) => Object.fromEntries(EVIDENCE_COLUMNS.map((c) => [c, row[c]])) as EvidenceRow);
}

/** The same evidence from the raw samples of every workload, as the rule reads it (docs/api.md). */
async function rawEvidence(dataSource: DataSource, orgId: string, range: Range): Promise<EvidenceRow[]> {
  return dataSource.query(
    `SELECT w.workload_id, e.*
     FROM workloads w
     CROSS JOIN LATERAL (
       SELECT greatest(w.started_at, $2) AS run_from, least(coalesce(w.completed_at, $4), $3) AS run_to
     ) r
     CROSS JOIN LATERAL (
       SELECT ${EVIDENCE} FROM ${ALL_SAMPLES_SQL} s
       WHERE s.organization_id = w.organization_id AND s.workload_id = w.workload_id
         AND s.sampled_at >= r.run_from AND s.sampled_at <= r.run_to AND s.sampled_at < $3
         AND w.instance_type = ANY ($5::text[]) AND (w.gpu_sharing_mode IS NULL OR w.gpu_sharing_mode = 'mig')
     ) e
     WHERE w.organization_id = $1 AND w.started_at < $3 AND coalesce(w.completed_at, $4) > $2 AND w.gpu_count > 0
     ORDER BY w.workload_id COLLATE "C"`,
    [orgId, new Date(range.from), new Date(range.to), new Date(NOW), KNOWN],
  );
}

/**
 * The workloads whose evidence the served read takes from their summary: those whose answer moves
 * when every summary is falsified, in a transaction rolled back.
 */
async function answeredBySummary(dataSource: DataSource, scope: AuthScope, range: Range): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  try {
    await runner.query(
      'UPDATE workload_sample_summaries SET sample_count = sample_count + 1000000 WHERE organization_id = $1',
      [scope.organizationId],
    );
    const statement = workloadEvidenceQuery(scope, {
      from: new Date(range.from),
      to: new Date(range.to),
      now: new Date(NOW),
      knownInstanceTypes: KNOWN,
    });
    const rows: EvidenceRow[] = await runner.query(statement.text, statement.values);
    return rows.filter((row) => (row.sample_count as number) >= 1_000_000).map((row) => row.workload_id);
  } finally {
    await runner.rollbackTransaction();
    await runner.release();
  }
}

const run = (id: string) => RUNS.find((r) => r.workloadId === id) as Run;

/** Ranges whose edges cut runs, touch them exactly, or hold them whole. */
const RANGES: { name: string; range: Range; inside: string[] }[] = [
  {
    name: 'holding every run',
    range: { from: WEEK_1, to: WEEK_3 },
    inside: ['in-day', 'midnight', 'mig', 'no-samples', 'weeks'],
  },
  { name: 'cutting runs at both edges', range: { from: WEEK_2, to: WEEK_2 + 24 * HOUR }, inside: [] },
  {
    name: 'ending exactly where a run ends',
    range: { from: WEEK_1, to: run('in-day').completed as number },
    inside: [],
  },
  {
    name: 'starting exactly where a run starts',
    range: { from: run('midnight').started, to: WEEK_2 + 54 * HOUR },
    inside: ['midnight', 'no-samples'],
  },
];

describe('workload sample summaries stay equal to a recomputation from raw samples', () => {
  let db: OwnDatabase;
  let orgId: string;
  let scope: AuthScope;

  beforeAll(async () => {
    db = await createOwnDatabase('summaries');
    orgId = await seedOrganization(db.dataSource);
    scope = {
      organizationId: orgId,
      role: 'ORG_ADMIN',
      initiativeIds: 'all',
      credentialKey: 'token:test',
      subject: 'test',
    };
    await insertWorkloads(
      db.dataSource,
      orgId,
      RUNS.map((r) => ({
        workloadId: r.workloadId,
        status: r.completed === null ? ('running' as const) : ('completed' as const),
        instanceType: r.instanceType ?? 'p5.48xlarge',
        gpuCount: 1,
        ...(r.mig ? { gpuShare: 3 / 7, gpuSharing: { mode: 'mig' as const, profile: '3g.40gb' } } : {}),
        submittedAt: new Date(r.started - 60_000),
        startedAt: new Date(r.started),
        completedAt: r.completed === null ? null : new Date(r.completed),
      })),
    );
  }, 120_000);

  afterAll(async () => {
    await db?.drop();
  });

  /** Summaries equal their recomputation, and every range's served evidence equals the raw one. */
  async function expectExact(): Promise<void> {
    expect(await workloadSummaryDifferences(db.dataSource, orgId)).toEqual([]);
    for (const { range } of RANGES) {
      expect(await servedEvidence(db.dataSource, scope, range)).toEqual(
        await rawEvidence(db.dataSource, orgId, range),
      );
    }
  }

  it('after samples in rows, a seal into day blocks and late readings in both stores', async () => {
    await upsertRows(
      db.dataSource,
      orgId,
      RUNS.flatMap((r) => readingsOf(r, 1)),
    );
    await expectExact();
    const [{ count }] = await db.dataSource.query(
      'SELECT count(*)::int AS count FROM workload_sample_summaries WHERE organization_id = $1',
      [orgId],
    );
    expect(count).toBe(RUNS.filter((r) => r.completed !== null).length);

    // Sealed up to the middle of 'midnight': its run reads from both stores.
    await seal(db.dataSource, orgId, WEEK_2 + 26 * HOUR);
    await expectExact();

    // Late readings of finished runs: into the day blocks before the watermark, rows after it.
    await importReadings(db.dataSource, orgId, [
      ['in-day', WEEK_1 + 35 * HOUR + 1_000, 99, 100],
      ['midnight', WEEK_2 + 23 * HOUR + 1_000, 97, 95],
      ['midnight', WEEK_2 + 29 * HOUR + 1_000, 96, 100],
    ]);
    await expectExact();
  });

  it('after re-imports, identical and with changed values, and deletes in both stores', async () => {
    const summaries = () =>
      db.dataSource.query('SELECT * FROM workload_sample_summaries WHERE organization_id = $1 ORDER BY 2', [
        orgId,
      ]);
    const before = await summaries();
    await importReadings(db.dataSource, orgId, readingsOf(run('weeks'), 1));
    expect(await summaries()).toEqual(before);

    await importReadings(db.dataSource, orgId, readingsOf(run('weeks'), 2));
    await expectExact();
    expect(await summaries()).not.toEqual(before);

    // The import sealed every ended hour: rows a second after each reading of 'mig', changed, then some deleted.
    const later = (readings: Reading[]) => readings.map(([id, at, g, m]): Reading => [id, at + 1_000, g, m]);
    await upsertRows(db.dataSource, orgId, later(readingsOf(run('mig'), 3)));
    await expectExact();
    await upsertRows(db.dataSource, orgId, later(readingsOf(run('mig'), 4)));
    await expectExact();
    await writeAs(
      db.dataSource,
      `DELETE FROM metric_samples WHERE organization_id = $1 AND workload_id = 'mig' AND memory_utilization >= 90`,
      [orgId],
    );
    await writeAs(
      db.dataSource,
      `DELETE FROM metric_sample_days WHERE organization_id = $1 AND workload_id = 'in-day'`,
      [orgId],
    );
    await expectExact();
  });

  it('after runs that move, end and go', async () => {
    await writeAs(
      db.dataSource,
      `UPDATE workloads SET completed_at = completed_at - interval '3 hours' WHERE organization_id = $1 AND workload_id = 'midnight'`,
      [orgId],
    );
    await writeAs(
      db.dataSource,
      `UPDATE workloads SET status = 'completed', completed_at = $2, exit_code = 0
       WHERE organization_id = $1 AND workload_id = 'running'`,
      [orgId, new Date(WEEK_2 + 53 * HOUR)],
    );
    await expectExact();
    expect(await answeredBySummary(db.dataSource, scope, RANGES[3].range)).toEqual([
      'midnight',
      'no-samples',
      'running',
    ]);

    await writeAs(
      db.dataSource,
      `DELETE FROM workloads WHERE organization_id = $1 AND workload_id IN ('no-samples', 'unknown-type')`,
      [orgId],
    );
    await writeAs(
      db.dataSource,
      `UPDATE workloads SET status = 'running', completed_at = NULL, exit_code = NULL
       WHERE organization_id = $1 AND workload_id = 'running'`,
      [orgId],
    );
    await expectExact();
  });

  it.each(RANGES)(
    'reads the summaries of the runs wholly inside a range $name',
    async ({ range, inside }) => {
      expect(await answeredBySummary(db.dataSource, scope, range)).toEqual(
        inside.filter((id) => !['no-samples'].includes(id)),
      );
    },
  );

  it('after a prune: runs started before the retention boundary read their (remaining) samples', async () => {
    await pruneSamples(db.dataSource, new Date(WEEK_2));
    await expectExact();
    expect(await answeredBySummary(db.dataSource, scope, RANGES[0].range)).toEqual(['midnight', 'mig']);
  });

  it('the migration fills the same summaries for stored workloads as the triggers settled', async () => {
    const summaries = () =>
      db.dataSource.query('SELECT * FROM workload_sample_summaries WHERE organization_id = $1 ORDER BY 2', [
        orgId,
      ]);
    const settled = await summaries();
    expect(settled.length).toBeGreaterThan(0);
    const runner = db.dataSource.createQueryRunner();
    try {
      const migration = new WorkloadSampleSummaries1763800033000();
      await migration.down(runner);
      await migration.up(runner);
    } finally {
      await runner.release();
    }
    expect(await summaries()).toEqual(settled);
    expect(await workloadSummaryDifferences(db.dataSource, orgId)).toEqual([]);
  });
});
