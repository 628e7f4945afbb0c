/**
 * npx ts-node --transpile-only bench/wait-blocks.ts [--sizes 100k] [--runs 5]
 *
 * What the queue-wait blocks (src/rollups/queue-waits/) cost a writer: the histogram upsert a
 * statement's trigger runs, for statements of 300 and 30,000 of the dataset's workloads copied into
 * an organization of their own, with the day and hour rows only (as before blocks) and with the
 * blocks too, alternately, each in a transaction rolled back; the median of `--runs` and the rows
 * each upserts. The readers' side is measured end to end by bench/warm-cold.ts.
 */
import { Client } from 'pg';
import { changedBucketsSql, WAIT_PERIODS } from '../src/rollups/queue-waits/queue-waits.definitions';
import { ensureDataset } from './dataset';
import { ORGANIZATION_ID } from './fixtures';
import { parseOptions, takeOption } from './options';

const COPY = 'bench-wait-copy';
const STATEMENT_SIZES = [300, 30_000];

const started = Date.now();
function log(line: string): void {
  process.stderr.write(`[wait-blocks ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
}

/** The trigger's upsert of the rows in `new_rows`, over `periods`. */
function upsertSql(periods: string[]): string {
  return `INSERT INTO workload_period_waits AS r (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket, started_count, wait_seconds_sum, wait_seconds_max)
    SELECT organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket,
           started_count, wait_seconds_sum, coalesce(added_max, 0)
    FROM (${changedBucketsSql([{ rows: 'new_rows', sign: 1 }], periods)}) AS c
    WHERE started_count <> 0 OR wait_seconds_sum <> 0 OR removed
    ORDER BY organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket
    ON CONFLICT (organization_id, period, dimension, bucket_start, initiative_id, dimension_value, cluster_id, wait_bucket) DO UPDATE SET
      started_count = r.started_count + excluded.started_count,
      wait_seconds_sum = r.wait_seconds_sum + excluded.wait_seconds_sum,
      wait_seconds_max = greatest(r.wait_seconds_max, excluded.wait_seconds_max)`;
}

async function main(): Promise<void> {
  const runsOption = takeOption(process.argv.slice(2), '--runs');
  const runs = Number(runsOption.value ?? 5);
  const options = parseOptions([...runsOption.rest, '--keep-dataset']);
  const dataset = await ensureDataset(options.adminUrl, options.sizes.at(-1)!, options.seed, options, log);
  const client = new Client({ connectionString: dataset.url });
  await client.connect();
  const variants = [
    { label: 'days and hours (before blocks)', periods: ['day', 'hour'] },
    { label: 'with 16-day blocks (today)', periods: WAIT_PERIODS },
  ];
  const lines = [
    `| workloads in the statement | ${variants.map((variant) => `${variant.label}: ms (rows)`).join(' | ')} | ratio |`,
    `| - | ${variants.map(() => '-').join(' | ')} | - |`,
  ];
  try {
    for (const size of STATEMENT_SIZES) {
      const times = variants.map(() => [] as number[]);
      const rows = variants.map(() => 0);
      for (let run = 0; run < runs; run++)
        for (const [index, variant] of variants.entries()) {
          await client.query('BEGIN');
          await client.query(
            `CREATE TEMP TABLE new_rows ON COMMIT DROP AS
             SELECT * FROM workloads WHERE organization_id = $1 ORDER BY workload_id LIMIT $2`,
            [ORGANIZATION_ID, size],
          );
          await client.query('UPDATE new_rows SET organization_id = $1', [COPY]);
          await client.query('ANALYZE new_rows');
          const begun = process.hrtime.bigint();
          const result = await client.query(upsertSql(variant.periods));
          times[index].push(Number(process.hrtime.bigint() - begun) / 1e6);
          rows[index] = result.rowCount ?? 0;
          await client.query('ROLLBACK');
        }
      const medians = times.map((list) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)]);
      log(`${size} workloads: ${medians.map((median) => median.toFixed(1)).join(' ms, ')} ms`);
      lines.push(
        `| ${size.toLocaleString('en-US')} | ${medians.map((median, index) => `${median.toFixed(1)} (${rows[index].toLocaleString('en-US')})`).join(' | ')} | ${(medians[1] / medians[0]).toFixed(2)}× |`,
      );
    }
  } finally {
    await client.end();
  }
  process.stdout.write(`\nMedian of ${runs}, dataset ${dataset.databaseName}:\n\n${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
