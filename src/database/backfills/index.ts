import type { Backfill } from './backfill';
import { sampleHoursBackfill } from './1763800032000-sample-hours';

/** Every backfill, oldest first. */
export const backfills: Backfill[] = [sampleHoursBackfill];
