import type { DataSource, EntityManager } from 'typeorm';
import { partitionBoundsSql } from '../database/sample-partitions';
import { mergeIntoDaysSql } from './sample-days';
import { withWriterLock } from './writer-lock';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Readings one seal batch moves, about: a batch holds the writer locks well under a second. */
export const SEAL_BATCH_READINGS = 50_000;

interface RowPartition {
  name: string;
  range_start: Date;
  range_end: Date;
}

export interface SealResult {
  /** The hour boundary sealed up to (exclusive); null when every organization was already sealed to it. */
  sealedBefore: Date | null;
  readings: number;
  batches: number;
}

export interface SealOptions {
  /** Seal the readings before the start of this time's hour; default: now (every ended hour). */
  before?: Date;
  /** Only these organizations (a writer's own); default: every organization. */
  organizationIds?: readonly string[];
  /** A line per batch (progress of a long move, e.g. `gpucap migrate`). */
  progress?: (line: string) => void;
  batchReadings?: number;
}

function startOfHour(time: Date): Date {
  return new Date(Math.floor(time.getTime() / HOUR_MS) * HOUR_MS);
}

/**
 * Readings per batch in a partition: readings moved into a day already begun rewrite its block, so
 * the later the target's hour, the fewer moved per batch, for about the same work per transaction.
 */
function readingsPerBatch(partition: RowPartition, target: Date, batchReadings: number): number {
  const targetDay = Math.floor(target.getTime() / DAY_MS) * DAY_MS;
  if (partition.range_end.getTime() <= targetDay) return batchReadings;
  const hoursBegun = (target.getTime() - targetDay) / HOUR_MS;
  return Math.max(1, Math.floor(batchReadings / Math.max(1, hoursBegun)));
}

/**
 * Moves the readings of ended hours from rows (metric_samples) into day blocks (metric_sample_days)
 * for every organization, in batches of whole workloads within one weekly partition, each its own
 * transaction under every organization's writer lock with `gpucap.sealing` set: readings only
 * change place, so no rollup trigger runs. Readers take no lock and see each reading once at every
 * moment (a batch's delete and insert commit together).
 *
 * First the target is recorded as `sealing_to`: from then on writers send readings before it to
 * the blocks, removing any row of the same time, so a batch never misses a reading written after
 * it ran. A stopped seal resumes where it was (the batches still find rows); the watermark moves
 * to the target only once every batch is done.
 */
export async function sealSamples(dataSource: DataSource, options: SealOptions = {}): Promise<SealResult> {
  const requested = startOfHour(options.before ?? new Date());
  const batchReadings = options.batchReadings ?? SEAL_BATCH_READINGS;
  const organizationIds = await organizationsToSeal(dataSource, requested, options.organizationIds);
  if (organizationIds.length === 0) return { sealedBefore: null, readings: 0, batches: 0 };

  const target = await withWriterLock(dataSource, organizationIds, async (manager) => {
    const [{ target }] = await manager.query(
      `WITH marked AS (
         UPDATE sample_seal_watermarks SET sealing_to = greatest(sealing_to, $1)
         WHERE organization_id = ANY ($2::text[]) AND (sealed_before < $1 OR sealing_to IS NOT NULL)
         RETURNING sealing_to
       )
       SELECT max(sealing_to) AS target FROM marked`,
      [requested, organizationIds],
    );
    // Every organization goes to the same day (one pass over the partitions serves them all), also
    // one already sealed to the requested day while another's unfinished seal reaches further.
    await manager.query(
      `UPDATE sample_seal_watermarks SET sealing_to = $1
       WHERE organization_id = ANY ($2::text[]) AND sealed_before < $1
         AND (sealing_to IS NULL OR sealing_to < $1)`,
      [target, organizationIds],
    );
    return target as Date | null;
  });
  if (!target) return { sealedBefore: null, readings: 0, batches: 0 };

  let readings = 0;
  let batches = 0;
  for (const partition of await rowPartitionsBefore(dataSource, target)) {
    const end = partition.range_end < target ? partition.range_end : target;
    // The day blocks' week and its hours' must exist before the locks are taken (creating one locks its table).
    await dataSource.query('SELECT gpucap_ensure_sample_day_partitions($1, $1)', [partition.range_start]);
    await dataSource.query('SELECT gpucap_ensure_sample_hour_partitions($1, $1)', [partition.range_start]);
    const perBatch = readingsPerBatch(partition, target, batchReadings);
    let after: [string, string] = ['', ''];
    for (;;) {
      const upTo = await batchEnd(dataSource, partition.range_start, end, after, perBatch);
      const moved = await withWriterLock(dataSource, organizationIds, (manager) =>
        moveBatch(manager, organizationIds, partition.range_start, end, after, upTo),
      );
      batches += 1;
      readings += moved;
      if (moved > 0) {
        options.progress?.(
          `Sealed ${moved} readings of ${partition.name} (${readings} so far, batch ${batches})`,
        );
      }
      if (!upTo) break;
      after = upTo;
    }
  }

  // A seal started meanwhile for a later day keeps its sealing_to: its batches are still to come.
  await withWriterLock(dataSource, organizationIds, (manager) =>
    manager.query(
      `UPDATE sample_seal_watermarks
       SET sealed_before = greatest(sealed_before, $2), sealing_to = nullif(greatest(sealing_to, $2), $2)
       WHERE organization_id = ANY ($1::text[]) AND sealing_to IS NOT NULL`,
      [organizationIds, target],
    ),
  );
  return { sealedBefore: target, readings, batches };
}

/** Organizations with days before `before` not yet sealed, or a seal left unfinished. */
async function organizationsToSeal(
  dataSource: DataSource,
  before: Date,
  only: readonly string[] | undefined,
): Promise<string[]> {
  const rows: { organization_id: string }[] = await dataSource.query(
    `SELECT organization_id FROM sample_seal_watermarks
     WHERE (sealed_before < $1 OR sealing_to IS NOT NULL)
       AND ($2::text[] IS NULL OR organization_id = ANY ($2::text[]))
     ORDER BY organization_id`,
    [before, only ?? null],
  );
  return rows.map((row) => row.organization_id);
}

/** Weekly partitions of rows that start before `before`, with their bounds from the catalog. */
async function rowPartitionsBefore(dataSource: DataSource, before: Date): Promise<RowPartition[]> {
  return dataSource.query(
    `SELECT name, range_start, range_end
     FROM (${partitionBoundsSql(['metric_samples'])}) partitions
     WHERE range_start < $1
     ORDER BY range_start`,
    [before],
  );
}

/**
 * The last workload of the next batch: the one holding the `batchReadings`-th reading after `after`
 * in [start, end), read off the primary key; null when fewer are left (the batch takes the rest).
 */
async function batchEnd(
  dataSource: DataSource,
  start: Date,
  end: Date,
  after: [string, string],
  batchReadings: number,
): Promise<[string, string] | null> {
  const rows: { organization_id: string; workload_id: string }[] = await dataSource.query(
    `SELECT organization_id, workload_id FROM metric_samples
     WHERE sampled_at >= $1 AND sampled_at < $2 AND (organization_id, workload_id) > ($3, $4)
     ORDER BY organization_id, workload_id
     OFFSET $5 LIMIT 1`,
    [start, end, after[0], after[1], batchReadings],
  );
  return rows.length ? [rows[0].organization_id, rows[0].workload_id] : null;
}

/**
 * One batch's move: the rows of [$1, $2) of the organizations $3 after workload ($4, $5) and, when
 * `bounded`, up to workload ($6, $7), deleted and merged into their day blocks (mergeIntoDaysSql).
 */
export function moveBatchSql(bounded: boolean): string {
  return mergeIntoDaysSql(
    `moved AS (
       DELETE FROM metric_samples
       WHERE sampled_at >= $1 AND sampled_at < $2 AND organization_id = ANY ($3::text[])
         AND (organization_id, workload_id) > ($4, $5)
         ${bounded ? 'AND (organization_id, workload_id) <= ($6, $7)' : ''}
       RETURNING *
     ),`,
    'moved',
  );
}

async function moveBatch(
  manager: EntityManager,
  organizationIds: string[],
  start: Date,
  end: Date,
  after: [string, string],
  upTo: [string, string] | null,
): Promise<number> {
  await manager.query(`SELECT set_config('gpucap.sealing', 'on', true)`);
  const [{ readings }] = await manager.query(moveBatchSql(upTo !== null), [
    start,
    end,
    organizationIds,
    after[0],
    after[1],
    ...(upTo ?? []),
  ]);
  await manager.query(`SELECT set_config('gpucap.sealing', 'off', true)`);
  return readings as number;
}
