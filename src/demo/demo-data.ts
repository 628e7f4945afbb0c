import type { PricingModel } from '../common/money';
import type { DataSource } from 'typeorm';
import { BulkLoader } from '../import/bulk-loader';
import type { ImportRecord, SectionName } from '../import/import-sections';
import { DEFAULT_MAX_SAMPLE_GAP_SECONDS } from '../import/record-validator';
import {
  DEMO_CLUSTERS,
  DEMO_ORGANIZATION_ID,
  DEMO_TIMEZONE,
  demoMembers,
  INITIATIVES,
  INSTANCE_TYPES,
  POOLS,
} from './demo-organization';
import { demoSamples, sampleSlots } from './demo-samples';
import { demoWorkload, WorkloadPlan } from './demo-workloads';

export { DEMO_ORGANIZATION_ID } from './demo-organization';

export interface DemoOptions {
  workloads: number;
  /** Each statement's time on stderr (GPUCAP_IMPORT_TRACE). */
  trace?: boolean;
  seed: number;
  /**
   * Defaults to the current time rounded down to the minute: the newest workloads were submitted up to
   * it, and two runs in one minute write the same rows.
   */
  now?: Date;
  /**
   * Total metric samples to spread over the most recent workloads (a run's samples every 30 s, up to
   * 30 days per workload). Omitted: the last 24 hours of every running workload and the last 90
   * minutes of every workload finished in the last 7 days.
   */
  samples?: number;
  onProgress?: (message: string) => void;
}

export interface DemoSummary {
  organizationId: string;
  initiativeIds: string[];
  workloads: number;
  samples: number;
}

const DAY = 86_400_000;
/** The last 24 hours of a running workload: what the page's utilization chart draws. */
const RUNNING_CAP = 2880;
const RECENT_CAP = 180;
const TARGETED_CAP = 30 * 2880;
const PROGRESS_EVERY = 1_000_000;

export function demoNow(now?: Date): Date {
  const time = (now ?? new Date()).getTime();
  return new Date(now ? time : time - (time % 60_000));
}

/**
 * USD per GPU-hour of the demo's instance types (AWS-like). The A100 contract, the L4 and the A10G
 * pools each charge one price for all their types, so their allocations have a money value
 * (`allocated_cost`); the H100 pool's price changes inside the period (below), so its has none.
 */
const DEMO_PRICES: { instanceType: string; price: string; model: PricingModel }[] = [
  { instanceType: 'p4d.24xlarge', price: '4.10', model: 'reserved' },
  { instanceType: 'p4de.24xlarge', price: '4.10', model: 'reserved' },
  { instanceType: 'g6.12xlarge', price: '1.1650', model: 'on_demand' },
  { instanceType: 'g6.48xlarge', price: '1.1650', model: 'on_demand' },
  { instanceType: 'g5.12xlarge', price: '0.6851', model: 'spot' },
  { instanceType: 'g5.48xlarge', price: '0.6851', model: 'spot' },
  { instanceType: 'g4dn.xlarge', price: '0.526', model: 'on_demand' },
];

/**
 * Prices from a year before the period (older than any demo workload), open-ended; p5.48xlarge moves
 * from on-demand to a reserved price halfway between the period's start and now (on the hour), so
 * runs across that instant are charged each part at its price.
 */
function demoPrices(periodStart: Date, now: Date) {
  const from = new Date(periodStart.getTime() - 365 * DAY);
  const change = new Date(Math.floor((periodStart.getTime() + now.getTime()) / 2 / 3_600_000) * 3_600_000);
  const base = { currency: 'USD', effective_from: from, effective_to: null };
  return [
    {
      ...base,
      instance_type: 'p5.48xlarge',
      price_per_gpu_hour: '6.88',
      pricing_model: 'on_demand' as const,
      effective_to: change,
    },
    {
      ...base,
      instance_type: 'p5.48xlarge',
      price_per_gpu_hour: '4.30',
      pricing_model: 'reserved' as const,
      effective_from: change,
    },
    ...DEMO_PRICES.map((price) => ({
      ...base,
      instance_type: price.instanceType,
      price_per_gpu_hour: price.price,
      pricing_model: price.model,
    })),
  ];
}

/**
 * Carbon intensity of each demo cluster's grid, over the same span as the prices: us-east-1's moves to a
 * cleaner supply contract at the same hour p5.48xlarge's price changes (runs across it are weighed in
 * two parts); us-west-2 (mostly hydro) keeps one.
 */
function demoCarbonIntensities(periodStart: Date, now: Date) {
  const from = new Date(periodStart.getTime() - 365 * DAY);
  const change = new Date(Math.floor((periodStart.getTime() + now.getTime()) / 2 / 3_600_000) * 3_600_000);
  const [east, west] = DEMO_CLUSTERS;
  return [
    { cluster_id: east, effective_from: from, effective_to: change, grams_co2e_per_kwh: 410, pue: 1.2 },
    { cluster_id: east, effective_from: change, effective_to: null, grams_co2e_per_kwh: 320, pue: 1.2 },
    { cluster_id: west, effective_from: from, effective_to: null, grams_co2e_per_kwh: 90, pue: 1.1 },
  ];
}

/**
 * The current calendar quarter of the organization's time zone, from its local midnight to its local
 * midnight: the burn-down's days then cover the period exactly, none cut at a UTC midnight.
 */
export function currentQuarter(now: Date, timeZone = DEMO_TIMEZONE): { start: Date; end: Date } {
  const local = new Date(now.getTime() + utcOffsetMs(now.getTime(), timeZone));
  const quarterMonth = Math.floor(local.getUTCMonth() / 3) * 3;
  return {
    start: localMidnight(local.getUTCFullYear(), quarterMonth, timeZone),
    end: localMidnight(local.getUTCFullYear(), quarterMonth + 3, timeZone),
  };
}

/** How far the zone's wall clock is ahead of UTC at an instant (negative west of Greenwich). */
function utcOffsetMs(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(instant));
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    Number(parts.find((item) => item.type === type)?.value);
  const wall = Date.UTC(
    part('year'),
    part('month') - 1,
    part('day'),
    part('hour'),
    part('minute'),
    part('second'),
  );
  return wall - (instant - (instant % 1000));
}

/** The instant of 00:00 on the first of a month (0-based, may run past 11) in the zone. */
function localMidnight(year: number, month: number, timeZone: string): Date {
  const wall = Date.UTC(year, month, 1);
  // The offset at the guess can differ from the one at the answer across a DST change: ask twice.
  const guess = wall - utcOffsetMs(wall, timeZone);
  return new Date(wall - utcOffsetMs(guess, timeZone));
}

/**
 * Every record of the demo organization, parents first, then workloads, allocations (sized from the
 * usage the workloads accrued this quarter) and metric samples. Deterministic for (seed, workloads,
 * samples, now). Records are produced lazily: a million workloads and fifty million samples stream.
 */
export function* generateDemoRecords(options: DemoOptions): Generator<ImportRecord> {
  const now = demoNow(options.now);
  const plan: WorkloadPlan = { seed: options.seed >>> 0, count: options.workloads, now: now.getTime() };
  const period = currentQuarter(now);
  const counters = new Map<SectionName, number>();
  const record: RecordFactory = (section, row) => {
    const location = counters.get(section) ?? 0;
    counters.set(section, location + 1);
    return { section, location, row } as ImportRecord;
  };
  const organizationId = DEMO_ORGANIZATION_ID;
  yield record('organizations', {
    organization_id: organizationId,
    name: 'Demo Robotics',
    timezone: DEMO_TIMEZONE,
    budget_period_start: period.start,
    budget_period_end: period.end,
    max_sample_gap_seconds: DEFAULT_MAX_SAMPLE_GAP_SECONDS,
  });
  for (const initiative of INITIATIVES) {
    yield record('initiatives', {
      organization_id: organizationId,
      initiative_id: initiative.initiativeId,
      name: initiative.name,
    });
  }
  for (const pool of POOLS) {
    yield record('pools', {
      organization_id: organizationId,
      pool_id: pool.poolId,
      name: pool.name,
      instance_types: pool.instanceTypes,
    });
  }
  for (const member of demoMembers()) {
    yield record('members', {
      organization_id: organizationId,
      subject: member.subject,
      role: member.role,
      initiative_ids: member.initiativeIds,
    });
  }
  for (const price of demoPrices(period.start, now)) {
    yield record('prices', { organization_id: organizationId, ...price });
  }
  for (const intensity of demoCarbonIntensities(period.start, now)) {
    yield record('carbon_intensity', { organization_id: organizationId, ...intensity });
  }
  const usage = new Map<string, number>();
  for (let index = 0; index < plan.count; index += 1) {
    const workload = demoWorkload(plan, index);
    addPeriodUsage(
      usage,
      workload.row.initiative_id,
      workload.row.instance_type,
      workload.gpuShare,
      workload.run,
      period.start.getTime(),
    );
    yield record('workloads', workload.row);
  }
  yield* allocationRecords(usage, record);
  yield* sampleRecords(plan, options, record);
}

type RecordFactory = <S extends SectionName>(
  section: S,
  row: Extract<ImportRecord, { section: S }>['row'],
) => ImportRecord;

function poolOf(instanceType: string): string | undefined {
  return POOLS.find((pool) => pool.instanceTypes.includes(instanceType))?.poolId;
}

function addPeriodUsage(
  usage: Map<string, number>,
  initiativeId: string,
  instanceType: string,
  gpuShare: number,
  run: { start: number; end: number } | null,
  periodStart: number,
): void {
  const poolId = poolOf(instanceType);
  if (!run || !poolId) return;
  const hours = (Math.max(0, run.end - Math.max(run.start, periodStart)) / 3_600_000) * gpuShare;
  const key = `${initiativeId}|${poolId}`;
  usage.set(key, (usage.get(key) ?? 0) + hours);
}

/** One allocation per (initiative, pool) the initiative used, some under what was used already. */
function* allocationRecords(usage: Map<string, number>, record: RecordFactory): Generator<ImportRecord> {
  for (const initiative of INITIATIVES) {
    for (const pool of POOLS) {
      const used = usage.get(`${initiative.initiativeId}|${pool.poolId}`);
      if (used === undefined) continue;
      yield record('allocations', {
        organization_id: DEMO_ORGANIZATION_ID,
        initiative_id: initiative.initiativeId,
        pool_id: pool.poolId,
        allocated_gpu_hours: Math.max(100, Math.round((used * initiative.budgetFactor) / 10) * 10),
      });
    }
  }
}

/**
 * Walks workloads from the newest back. Default: the last 24 hours of every running workload and the
 * last 90 minutes of every workload that finished in the last 7 days. Targeted (`samples`): running workloads first get up to half the target between
 * them, then finished ones their whole run (up to 30 days) while the rest of the target lasts.
 */
function* sampleRecords(
  plan: WorkloadPlan,
  options: DemoOptions,
  record: RecordFactory,
): Generator<ImportRecord> {
  const targeted = options.samples !== undefined;
  const runningCap = targeted ? runningSampleCap(plan, options.samples ?? 0) : RUNNING_CAP;
  let budget = targeted ? (options.samples ?? 0) - runningSamples(plan, runningCap) : 0;
  for (let index = plan.count - 1; index >= 0; index -= 1) {
    const workload = demoWorkload(plan, index);
    if (!workload.run) continue;
    let cap = runningCap;
    if (workload.row.status !== 'running') {
      if (targeted ? budget <= 0 : workload.run.end < plan.now - 7 * DAY) continue;
      cap = targeted ? Math.min(TARGETED_CAP, budget) : RECENT_CAP;
      budget -= sampleSlots(workload.run, cap).count;
    }
    for (const sample of demoSamples(workload, plan.seed, cap)) yield record('metric_samples', sample);
  }
}

function runningWorkloads(plan: WorkloadPlan) {
  const running = [];
  for (let index = 0; index < plan.count; index += 1) {
    const workload = demoWorkload(plan, index);
    if (workload.row.status === 'running' && workload.run) running.push(workload.run);
  }
  return running;
}

function runningSampleCap(plan: WorkloadPlan, target: number): number {
  const count = runningWorkloads(plan).length;
  return Math.max(RECENT_CAP, Math.min(TARGETED_CAP, Math.floor(target / 2 / Math.max(count, 1))));
}

function runningSamples(plan: WorkloadPlan, cap: number): number {
  return runningWorkloads(plan).reduce((sum, run) => sum + sampleSlots(run, cap).count, 0);
}

/** Writes the demo organization through the import's bulk loader (upserts: running it twice duplicates nothing). */
export async function writeDemoData(dataSource: DataSource, options: DemoOptions): Promise<DemoSummary> {
  const loader = await BulkLoader.open(dataSource, { trace: options.trace });
  let count = 0;
  const started = Date.now();
  try {
    for (const item of generateDemoRecords(options)) {
      await loader.add(item);
      count += 1;
      if (count % PROGRESS_EVERY === 0) {
        const seconds = (Date.now() - started) / 1000;
        options.onProgress?.(
          `${count.toLocaleString('en-US')} records generated (${Math.round(count / seconds).toLocaleString('en-US')}/s)`,
        );
      }
    }
    const summary = await loader.finish();
    return {
      organizationId: DEMO_ORGANIZATION_ID,
      initiativeIds: INITIATIVES.map((initiative) => initiative.initiativeId).sort(),
      workloads: summary.records.workloads,
      samples: summary.records.metric_samples,
    };
  } catch (error) {
    await loader.abort();
    throw error;
  }
}

/** Instance types of the demo, for documentation and tests. */
export const DEMO_INSTANCE_TYPES = Object.keys(INSTANCE_TYPES);
