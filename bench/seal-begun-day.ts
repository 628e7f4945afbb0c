/**
 * npx ts-node --transpile-only bench/seal-begun-day.ts [--workloads 20000] [--samples 1000000]
 *                                                       [--before COMMIT] [--runs 3]
 *
 * The hourly seal late in a UTC day: `gpucap demo-data` loads the demo organization with "now" at
 * the current minute, so the current hour's readings stay rows and the day's earlier hours are in
 * day blocks; each build then seals that hour into the blocks it extends (sealSamples with the next
 * hour as its target, as the first seal after the hour ends does), on a copy of the same database,
 * alternately, `--runs` times. Reports the readings moved, the batches and the seconds each build
 * took. How late in the day the current hour is sets how much each block holds: the later, the more.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { databaseUrl, recreateDatabase, withClient } from './dataset';
import { buildService, CURRENT, runCli, serviceAtCommit, type ServiceBuild } from './processes';

const HOUR_MS = 3_600_000;
const LOADED = 'gpucap_bench_seal_loaded';
const COPY = 'gpucap_bench_seal_copy';

const started = Date.now();
function log(line: string): void {
  process.stderr.write(
    `[seal-begun-day ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`,
  );
}

interface Sealed {
  readings: number;
  batches: number;
  seconds: number;
}

/** sealSamples of `build`'s compiled code against `url`, in a process of its own. */
function sealWith(build: ServiceBuild, url: string, before: Date): Promise<Sealed> {
  const script = `
    const { openDataSource } = require(${JSON.stringify(join(build.buildDir, 'src/database/database-target.js'))});
    const { sealSamples } = require(${JSON.stringify(join(build.buildDir, 'src/import/sample-seal.js'))});
    (async () => {
      const dataSource = await openDataSource(process.env.DATABASE_URL);
      const begun = process.hrtime.bigint();
      const result = await sealSamples(dataSource, { before: new Date(${JSON.stringify(before.toISOString())}) });
      const seconds = Number(process.hrtime.bigint() - begun) / 1e9;
      await dataSource.destroy();
      process.stdout.write(JSON.stringify({ readings: result.readings, batches: result.batches, seconds }));
    })();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], {
      cwd: build.sourceDir,
      env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(output) as Sealed) : reject(new Error(`${build.label}: seal failed`)),
    );
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      workloads: { type: 'string', default: '20000' },
      samples: { type: 'string', default: '1000000' },
      before: { type: 'string' },
      runs: { type: 'string', default: '3' },
    },
  });
  const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const builds = [CURRENT, ...(values.before ? [serviceAtCommit(values.before)] : [])];
  for (const build of builds) await buildService(log, build);

  const now = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const target = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS);
  await recreateDatabase(adminUrl, LOADED);
  const loadedUrl = databaseUrl(adminUrl, LOADED);
  await runCli(['migrate'], { DATABASE_URL: loadedUrl }, log);
  const load = ['demo-data', '--workloads', values.workloads, '--samples', values.samples, '--seed', '7'];
  await runCli([...load, '--now', now.toISOString()], { DATABASE_URL: loadedUrl }, log);
  const rows = await withClient(loadedUrl, async (client) => {
    const {
      rows: [counted],
    } = await client.query<{ readings: number; workloads: number }>(
      'SELECT count(*)::int AS readings, count(DISTINCT workload_id)::int AS workloads FROM metric_samples',
    );
    return counted;
  });
  log(
    `loaded: ${rows.readings} readings of ${rows.workloads} workloads in rows, hour ${now.getUTCHours()} of the UTC day`,
  );

  const results = new Map<string, Sealed[]>(builds.map((build) => [build.label, []]));
  for (let run = 0; run < Number(values.runs); run += 1) {
    for (const build of builds) {
      await recreateDatabase(adminUrl, COPY, LOADED);
      const sealed = await sealWith(build, databaseUrl(adminUrl, COPY), target);
      log(
        `${build.label}: ${sealed.readings} readings, ${sealed.batches} batches, ${sealed.seconds.toFixed(2)} s`,
      );
      results.get(build.label)?.push(sealed);
    }
  }
  await withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${COPY}`);
    await client.query(`DROP DATABASE IF EXISTS ${LOADED}`);
  });

  const command = `npx ts-node --transpile-only bench/seal-begun-day.ts --workloads ${values.workloads} --samples ${values.samples}${values.before ? ` --before ${values.before}` : ''}`;
  console.log(
    `Sealing hour ${now.getUTCHours()} of the UTC day, ${rows.readings} readings of ${rows.workloads} workloads (\`${command}\`):\n`,
  );
  console.log('| build | readings | batches | seconds, each run |');
  console.log('| - | -: | -: | - |');
  for (const [label, sealed] of results) {
    console.log(
      `| ${label} | ${sealed[0]?.readings ?? 0} | ${sealed[0]?.batches ?? 0} | ${sealed.map((s) => s.seconds.toFixed(2)).join(' / ')} |`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
