import type { Backfill } from './backfill';
import { sampleHoursBackfill } from './1763800035000-sample-hours';

/** Every backfill, oldest first. */
export const backfills: Backfill[] = [sampleHoursBackfill];
