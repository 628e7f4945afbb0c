import type { Backfill } from './backfill';

/** Every backfill, oldest first. None yet: the first rollup that needs its stored amounts rewritten adds one. */
export const backfills: Backfill[] = [];
