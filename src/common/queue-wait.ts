/**
 * How long a started workload waited in the queue, whole seconds (floor), over a `workloads` row:
 * the one definition of a wait, shared by the workloads' figures and capacity's pools.
 */
export const WAIT_SECONDS_SQL = 'floor(extract(epoch FROM started_at - submitted_at))';
