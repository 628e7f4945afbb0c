/**
 * How long a started workload waited in the queue, whole seconds (floor), over a `workloads` row:
 * the one definition of a wait, shared by the workloads' figures and capacity's pools. `date_part`
 * (float8) rather than `extract` (numeric, slower per row) is exact here: an interval is whole
 * microseconds, so its seconds as a float8 are an integer exactly when the interval is whole seconds,
 * and a microsecond away from one otherwise, far more than a float8's error below 2^53 µs.
 */
export const WAIT_SECONDS_SQL = "floor(date_part('epoch', started_at - submitted_at))";
