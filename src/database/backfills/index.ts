import type { Backfill } from './backfill';
import { workloadSampleSummaries } from './1763800032000-workload-sample-summaries';

/** Every backfill, oldest first. */
export const backfills: Backfill[] = [workloadSampleSummaries];
