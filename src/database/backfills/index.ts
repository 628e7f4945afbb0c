import type { Backfill } from './backfill';
import { queueWaitHistogramsBackfill } from './1763800032000-queue-wait-histograms';

/** Every backfill, oldest first. */
export const backfills: Backfill[] = [queueWaitHistogramsBackfill];
