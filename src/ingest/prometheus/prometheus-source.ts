import { type HeldGpus, seriesShareUnits } from '../gpu-shares';
import type { ClusterSources, PrometheusConfig } from '../sync-config';
import { PROMETHEUS_MAX_POINTS } from '../sync-config.dto';
import { ReasonCounter, SourceName } from '../sync-report';
import type { ChangedWorkload, SampleReading, SourceTally, SyncRecord } from '../sync-records';
import { SourceUnavailableError } from '../source-failure';
import { PrometheusClient, RangeSeries } from './prometheus-client';
import {
  DCGM_METRICS,
  DcgmField,
  engineActiveScale,
  type GpuDevice,
  framebufferMiB,
  physicalGpuKey,
  ReadingAssembler,
} from './dcgm-readings';

interface Lifetime {
  workloadId: string;
  from: number;
  to: number;
  held: HeldGpus;
}

/** Workloads by the labels that name them in DCGM series: `namespace/pod`, or the Slurm job id. */
interface JoinIndex {
  pods: Map<string, Lifetime[]>;
  jobs: Map<string, Lifetime[]>;
}

/** Which labels join a cluster's DCGM series to its workloads: pods, and Slurm jobs by `job_label`. */
export interface Joins {
  pods: boolean;
  jobLabel: string | null;
}

/**
 * A stored workload (pod or Slurm job) of the cluster, from submission to completion (null: not
 * finished), and how it holds its GPUs (what its share of each GPU's power is).
 */
export interface WorkloadSpan extends HeldGpus {
  workload_id: string;
  namespace: string;
  name: string;
  from: Date;
  to: Date | null;
}

/**
 * Workloads by the labels that name them in DCGM series. A GPU is the pod's from the moment its
 * container is created, which can precede its start: a lifetime begins at submission.
 */
function joinIndex(spans: WorkloadSpan[]): JoinIndex {
  const index: JoinIndex = { pods: new Map(), jobs: new Map() };
  for (const span of spans) {
    const lifetime = {
      workloadId: span.workload_id,
      from: span.from.getTime() / 1000,
      to: span.to ? span.to.getTime() / 1000 : Infinity,
      held: span,
    };
    const slurm = span.workload_id.startsWith('slurm:');
    const key = slurm
      ? span.workload_id.slice(span.workload_id.lastIndexOf(':') + 1)
      : `${span.namespace}/${span.name}`;
    const map = slurm ? index.jobs : index.pods;
    map.set(
      key,
      [...(map.get(key) ?? []), lifetime].sort((a, b) => b.from - a.from),
    );
  }
  return index;
}

/**
 * One query per DCGM field: the mean of each series' raw samples inside each step (a range of one
 * step, less a millisecond, so consecutive steps never share a sample), for the series that carry a
 * pod (`pod`, or `exported_pod` where Prometheus renamed the exporter's labels) or a Slurm job label.
 * Reading raw samples per step, instead of the instant value, keeps Prometheus' 5-minute look-back from
 * repeating a finished series' last value.
 */
export function fieldQuery(metric: string, stepSeconds: number, joins: Joins, only?: Only): string {
  const range = `[${stepSeconds * 1000 - 1}ms]`;
  const match = (names: string[] | undefined) => (names ? `=~"${names.map(escapeRegex).join('|')}"` : '!=""');
  const selectors = [
    ...(joins.pods && (!only || only.pods.length > 0)
      ? [`${metric}{pod${match(only?.pods)}}`, `${metric}{exported_pod${match(only?.pods)}}`]
      : []),
    ...(joins.jobLabel && (!only || only.jobs.length > 0)
      ? [`${metric}{${joins.jobLabel}${match(only?.jobs)}}`]
      : []),
  ];
  return selectors.map((selector) => `avg_over_time(${selector}${range})`).join(' or ');
}

/** The workload a series' point belongs to: the pod or job named by its labels, alive at that time. */
function seriesLifetimes(
  labels: Record<string, string>,
  index: JoinIndex,
  jobLabel: string | null,
): Lifetime[] | undefined {
  const job = jobLabel ? labels[jobLabel] : undefined;
  if (job) return index.jobs.get(job);
  const namespace = labels.exported_namespace ?? labels.namespace;
  const pod = labels.exported_pod ?? labels.pod;
  return namespace && pod ? index.pods.get(`${namespace}/${pod}`) : undefined;
}

function seriesKey(labels: Record<string, string>): string {
  return JSON.stringify(
    Object.entries(labels)
      .filter(([name]) => name !== '__name__')
      .sort(),
  );
}

interface Window {
  start: number;
  end: number;
  /** Catch-up windows read only these pods and jobs. */
  only?: Only;
}

interface Only {
  pods: string[];
  jobs: string[];
}

/** A literal inside a PromQL (RE2) regex, itself inside a double-quoted string. */
function escapeRegex(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, '\\\\$&').replace(/"/g, '\\"');
}

const CATCH_UP_NAMES_PER_QUERY = 100;

/** Points (series × steps) one query may return: bounds the memory of a response, whatever the GPU count. */
export const POINTS_PER_QUERY = 100_000;
/** Steps of the first window, before the number of series is known. */
const PROBE_STEPS = 10;

/**
 * Steps in the next query window: `window_points`, fewer when that many series would return more than
 * POINTS_PER_QUERY points, never more than Prometheus' 11,000 points per series.
 */
export function windowSteps(configured: number, largestSeriesCount: number | null): number {
  if (largestSeriesCount === null) return Math.min(configured, PROBE_STEPS);
  const affordable = Math.floor(POINTS_PER_QUERY / Math.max(1, largestSeriesCount));
  return Math.max(1, Math.min(configured, PROMETHEUS_MAX_POINTS, affordable));
}

/**
 * The range to read: from the watermark less the overlap (first run: the backfill), to now less the
 * lag, and never past the last successful listing of the workload sources in the config — a series
 * can only be joined to a workload that has been listed, so samples wait for their workload list.
 */
export function readRange(
  config: ClusterSources,
  prometheus: PrometheusConfig,
  watermarks: Partial<Record<SourceName, Date>>,
  now: number,
): Window | { waitingFor: string } {
  const step = prometheus.stepSeconds;
  const seconds = (date: Date) => date.getTime() / 1000;
  let end = now - prometheus.lagSeconds;
  for (const source of ['kubernetes', 'slurm'] as const) {
    if (!config[source]) continue;
    const listed = watermarks[source];
    if (!listed) return { waitingFor: source };
    end = Math.min(end, seconds(listed));
  }
  const previous = watermarks.prometheus;
  const from = previous
    ? seconds(previous) - prometheus.overlapSeconds
    : now - prometheus.backfillHours * 3600;
  // The last step ends at or after the cap, so the freshest samples are read now (and re-read, as
  // part of the overlap, once the step is complete).
  return { start: Math.ceil(from / step) * step, end: Math.ceil(end / step) * step };
}

class SampleReader {
  readonly skipped = new ReasonCounter();
  readonly unjoined = new Set<string>();
  read = 0;

  constructor(
    private readonly client: PrometheusClient,
    private readonly config: PrometheusConfig,
    private readonly organizationId: string,
    private readonly index: JoinIndex,
    private readonly joins: Joins,
    private readonly migProfiles: Record<string, number>,
    private readonly heldUnits: ReadonlyMap<string, number>,
  ) {}

  private largestSeriesCount: number | null = null;

  /** Query windows over the ranges, each sized when it is reached (from the series seen so far), × fields. */
  private *plan(ranges: Window[]): Generator<{ window: Window; field: DcgmField; text: string }> {
    const step = this.config.stepSeconds;
    for (const range of ranges) {
      for (let from = range.start; from <= range.end;) {
        const steps = windowSteps(this.config.windowPoints, this.largestSeriesCount);
        const window = { start: from, end: Math.min(range.end, from + (steps - 1) * step), only: range.only };
        for (const field of Object.keys(DCGM_METRICS) as DcgmField[]) {
          const text = fieldQuery(DCGM_METRICS[field], step, this.joins, window.only);
          if (text !== '') yield { window, field, text };
        }
        from = window.end + step;
      }
    }
  }

  /**
   * The samples of every range, window by window. The next query is already in flight while a
   * response is being joined and staged, so Prometheus' work and the sync's overlap.
   */
  async *records(ranges: Window[]): AsyncGenerator<SyncRecord> {
    const plan = this.plan(ranges);
    const send = (query: { window: Window; field: DcgmField; text: string }) => {
      const { window, text } = query;
      const response = this.client.queryRange(text, window.start, window.end, this.config.stepSeconds);
      // Awaited in turn below; a failure while an earlier window is processed must not go unhandled.
      response.catch(() => undefined);
      return { query, response };
    };
    let next = plan.next();
    let inFlight = next.done ? null : send(next.value);
    let assembler = new ReadingAssembler(this.heldUnits);
    while (inFlight) {
      const { query, response } = inFlight;
      const series = await response;
      this.largestSeriesCount = Math.max(this.largestSeriesCount ?? 0, series.length);
      next = plan.next();
      inFlight = next.done ? null : send(next.value);
      for (const one of series) this.addSeries(assembler, query.field, one);
      if (!inFlight || inFlight.query.window !== query.window) {
        yield* this.samples(assembler);
        assembler = new ReadingAssembler(this.heldUnits);
      }
    }
  }

  private *samples(assembler: ReadingAssembler): Generator<SyncRecord> {
    for (const entry of assembler.drain()) {
      this.read += 1;
      if ('missing' in entry) {
        this.skipped.add(entry.missing);
        continue;
      }
      yield {
        section: 'metric_samples',
        value: {
          organization_id: this.organizationId,
          workload_id: entry.workloadId,
          timestamp: new Date(entry.timestamp * 1000).toISOString(),
          ...entry.reading,
        },
      };
    }
  }

  private addSeries(assembler: ReadingAssembler, field: DcgmField, series: RangeSeries): void {
    const lifetimes = seriesLifetimes(series.metric, this.index, this.joins.jobLabel);
    const key = seriesKey(series.metric);
    const physical = physicalGpuKey(series.metric, key);
    const migProfile = series.metric.GPU_I_ID === undefined ? null : (series.metric.GPU_I_PROFILE ?? '');
    if (!lifetimes) {
      this.unjoined.add(key);
      return;
    }
    const values = series.values.map(([, value]) => Number(value));
    const scale =
      field === 'graphicsEngineActive' ? engineActiveScale(values, this.config.grEngineActiveUnit) : 1;
    const step = this.config.stepSeconds;
    series.values.forEach(([timestamp], position) => {
      // A step's reading covers (t - step, t]: it belongs to the workload alive in that step.
      const owner = lifetimes.find((life) => timestamp >= life.from && timestamp - step < life.to);
      if (!owner) {
        // Counted once per GPU and step (on one field), not once per field.
        if (field === 'temperature') this.skipped.add('GPU reading outside its workload lifetime');
        return;
      }
      const raw = values[position];
      const value =
        field === 'framebufferUsed' || field === 'framebufferFree' ? framebufferMiB(raw) : raw * scale;
      const device: GpuDevice = {
        series: key,
        physicalGpu: physical,
        shareUnits: seriesShareUnits(migProfile, owner.held, this.migProfiles),
      };
      assembler.add(field, owner.workloadId, device, timestamp, value);
    });
  }
}

/**
 * Ranges that re-read, before the main range, the lifetime of workloads the list sources just wrote
 * as new or changed (at most the backfill): their samples may predate the watermark, e.g. a pod that
 * was listed late, or a backfill that arrived with its end. Only their pods and jobs are queried.
 */
function catchUpRanges(
  changed: ChangedWorkload[],
  index: JoinIndex,
  prometheus: PrometheusConfig,
  range: Window,
  now: number,
): Window[] {
  const step = prometheus.stepSeconds;
  const earliestAllowed = now - prometheus.backfillHours * 3600;
  const early = changed.filter((workload) => workload.from.getTime() / 1000 < range.start);
  if (early.length === 0) return [];
  const start =
    Math.ceil(Math.max(earliestAllowed, Math.min(...early.map((w) => w.from.getTime() / 1000))) / step) *
    step;
  const end = range.start - step;
  if (start > end) return [];
  const ids = new Set(early.map((workload) => workload.workloadId));
  const pods = new Set<string>();
  const jobs = new Set<string>();
  for (const [key, lifetimes] of index.pods) {
    if (lifetimes.some((life) => ids.has(life.workloadId))) pods.add(key.slice(key.indexOf('/') + 1));
  }
  for (const [key, lifetimes] of index.jobs)
    if (lifetimes.some((life) => ids.has(life.workloadId))) jobs.add(key);
  const names = [...pods].map((pod) => ({ pod })).concat([...jobs].map((job) => ({ job }) as never));
  const windows: Window[] = [];
  for (let first = 0; first < names.length; first += CATCH_UP_NAMES_PER_QUERY) {
    const batch = names.slice(first, first + CATCH_UP_NAMES_PER_QUERY) as { pod?: string; job?: string }[];
    const only = {
      pods: batch.flatMap((name) => (name.pod ? [name.pod] : [])),
      jobs: batch.flatMap((name) => (name.job ? [name.job] : [])),
    };
    windows.push({ start, end, only });
  }
  return windows;
}

/** The joins of a cluster's sources; a Prometheus with neither fails, its series joining nothing. */
export function prometheusJoins(target: ClusterSources): Joins {
  const joins = { pods: target.kubernetes !== null, jobLabel: target.slurm?.jobLabel ?? null };
  if (!joins.pods && !joins.jobLabel) {
    throw new SourceUnavailableError(
      'prometheus needs a kubernetes or slurm section: its series are joined to their workloads',
    );
  }
  return joins;
}

/** A read to make: its range, and the instants whose workloads its series may join. */
export interface SamplePlan {
  range: Window;
  /** Unix seconds the plan was made at: catch-up reads reach back at most the backfill from it. */
  now: number;
  joinFrom: Date;
  joinTo: Date;
}

/**
 * What to read since the watermarks: nothing yet (`idle`, with the reason counted as skipped) while a
 * workload source of the cluster has never listed, or when no step is due; else the range, widened
 * back to the earliest changed workload for the join.
 */
export function planSamples(
  target: ClusterSources,
  prometheus: PrometheusConfig,
  watermarks: Partial<Record<SourceName, Date>>,
  changed: ChangedWorkload[],
  now = Date.now() / 1000,
): SamplePlan | { idle: SourceTally } {
  const range = readRange(target, prometheus, watermarks, now);
  if ('waitingFor' in range) {
    return {
      idle: { read: 0, skipped: { [`waiting for a first ${range.waitingFor} listing`]: 1 }, refused: {} },
    };
  }
  if (range.start > range.end) return { idle: { read: 0, skipped: {}, refused: {} } };
  const earliest = Math.min(range.start, ...changed.map((workload) => workload.from.getTime() / 1000));
  return {
    range,
    now,
    joinFrom: new Date((earliest - prometheus.stepSeconds) * 1000),
    joinTo: new Date(range.end * 1000),
  };
}

/** What the runner knows from the database when the source reads. */
export interface SampleInput {
  organizationId: string;
  /** The cluster's workloads alive between the plan's `joinFrom` and `joinTo`. */
  spans: WorkloadSpan[];
  changed: ChangedWorkload[];
}

/**
 * Reads the cluster's DCGM series over the plan's range (after the catch-up ranges of the changed
 * workloads) and joins them to the workloads, as sample records read while they are consumed.
 * `migProfiles`: the cluster's configured shares of MIG profiles (its kubernetes `mig_profiles`).
 */
export function readSamples(
  joins: Joins,
  prometheus: PrometheusConfig,
  plan: SamplePlan,
  { organizationId, spans, changed }: SampleInput,
  migProfiles: Record<string, number>,
): SampleReading {
  const index = joinIndex(spans);
  const heldUnits = new Map(spans.map((span) => [span.workload_id, span.gpu_share_units]));
  const reader = new SampleReader(
    new PrometheusClient(prometheus),
    prometheus,
    organizationId,
    index,
    joins,
    migProfiles,
    heldUnits,
  );
  const windows = [...catchUpRanges(changed, index, prometheus, plan.range, plan.now), plan.range];
  return {
    records: reader.records(windows),
    readUntil: new Date(plan.range.end * 1000),
    tally: () => ({
      read: reader.read,
      skipped: {
        ...reader.skipped.counts,
        ...(reader.unjoined.size > 0 ? { 'series of no synced workload': reader.unjoined.size } : {}),
      },
      refused: {},
    }),
  };
}
