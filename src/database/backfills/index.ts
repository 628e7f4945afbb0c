import type { Backfill } from './backfill';
import { queueWaitHistogramsBackfill } from './1763800032000-queue-wait-histograms';
import { sampleHoursBackfill } from './1763800035000-sample-hours';
import { settledCostsBackfill } from './1763800036000-settled-costs';
import { energyBackfill } from './1763800040000-energy';
import { clusterKeysBackfill } from './1763800042000-cluster-keys';
import { workloadEnergyBackfill } from './1763800043000-workload-energy';
import { waitBlocksBackfill } from './1763800044000-wait-blocks';
import { hourTailsBackfill } from './1763800045000-hour-tails';

/** Every backfill, oldest first. */
export const backfills: Backfill[] = [
  queueWaitHistogramsBackfill,
  sampleHoursBackfill,
  settledCostsBackfill,
  energyBackfill,
  clusterKeysBackfill,
  workloadEnergyBackfill,
  waitBlocksBackfill,
  hourTailsBackfill,
];
