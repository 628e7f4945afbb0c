import type { SectionName } from '../import/import-sections';

/** A record in the import format (the shape `gpucap import` reads), before validation. */
export interface SyncRecord {
  section: Extract<
    SectionName,
    | 'organizations'
    | 'initiatives'
    | 'prices'
    | 'carbon_intensity'
    | 'instance_types'
    | 'workloads'
    | 'metric_samples'
  >;
  value: Record<string, unknown>;
}

/** Items a source read and why it left some out: the report's counts that do not come from the write. */
export interface SourceTally {
  /** Items read from the source: pods, jobs, or per-workload readings. */
  read: number;
  skipped: Record<string, number>;
  refused: Record<string, number>;
}

/** What a workload source (Kubernetes, Slurm) read, as records for the runner to write. */
export interface WorkloadListing extends SourceTally {
  /** The initiatives the listing creates first, then its workloads. */
  records: SyncRecord[];
  /** Initiatives among the records that `unknown_initiatives: create` adds. */
  createdInitiatives: string[];
  /** When the listing began: the source's watermark once its records are written. */
  readUntil: Date;
}

/**
 * What the Prometheus source reads, as samples for the runner to write. The records are read from
 * Prometheus while the writer consumes them, so the tally is complete only once they are consumed.
 */
export interface SampleReading {
  records: AsyncIterable<SyncRecord>;
  /** The end of the range read: the source's watermark once its records are written. */
  readUntil: Date;
  tally(): SourceTally;
}

/** A workload that is new or whose status or end changed in this run, and since when it ran. */
export interface ChangedWorkload {
  workloadId: string;
  from: Date;
}
