/** Metrics stored per sample; `gpu_usage` is derived from `gpu_utilization` and never stored. */
export const SAMPLE_METRICS = [
  'gpu_utilization',
  'memory_utilization',
  'temperature',
  'power_usage',
] as const;
export type SampleMetric = (typeof SAMPLE_METRICS)[number];

/** Every metric of the per-workload endpoint, in response order. */
export const METRIC_NAMES = [...SAMPLE_METRICS, 'gpu_usage'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

export const TIME_RANGES = ['last_1h', 'last_6h', 'last_24h', 'job_lifetime'] as const;
export type TimeRange = (typeof TIME_RANGES)[number];

/** How far back each fixed window reaches from its end; job_lifetime starts at started_at instead. */
export const WINDOW_SECONDS: Record<Exclude<TimeRange, 'job_lifetime'>, number> = {
  last_1h: 3_600,
  last_6h: 6 * 3_600,
  last_24h: 24 * 3_600,
};

export const RANK_METRICS = [
  'gpu_utilization',
  'memory_utilization',
  'power_usage',
  'gpu_hours',
  'idle_gpu_hours',
  'gpu_efficiency',
  'cost',
  'energy_kwh',
] as const;
export type RankMetric = (typeof RANK_METRICS)[number];

export const SORT_ORDERS = ['asc', 'desc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];

/**
 * Parses the `metrics` parameter: a comma list of known names, repeats ignored, kept in the
 * canonical order. Returns the unknown names instead when there are any.
 */
export function parseMetricList(text: string): { metrics: MetricName[] } | { unknown: string[] } {
  const requested = text.split(',').map((name) => name.trim());
  const unknown = [
    ...new Set(requested.filter((name) => !(METRIC_NAMES as readonly string[]).includes(name))),
  ];
  if (unknown.length > 0) return { unknown };
  return { metrics: METRIC_NAMES.filter((name) => requested.includes(name)) };
}
