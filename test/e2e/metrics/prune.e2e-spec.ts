import { PassThrough } from 'node:stream';
import { DataSource } from 'typeorm';
import { pruneCommand } from '../../../src/cli/commands/prune.command';
import { loadConfig } from '../../../src/core/config/app-config';
import { migrate, openDataSource } from '../../../src/database/database-target';
import { insertSamples, insertWorkloads, seedOrganization } from '../../support/factories';
import { ALL_SAMPLES_SQL, sealForStore } from '../../support/samples';
import { TEST_JWT_SECRET } from '../../support/test-app';
import {
  createDatabase,
  dropDatabase,
  TEST_DATABASE_PREFIX,
  withDatabaseName,
} from '../../support/test-database';

const DAY = 86_400_000;

/** Prune drops partitions for every organization, so it runs in a database of its own. */
describe('gpucap prune --older-than', () => {
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL as string;
  const name = `${TEST_DATABASE_PREFIX}prune_${process.pid}_${Date.now().toString(36)}`;
  const url = withDatabaseName(serverUrl, name);
  let dataSource: DataSource;

  beforeAll(async () => {
    await createDatabase(serverUrl, name);
    await migrate(url);
    dataSource = await openDataSource(url, 2);
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await dropDatabase(serverUrl, name);
  });

  async function run(args: string[]): Promise<{ code: number; output: string }> {
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const config = loadConfig({ DATABASE_URL: url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'silent' });
    const code = await pruneCommand(args, {
      config,
      stdout,
      stderr: new PassThrough(),
      stdin: new PassThrough(),
    });
    return { code, output: Buffer.concat(chunks).toString() };
  }

  const partitions = async (): Promise<string[]> =>
    (
      await dataSource.query(
        `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent IN ('metric_samples'::regclass, 'metric_sample_days'::regclass) ORDER BY 1`,
      )
    ).map((row: { relname: string }) => row.relname);

  it('drops only whole weeks older than the cutoff and keeps lifetime aggregates', async () => {
    const orgId = await seedOrganization(dataSource);
    await insertWorkloads(dataSource, orgId, [{ workloadId: 'old', status: 'completed' }]);
    const now = Date.now();
    const old = now - 200 * DAY;
    const straddling = now - 90 * DAY; // its week reaches past the cutoff: kept whole
    await insertSamples(dataSource, orgId, [
      { workloadId: 'old', at: new Date(old), gpuUtilization: 10 },
      { workloadId: 'old', at: new Date(old + DAY), gpuUtilization: 20 },
      { workloadId: 'old', at: new Date(straddling), gpuUtilization: 30 },
      { workloadId: 'old', at: new Date(now - DAY), gpuUtilization: 60 },
    ]);
    // Those go into day blocks; one more old reading stays a row: prune drops the weeks of both stores.
    await sealForStore(dataSource, [orgId], 'rows and day blocks');
    await insertSamples(dataSource, orgId, [
      { workloadId: 'old', at: new Date(old + 2 * DAY), gpuUtilization: 40 },
    ]);
    const before = await partitions();
    const aggregateBefore = await dataSource.query(
      `SELECT sample_count::int, gpu_utilization_avg FROM metric_aggregates WHERE organization_id = $1`,
      [orgId],
    );
    expect(aggregateBefore).toEqual([{ sample_count: 5, gpu_utilization_avg: 32 }]);

    const dry = await run(['--older-than', '90d', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(await partitions()).toEqual(before);
    expect(dry.output).toMatch(/Would drop metric_samples_w/);

    const { code, output } = await run(['--older-than', '90d']);
    expect(code).toBe(0);
    const after = await partitions();
    const dropped = before.filter((partition) => !after.includes(partition));
    expect(dropped.length).toBeGreaterThanOrEqual(1);
    for (const partition of dropped) expect(output).toContain(`Dropped ${partition}`);
    const droppedSamples = [...output.matchAll(/: (\d+) samples\n/g)].map((match) => Number(match[1]));
    expect(droppedSamples.reduce((sum, count) => sum + count, 0)).toBe(3);
    expect(output).toMatch(/Dropped metric_sample_days_w\d{4}_\d{2} .*: [12] samples\n/);

    const remaining = await dataSource.query(
      `SELECT gpu_utilization FROM ${ALL_SAMPLES_SQL} s WHERE organization_id = $1 ORDER BY sampled_at`,
      [orgId],
    );
    expect(remaining).toEqual([{ gpu_utilization: 30 }, { gpu_utilization: 60 }]);
    expect(
      await dataSource.query(
        `SELECT sample_count::int, gpu_utilization_avg FROM metric_aggregates WHERE organization_id = $1`,
        [orgId],
      ),
    ).toEqual(aggregateBefore);
  });

  it('refuses a missing or malformed --older-than', async () => {
    await expect(run([])).rejects.toThrow('--older-than is required');
    await expect(run(['--older-than', '90'])).rejects.toThrow('positive duration');
  });
});
