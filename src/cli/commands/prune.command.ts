import type { DataSource } from 'typeorm';
import { Command, UsageError } from '../cli-context';
import { helpText, parseFor } from '../command-line';
import { parseDurationFlag } from '../duration';
import { withDatabase } from '../with-database';
import { withWriterLock } from '../../import/writer-lock';
import { partitionBoundsSql, SAMPLE_STORES, type SampleStore } from '../../database/sample-partitions';

interface SamplePartition {
  parent: SampleStore;
  name: string;
  /**
   * How far a prune got with it: a stopped one may leave a week `pending` (between the two
   * transactions of its detach) or `detached` (a table of its own, not yet dropped).
   */
  state: 'attached' | 'pending' | 'detached';
  range_start: Date;
  range_end: Date;
}

/**
 * Weekly partitions of both sample stores (the open rows, metric_samples, and the sealed days,
 * metric_sample_days: a UTC day lies in one week) and of the days' hour summaries (metric_sample_hours,
 * dropped before their days', in the same weeks) whose whole range ends at or before the cutoff
 * (the upper bound is exclusive, so every reading in them is older). Bounds are read back from the
 * catalog. Then the weeks a stopped prune detached and did not drop, by the same cutoff: nothing
 * reads them (their week is before the boundary that prune recorded first), and their bounds went
 * with the detach, so the week is read from the name (`<store>_w<ISO year>_<ISO week>`). A week an
 * operator detaches to keep must be renamed or moved to another schema (docs/configuration.md).
 */
async function expiredPartitions(dataSource: DataSource, cutoff: Date): Promise<SamplePartition[]> {
  return dataSource.query(
    `SELECT parent, name, state, range_start, range_end
     FROM (
       SELECT parent, name, CASE WHEN detach_pending THEN 'pending' ELSE 'attached' END AS state,
              range_start, range_end
       FROM (${partitionBoundsSql(SAMPLE_STORES)}) partitions
       WHERE range_end <= $1
       UNION ALL
       SELECT week.parent, c.relname, 'detached', week.monday, week.monday + interval '7 days'
       FROM pg_class c
       CROSS JOIN LATERAL (
         SELECT substring(c.relname FROM '^(.+)_w\\d{4}_\\d{2}$') AS parent,
                to_date(substring(c.relname FROM '_w(\\d{4}_\\d{2})$'), 'IYYY_IW')::timestamp AT TIME ZONE 'UTC' AS monday
       ) week
       WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
         AND week.parent = ANY ($2::text[]) AND week.monday + interval '7 days' <= $1
     ) expired
     ORDER BY range_start, parent DESC`,
    [cutoff, SAMPLE_STORES],
  );
}

function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Detaching CONCURRENTLY (outside a transaction) keeps readers of the samples running while a
 * week of samples goes; the detached table is then dropped. A detach stopped half way (the command
 * killed while it waited for readers) is finished with FINALIZE: CONCURRENTLY refuses it; a week
 * detached and not dropped is only dropped. No trigger fires, so metric_aggregates keeps each
 * workload's lifetime figures (count, averages, extremes, latest) after the raw samples are gone:
 * the ranked endpoint still ranks old workloads; windows over pruned time read empty.
 */
async function dropPartition(dataSource: DataSource, partition: SamplePartition): Promise<number> {
  const table = quoteIdentifier(partition.name);
  const [{ samples }] = await dataSource.query(
    partition.parent === 'metric_sample_days'
      ? `SELECT coalesce(sum(cardinality(step_us)), 0)::float8 AS samples FROM ${table}`
      : partition.parent === 'metric_sample_hours'
        ? // Summaries of their days' readings, counted with those.
          'SELECT 0::float8 AS samples'
        : `SELECT count(*)::float8 AS samples FROM ${table}`,
  );
  if (partition.state !== 'detached') {
    const detach = partition.state === 'pending' ? 'FINALIZE' : 'CONCURRENTLY';
    await dataSource.query(`ALTER TABLE ${partition.parent} DETACH PARTITION ${table} ${detach}`);
  }
  await dataSource.query(`DROP TABLE ${table}`);
  return samples as number;
}

/**
 * Records, for every organization, that samples before `boundary` are gone, under every
 * organization's writer lock: an import that starts later skips such samples instead of counting
 * them a second time in the lifetime aggregates (which outlive the partitions). Written before the
 * partitions are dropped, so no import can slip a pruned week back in between.
 */
async function recordRetentionBoundary(dataSource: DataSource, boundary: Date): Promise<void> {
  const organizationIds = await allOrganizationIds(dataSource);
  await withWriterLock(dataSource, organizationIds, (manager) =>
    manager.query(
      `INSERT INTO sample_retention AS r (organization_id, samples_before)
       SELECT unnest($2::text[]), $1
       ON CONFLICT (organization_id) DO UPDATE SET samples_before = greatest(r.samples_before, excluded.samples_before)`,
      [boundary, organizationIds],
    ),
  );
}

async function allOrganizationIds(dataSource: DataSource): Promise<string[]> {
  const organizations: { organization_id: string }[] = await dataSource.query(
    'SELECT organization_id FROM organizations',
  );
  return organizations.map((row) => row.organization_id);
}

export interface PrunedPartition extends SamplePartition {
  samples: number;
}

/** Any fixed number: a prune holds this PostgreSQL session advisory lock while it drops partitions. */
const PRUNE_LOCK = 7_160_420_512;

/**
 * Drops every weekly sample partition that ends at or before `cutoff`, after recording the
 * retention boundary; returns what was dropped (or would be, with `dryRun`). Prunes queue on an
 * advisory lock (held on a connection of its own: a detach runs outside any transaction), so a
 * second one lists the partitions after the first has dropped them instead of detaching them twice.
 */
export async function pruneSamples(
  dataSource: DataSource,
  cutoff: Date,
  dryRun = false,
): Promise<{ partitions: PrunedPartition[]; boundary: Date | null }> {
  if (dryRun) {
    const partitions = await expiredPartitions(dataSource, cutoff);
    return {
      partitions: partitions.map((p) => ({ ...p, samples: 0 })),
      boundary: partitions.at(-1)?.range_end ?? null,
    };
  }
  const lock = dataSource.createQueryRunner();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [PRUNE_LOCK]);
    const partitions = await expiredPartitions(dataSource, cutoff);
    const boundary = partitions.at(-1)?.range_end ?? null;
    if (boundary) await recordRetentionBoundary(dataSource, boundary);
    const pruned: PrunedPartition[] = [];
    for (const partition of partitions) {
      pruned.push({ ...partition, samples: await dropPartition(dataSource, partition) });
    }
    if (pruned.length > 0) await bumpEveryDataVersion(dataSource);
    return { partitions: pruned, boundary };
  } finally {
    // The connection goes back to the pool: the lock must not go with it.
    await lock.query('SELECT pg_advisory_unlock($1)', [PRUNE_LOCK]).finally(() => lock.release());
  }
}

/** Dropping a partition fires no trigger: answers over pruned time change, so every version moves. */
async function bumpEveryDataVersion(dataSource: DataSource): Promise<void> {
  const organizationIds = await allOrganizationIds(dataSource);
  await withWriterLock(dataSource, organizationIds, (manager) =>
    manager.query('SELECT gpucap_bump_data_versions($1::text[])', [organizationIds]),
  );
}

export const pruneCommand: Command = async (args, context) => {
  const { values, spec } = parseFor('prune', args);
  if (values.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  const olderThan = values['older-than'] as string | undefined;
  if (!olderThan) throw new UsageError('--older-than is required');
  const cutoff = new Date(Date.now() - parseDurationFlag(olderThan, '--older-than'));
  const dryRun = values['dry-run'] === true;

  return withDatabase(context, async (dataSource) => {
    const { partitions, boundary } = await pruneSamples(dataSource, cutoff, dryRun);
    for (const partition of partitions) {
      const range = `[${partition.range_start.toISOString()}, ${partition.range_end.toISOString()})`;
      context.stdout.write(
        dryRun
          ? `Would drop ${partition.name} ${range}\n`
          : `Dropped ${partition.name} ${range}: ${partition.samples} samples\n`,
      );
    }
    context.stdout.write(
      `${partitions.length} partition(s) ${dryRun ? 'would be ' : ''}dropped; samples before ` +
        `${cutoff.toISOString()} in partly newer weeks are kept; per-workload lifetime aggregates are kept` +
        (boundary && !dryRun ? `; later imports skip samples before ${boundary.toISOString()}` : '') +
        '\n',
    );
    return 0;
  });
};
