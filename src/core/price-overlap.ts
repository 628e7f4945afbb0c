/*
 * The one definition of how much of a run a price period covers, shared by the readers that price a
 * run at request time (src/common/cost.ts) and the triggers that settle a finished one
 * (src/rollups/workload-costs/): the two must agree to the microsecond.
 */

/** Microseconds of [from, to) inside price period `price` (0 when disjoint or `from` is null). */
export function overlapMicrosecondsSql(price: string, from: string, to: string): string {
  // least and greatest skip nulls: without the CASE an open period would meet an unstarted run as infinity.
  return `CASE WHEN ${from} IS NOT NULL THEN greatest(0, round(date_part('epoch', least(coalesce(${price}.effective_to, 'infinity'::timestamptz), ${to}) - greatest(${price}.effective_from, ${from})) * 1e6))::bigint ELSE 0 END`;
}
