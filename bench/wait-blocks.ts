/**
 * npx ts-node --transpile-only bench/wait-blocks.ts [--sizes 100k] [--runs 5]
 *
 * What the queue-wait blocks (src/rollups/queue-waits/) cost a writer, for statements of 300 and
 * 30,000 of the dataset's workloads copied into an organization of their own: the histogram upsert
 * the insert trigger runs (and the rows it upserts), and the whole INSERT INTO workloads with every
 * trigger, its wait trigger's body the upsert with the day and hour rows only (as before blocks) or
 * with the blocks too; alternately, each in a transaction rolled back, the median of `--runs`. The
 * readers' side is measured end to end by bench/warm-cold.ts.
 */
import { Client } from 'pg';
import { histogramUpsertSql, WAIT_PERIODS } from '../src/rollups/queue-waits/queue-waits.definitions';
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
const upsertSql = (periods: string[]) => histogramUpsertSql([{ rows: 'new_rows', sign: 1 }], periods);

const WORKLOAD_COLUMNS = `workload_id, initiative_id, name, status, submitted_by, instance_type, gpu_count,
  is_managed, cluster_id, namespace, submitted_at, started_at, completed_at, exit_code`;

/** The copy organization, its teams and its writer lock, in the open transaction. */
async function prepareCopy(client: Client): Promise<void> {
  await client.query(
    `INSERT INTO organizations (organization_id, name, timezone, budget_period_start, budget_period_end)
     SELECT $2, name, timezone, budget_period_start, budget_period_end FROM organizations WHERE organization_id = $1`,
    [ORGANIZATION_ID, COPY],
  );
  await client.query(
    'INSERT INTO initiatives (organization_id, initiative_id, name) SELECT $2, initiative_id, name FROM initiatives WHERE organization_id = $1',
    [ORGANIZATION_ID, COPY],
  );
  await client.query('SELECT gpucap_lock_organizations(ARRAY[$1])', [COPY]);
}

/** Milliseconds of one timed statement, in a transaction rolled back after `prepare`. */
async function timed(client: Client, prepare: () => Promise<void>, text: string, values: unknown[]) {
  await client.query('BEGIN');
  try {
    await prepare();
    const begun = process.hrtime.bigint();
    const result = await client.query(text, values);
    return { ms: Number(process.hrtime.bigint() - begun) / 1e6, rows: result.rowCount ?? 0 };
  } finally {
    await client.query('ROLLBACK');
  }
}

const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

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
    `| workloads in the statement | ${variants.map((variant) => `upsert ${variant.label}: ms (rows)`).join(' | ')} | ratio | ${variants.map((variant) => `whole INSERT, ${variant.label}: ms`).join(' | ')} | ratio |`,
    `| - | ${variants.map(() => '- | ').join('')}- | ${variants.map(() => '- | ').join('')}- |`,
  ];
  try {
    for (const size of STATEMENT_SIZES) {
      const upserts = variants.map(() => [] as number[]);
      const inserts = variants.map(() => [] as number[]);
      const rows = variants.map(() => 0);
      const copyRows = async () => {
        await client.query(
          `CREATE TEMP TABLE new_rows ON COMMIT DROP AS
           SELECT * FROM workloads WHERE organization_id = $1 ORDER BY workload_id LIMIT $2`,
          [ORGANIZATION_ID, size],
        );
        await client.query('UPDATE new_rows SET organization_id = $1', [COPY]);
        await client.query('ANALYZE new_rows');
      };
      for (let run = 0; run < runs; run++)
        for (const [index, variant] of variants.entries()) {
          const upsert = await timed(client, copyRows, upsertSql(variant.periods), []);
          upserts[index].push(upsert.ms);
          rows[index] = upsert.rows;
          const insert = await timed(
            client,
            async () => {
              await client.query(
                `CREATE OR REPLACE FUNCTION gpucap_workload_waits_insert() RETURNS trigger LANGUAGE plpgsql SET jit TO 'off' AS $$
                 BEGIN ${upsertSql(variant.periods)}; RETURN NULL; END $$`,
              );
              await prepareCopy(client);
            },
            `INSERT INTO workloads (organization_id, ${WORKLOAD_COLUMNS})
             SELECT $2, ${WORKLOAD_COLUMNS} FROM workloads WHERE organization_id = $1 ORDER BY workload_id LIMIT $3`,
            [ORGANIZATION_ID, COPY, size],
          );
          inserts[index].push(insert.ms);
        }
      const [upsertBefore, upsertToday] = upserts.map(median);
      const [insertBefore, insertToday] = inserts.map(median);
      log(
        `${size} workloads: upsert ${upsertBefore.toFixed(1)} / ${upsertToday.toFixed(1)} ms, insert ${insertBefore.toFixed(1)} / ${insertToday.toFixed(1)} ms`,
      );
      lines.push(
        `| ${size.toLocaleString('en-US')} | ${upsertBefore.toFixed(1)} (${rows[0].toLocaleString('en-US')}) | ${upsertToday.toFixed(1)} (${rows[1].toLocaleString('en-US')}) | ${(upsertToday / upsertBefore).toFixed(2)}× | ${insertBefore.toFixed(0)} | ${insertToday.toFixed(0)} | ${(insertToday / insertBefore).toFixed(2)}× |`,
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
