import type { DataSource } from 'typeorm';

const DAY_MS = 86_400_000;

/** The partitioned tables of the sample stores, weekly each: rows, day blocks and the days' hour summaries. */
export const SAMPLE_STORES = ['metric_samples', 'metric_sample_days', 'metric_sample_hours'] as const;
export type SampleStore = (typeof SAMPLE_STORES)[number];

/**
 * The partitions of `stores` with their range bounds read back from the catalog, as a subquery
 * (parent, name, detach_pending, range_start, range_end). The bound is deparsed without its
 * relation (relid 0): given one, pg_get_expr looks it up outside the statement's snapshot and
 * answers NULL once a concurrent prune has dropped it, even for a row the statement already saw.
 * Bounds are constants, so nothing in them needs the relation's columns.
 */
export function partitionBoundsSql(stores: readonly SampleStore[]): string {
  return `
    SELECT i.inhparent::regclass::text AS parent, c.relname AS name, i.inhdetachpending AS detach_pending,
           substring(pg_get_expr(c.relpartbound, 0) FROM 'FROM \\(''([^'']+)''\\)')::timestamptz AS range_start,
           substring(pg_get_expr(c.relpartbound, 0) FROM 'TO \\(''([^'']+)''\\)')::timestamptz AS range_end
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent IN (${stores.map((store) => `'${store}'::regclass`).join(', ')})`;
}

/**
 * Creates the weekly metric-sample partitions from the retention horizon to two weeks ahead.
 * Done outside any import: creating a partition inside an import's transaction locks the samples
 * table for readers until that import commits, so routine imports should find their week in place.
 */
export async function ensureUpcomingSamplePartitions(
  dataSource: DataSource,
  now = new Date(),
): Promise<number> {
  return ensureSamplePartitions(
    dataSource,
    new Date(now.getTime() - 91 * DAY_MS),
    new Date(now.getTime() + 14 * DAY_MS),
  );
}

/**
 * Creates the weeks of [from, to] missing in every sample store; returns the rows' weeks created.
 * Each store in a statement of its own (sample-store.definitions.ts says why).
 */
export async function ensureSamplePartitions(dataSource: DataSource, from: Date, to: Date): Promise<number> {
  const [row] = await dataSource.query<{ created: number }[]>(
    'SELECT gpucap_ensure_sample_partitions($1, $2) AS created',
    [from, to],
  );
  await dataSource.query('SELECT gpucap_ensure_sample_day_partitions($1, $2)', [from, to]);
  await dataSource.query('SELECT gpucap_ensure_sample_hour_partitions($1, $2)', [from, to]);
  return row?.created ?? 0;
}
