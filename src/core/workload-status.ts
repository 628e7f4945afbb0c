export const WORKLOAD_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type WorkloadStatus = (typeof WORKLOAD_STATUSES)[number];
