import { Readable } from 'node:stream';
import { LOCK_ORGANIZATIONS_SQL } from '../../../src/import/writer-lock';
import type { DataSource, QueryRunner } from 'typeorm';
import { pruneSamples } from '../../../src/cli/commands/prune.command';
import { importDataset } from '../../../src/import/import.service';
import { importDocument, seedOrganization, writeAs } from '../../support/factories';
import { waitFor } from '../../support/wait-for';
import { createOwnDatabase, type OwnDatabase } from '../../support/own-database';
import { ALL_SAMPLES_SQL } from '../../support/samples';

const DAY = 86_400_000;

function workload(organizationId: string, workloadId: string, initiativeId: string, extra: object = {}) {
  return {
    workload_id: workloadId,
    organization_id: organizationId,
    initiative_id: initiativeId,
    name: `job ${workloadId}`,
    status: 'running',
    submitted_by: 'alice@example.com',
    instance_type: 'p5.48xlarge',
    gpu_count: 8,
    is_managed: true,
    cluster_id: 'c1',
    namespace: 'ns',
    submitted_at: new Date(Date.now() - 3 * DAY).toISOString(),
    started_at: new Date(Date.now() - 3 * DAY + 60_000).toISOString(),
    completed_at: null,
    exit_code: null,
    ...extra,
  };
}

function sample(organizationId: string, workloadId: string, at: number, gpuUtilization: number) {
  return {
    organization_id: organizationId,
    workload_id: workloadId,
    timestamp: new Date(at).toISOString(),
    gpu_utilization: gpuUtilization,
    memory_utilization: 40,
    temperature: 60,
    power_usage: 300,
  };
}

/** Waits (bounded) until some session of this database waits for an advisory (writer) lock. */
function untilAWriterWaits(dataSource: DataSource): Promise<void> {
  return waitFor(async () => {
    const [{ waiting }] = await dataSource.query(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
    );
    return waiting > 0;
  });
}

/** An open writer transaction holding the organization's lock, as a concurrent import would. */
async function openWriter(dataSource: DataSource, organizationId: string): Promise<QueryRunner> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  await runner.query(LOCK_ORGANIZATIONS_SQL, [[organizationId]]);
  return runner;
}

async function aggregate(dataSource: DataSource, organizationId: string, workloadId: string) {
  const [row] = await dataSource.query(
    `SELECT initiative_id, status, sample_count::int, gpu_utilization_min, gpu_utilization_max
     FROM metric_aggregates WHERE organization_id = $1 AND workload_id = $2`,
    [organizationId, workloadId],
  );
  return row;
}

describe('the write path under concurrent writers (defects found in review)', () => {
  let db: OwnDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createOwnDatabase('writers', 6);
    ds = db.dataSource;
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('refuses a write to workloads or samples without the organization writer lock', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a'] });
    await expect(
      ds.query(
        `INSERT INTO workloads (organization_id, workload_id, initiative_id, name, status, submitted_by,
           instance_type, gpu_count, is_managed, cluster_id, namespace, submitted_at)
         VALUES ($1, 'w', 'team-a', 'n', 'pending', 's', 't', 1, true, 'c', 'n', now())`,
        [org],
      ),
    ).rejects.toThrow(`writes to organization ${org} need its writer lock`);
    expect(await ds.query('SELECT 1 FROM workloads WHERE organization_id = $1', [org])).toEqual([]);
  });

  it('a workload moved to another team while its first samples arrive is ranked under the new team', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a', 'team-b'] });
    await importDocument(ds, { workloads: [workload(org, 'mover', 'team-a')] });
    const mover = await openWriter(ds, org);
    try {
      await mover.query(
        `UPDATE workloads SET initiative_id = 'team-b', status = 'completed', completed_at = now(), exit_code = 0
         WHERE organization_id = $1 AND workload_id = 'mover'`,
        [org],
      );
      const samples = importDocument(ds, { metric_samples: [sample(org, 'mover', Date.now() - DAY, 50)] });
      await untilAWriterWaits(ds);
      await mover.commitTransaction();
      await samples;
    } finally {
      await mover.release();
    }
    expect(await aggregate(ds, org, 'mover')).toMatchObject({ initiative_id: 'team-b', status: 'completed' });
    const totals = await ds.query(
      `SELECT initiative_id, status, workload_count::int FROM metric_ranked_totals
       WHERE organization_id = $1 AND workload_count <> 0`,
      [org],
    );
    expect(totals).toEqual([{ initiative_id: 'team-b', status: 'completed', workload_count: 1 }]);
  });

  it('a new maximum imported while another writer recomputes the extremes is kept', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a'] });
    const t0 = Date.now() - 2 * DAY;
    await importDocument(ds, {
      workloads: [workload(org, 'hot', 'team-a')],
      metric_samples: [sample(org, 'hot', t0, 10), sample(org, 'hot', t0 + 60_000, 20)],
    });
    const lowering = await openWriter(ds, org);
    try {
      // Lowering the current maximum makes the trigger recompute the extremes from raw samples
      // (past days' readings are imported into day blocks).
      await lowering.query(
        `UPDATE metric_sample_days SET gpu_utilization = array_replace(gpu_utilization, 20, 15)
         WHERE organization_id = $1 AND workload_id = 'hot'`,
        [org],
      );
      const peak = importDocument(ds, { metric_samples: [sample(org, 'hot', t0 + 120_000, 99)] });
      await untilAWriterWaits(ds);
      await lowering.commitTransaction();
      await peak;
    } finally {
      await lowering.release();
    }
    expect(await aggregate(ds, org, 'hot')).toMatchObject({
      sample_count: 3,
      gpu_utilization_min: 10,
      gpu_utilization_max: 99,
    });
  });

  it('re-importing a pruned week counts nothing twice and says how many samples it skipped', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a'] });
    const old = Date.now() - 200 * DAY;
    const document = {
      workloads: [workload(org, 'aged', 'team-a')],
      metric_samples: [sample(org, 'aged', old, 10), sample(org, 'aged', Date.now() - DAY, 30)],
    };
    await importDocument(ds, document);
    const { boundary } = await pruneSamples(ds, new Date(Date.now() - 100 * DAY));
    expect(boundary).not.toBeNull();
    expect((await aggregate(ds, org, 'aged')).sample_count).toBe(2);

    const again = await importDocument(ds, document);
    expect(again.skippedPrunedSamples).toBe(1);
    expect(again.written.metric_samples).toBe(0);
    expect((await aggregate(ds, org, 'aged')).sample_count).toBe(2);
    expect(
      await ds.query(`SELECT count(*)::int AS n FROM ${ALL_SAMPLES_SQL} AS s WHERE organization_id = $1`, [
        org,
      ]),
    ).toEqual([{ n: 1 }]);

    // Even with its week's partition back, a direct write of a pruned sample is refused.
    await ds.query('SELECT gpucap_ensure_sample_partitions($1, $1)', [new Date(old)]);
    await expect(
      writeAs(
        ds,
        `INSERT INTO metric_samples (organization_id, workload_id, sampled_at, gpu_utilization, memory_utilization,
           temperature, power_usage) VALUES ($1, 'aged', $2, 1, 1, 1, 1)`,
        [org, new Date(old)],
      ),
    ).rejects.toThrow('older than the retention boundary');
  });

  it('creates whole UTC weeks whatever the session time zone, across a daylight-saving change', async () => {
    const runner = ds.createQueryRunner();
    await runner.connect();
    try {
      await runner.query(`SET TimeZone = 'Europe/Berlin'`);
      await runner.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
        '2027-03-20T00:00:00Z',
        '2027-04-06T00:00:00Z',
      ]);
      await runner.query('SELECT gpucap_ensure_sample_partitions($1, $2)', [
        '2027-03-20T00:00:00Z',
        '2027-04-20T00:00:00Z',
      ]);
      await runner.query(`SET TimeZone = 'UTC'`);
      const bounds = await runner.query(
        `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'metric_samples'::regclass AND c.relname BETWEEN 'metric_samples_w2027_11' AND 'metric_samples_w2027_16'
         ORDER BY 1`,
      );
      expect(bounds).toEqual(
        ['2027-03-15', '2027-03-22', '2027-03-29', '2027-04-05', '2027-04-12', '2027-04-19'].map(
          (monday, index) => ({
            name: `metric_samples_w2027_${11 + index}`,
            bound: `FOR VALUES FROM ('${monday} 00:00:00+00') TO ('${new Date(Date.parse(monday) + 7 * DAY).toISOString().slice(0, 10)} 00:00:00+00')`,
          }),
        ),
      );
    } finally {
      await runner.release();
    }
  });

  it('imports a file of 140,000 workloads with samples (no argument-count limit)', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a'] });
    const count = 140_000;
    const at = Date.now() - DAY;
    function* lines() {
      for (let i = 0; i < count; i += 1) {
        yield `${JSON.stringify({ kind: 'workload', ...workload(org, `bulk-${i}`, 'team-a') })}\n`;
        yield `${JSON.stringify({ kind: 'metric_sample', ...sample(org, `bulk-${i}`, at, i % 100) })}\n`;
      }
    }
    const summary = await importDataset(ds, Readable.from(lines()));
    expect(summary.written.workloads).toBe(count);
    expect(summary.written.metric_samples).toBe(count);
  }, 180_000);

  it('TRUNCATE workloads empties the capacity rollups with the others', async () => {
    const org = await seedOrganization(ds, { initiatives: ['team-a'] });
    await importDocument(ds, {
      workloads: [
        workload(org, 'done', 'team-a', {
          status: 'completed',
          completed_at: new Date(Date.now() - 2 * DAY).toISOString(),
          exit_code: 0,
        }),
      ],
    });
    const usage = () =>
      ds.query(`SELECT (SELECT count(*) FROM capacity_usage_daily)::int AS daily,
                       (SELECT count(*) FROM capacity_usage_hourly)::int AS hourly`);
    const [before] = await usage();
    expect(before.daily).toBeGreaterThan(0);
    expect(before.hourly).toBeGreaterThan(0);
    await ds.query('TRUNCATE workloads');
    expect(await usage()).toEqual([{ daily: 0, hourly: 0 }]);
  });
});
