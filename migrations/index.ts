import { BaseSchema1763800000000 } from './1763800000000-base-schema';

/** Every migration, in order. Listed explicitly so ts-node, jest and the compiled build load the same set. */
export const migrations = [BaseSchema1763800000000];
