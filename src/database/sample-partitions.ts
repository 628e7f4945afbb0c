import type { DataSource } from 'typeorm';

const DAY_MS = 86_400_000;

/**
 * Creates the weekly metric-sample partitions from the retention horizon to two weeks ahead.
 * Done outside any import: creating a partition inside an import's transaction locks the samples
 * table for readers until that import commits, so routine imports should find their week in place.
 */
export async function ensureUpcomingSamplePartitions(
  dataSource: DataSource,
  now = new Date(),
): Promise<number> {
  const range = [new Date(now.getTime() - 91 * DAY_MS), new Date(now.getTime() + 14 * DAY_MS)];
  const [row] = await dataSource.query<{ created: number }[]>(
    'SELECT gpucap_ensure_sample_partitions($1, $2) AS created',
    range,
  );
  // The day blocks' weeks and their hours' each in a statement of their own (sample-store.definitions.ts says why).
  await dataSource.query('SELECT gpucap_ensure_sample_day_partitions($1, $2)', range);
  await dataSource.query('SELECT gpucap_ensure_sample_hour_partitions($1, $2)', range);
  return row?.created ?? 0;
}
