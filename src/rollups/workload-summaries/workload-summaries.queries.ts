/** Where a right-sizing read takes a workload's evidence from; every field is SQL text. */
export interface SampleEvidenceSource {
  /** The workloads row's alias. */
  workload: string;
  /** The range: inclusive start, exclusive end. */
  from: string;
  to: string;
  /** The run inside the range. */
  runFrom: string;
  runTo: string;
  /** Whether the workload's samples are read at all (false: a count of 0). */
  read: string;
  /** The alias of the evidence's columns (those of SAMPLE_EVIDENCE_SQL). */
  alias: string;
}

/**
 * A workload's right-sizing evidence inside a range, one row as `alias`. A finished run wholly in
 * the range (started at or after `from`, completed before `to`) reads every sample of its run, so
 * its stored summary is that evidence: one primary-key read. Runs crossing an edge of the range,
 * running workloads and those without a summary (started before the retention boundary) take it
 * from their window's hours (gpucap_window_evidence: the same figures as SAMPLE_EVIDENCE_SQL over
 * the window's samples, from each hour's largest readings); the planner skips that read (a
 * one-time filter) for a workload answered by its summary or not read at all (a count of 0).
 * Samples at the run's end count, those at `to` do not: the window ends a microsecond before it.
 */
export function sampleEvidenceSql(source: SampleEvidenceSource): string {
  const { workload: w, alias } = source;
  const stored = `${alias}_stored`;
  const sampled = `${alias}_sampled`;
  const columns = (table: string, count = `${table}.sample_count`) =>
    `${count}, ${table}.sampled_seconds, ${table}.p95_gpu_utilization, ` +
    `${table}.p99_memory_utilization, ${table}.top_memory_utilization`;
  return `LEFT JOIN workload_sample_summaries ${stored}
       ON ${stored}.organization_id = ${w}.organization_id AND ${stored}.workload_id = ${w}.workload_id
      AND ${w}.started_at >= ${source.from} AND ${w}.completed_at < ${source.to} AND (${source.read})
     LEFT JOIN LATERAL (
       SELECT x.* FROM gpucap_window_evidence(${w}.organization_id, ${w}.workload_id, ${source.runFrom},
                                              least(${source.runTo}, ${source.to} - interval '1 microsecond')) x
       WHERE ${stored}.workload_id IS NULL AND (${source.read})
       -- Kept a subquery, so the condition gates the call (a one-time filter): pulled up into the
       -- join, it would filter the function's row after calling it for every workload.
       OFFSET 0
     ) ${sampled} ON true
     CROSS JOIN LATERAL (
       SELECT ${columns(stored)} WHERE ${stored}.workload_id IS NOT NULL
       UNION ALL
       SELECT ${columns(sampled, `coalesce(${sampled}.sample_count, 0)`)} WHERE ${stored}.workload_id IS NULL
     ) ${alias}`;
}
