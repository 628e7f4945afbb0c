import type { DataSource } from 'typeorm';
import type { Backfill } from '../../src/database/backfills/backfill';

/** Runs every part of `backfill` that belongs to `organizationId`, each in its own transaction; returns how many. */
export async function runBackfillParts(
  dataSource: DataSource,
  backfill: Backfill,
  organizationId: string,
): Promise<number> {
  const parts = ((await backfill.parts!(dataSource)) as { organizationId: string }[]).filter(
    (part) => part.organizationId === organizationId,
  );
  for (const part of parts) {
    const runner = dataSource.createQueryRunner();
    await runner.startTransaction();
    await backfill.up(runner, part);
    await runner.commitTransaction();
    await runner.release();
  }
  return parts.length;
}
