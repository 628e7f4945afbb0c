import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { GPU_SHARE_UNITS, gpusOfUnits } from '../common/gpu-sharing';
import {
  currencyMinorUnits,
  ExactSum,
  roundedAmount,
  scaledDecimal,
  UNIT_MICROSECONDS_PER_GPU_HOUR,
} from '../common/money';
import { round4, round4OrNull } from '../common/http/decimal';
import { idleGpuFigures, type IdleGpuJson } from '../common/idle-gpu';
import { ScopedDatabase } from '../common/database/scoped-database';
import { assertInitiativeInScope } from '../common/auth/scope-checks';
import { BURN_WINDOW_DAYS, budgetFigures } from './capacity-figures';
import {
  AllocationRow,
  allocationsQuery,
  BudgetPeriod,
  budgetPeriodQuery,
  CapacityFilters,
  InitiativeRow,
  initiativesQuery,
  type OrganizationPeriodRow,
  type PoolQueueRow,
  poolQueueQuery,
  PoolRow,
  poolsQuery,
  UsageRow,
  type CostRow,
  costByWindowQuery,
  usageByInitiativeAndPoolQuery,
  usageByWindowQuery,
  type WindowUsageRow,
} from './capacity.queries';
import { type BurnDownDay, burnDown } from './burn-down';
import { timelineBoundariesQuery } from '../common/calendar-boundaries.queries';
import { CapacityQueryDto } from './dto/capacity-query.dto';
import { CapacityPoolDto, CapacityReportDto, CapacitySummaryDto } from './dto/capacity-report.dto';
import { DAY_MS, type UsageWindow } from '../rollups/capacity-usage/usage-window';
import { compareIds } from '../core/identifier';
import { MICROJOULES_PER_KWH } from '../rollups/metric-aggregates/metric-aggregates.queries';

/** Unrounded GPU hours of one pool, one initiative or the whole scope. */
class Totals {
  /** Σ share-unit-microseconds × price, exact. */
  priceUnitUs = new ExactSum();
  /** Σ idle share-unit-microseconds × price, exact (busy parts carry many decimals). */
  idlePriceUnitUs = new ExactSum();
  unpricedUnitUs = 0;
  allocated = 0;
  hasAllocation = false;
  used = 0;
  usedInBurnWindow = 0;
  sampledGpuSeconds = 0;
  busyGpuSeconds = 0;
  energyMicrojoules = 0;
}

class TotalsByKey extends Map<string, Totals> {
  of(key: string): Totals {
    let totals = this.get(key);
    if (!totals) {
      totals = new Totals();
      this.set(key, totals);
    }
    return totals;
  }
}

interface Tally {
  summary: Totals;
  initiatives: TotalsByKey;
  pools: TotalsByKey;
}

@Injectable()
export class CapacityService {
  constructor(private readonly database: ScopedDatabase) {}

  async report(scope: AuthScope, query: CapacityQueryDto, now: Date): Promise<CapacityReportDto> {
    return (await this.reportWithCurrency(scope, query, now)).report;
  }

  /** The report and the currency of its amounts (null while the organization has no price). */
  async reportWithCurrency(
    scope: AuthScope,
    query: CapacityQueryDto,
    now: Date,
  ): Promise<{ report: CapacityReportDto; currency: string | null }> {
    assertInitiativeInScope(scope, query.initiative_id);
    const filters: CapacityFilters = {
      initiativeId: query.initiative_id ?? null,
      poolId: query.pool_id ?? null,
      clusterId: query.cluster_id ?? null,
    };
    const [period] = await this.database.run<OrganizationPeriodRow>(budgetPeriodQuery(scope));
    if (!period) throw new Error(`Organization ${scope.organizationId} vanished during the request`);
    const periodSoFar = { from: period.start, to: new Date(Math.min(period.end.getTime(), now.getTime())) };
    const burnWindow = { from: new Date(now.getTime() - BURN_WINDOW_DAYS * DAY_MS), to: now };
    const [usage, allocations, initiatives, pools, queues, costs] = await Promise.all([
      this.database.run<UsageRow>(
        usageByInitiativeAndPoolQuery(scope, filters, { period: periodSoFar, burn: burnWindow }),
      ),
      this.database.run<AllocationRow>(allocationsQuery(scope, filters)),
      this.database.run<InitiativeRow>(initiativesQuery(scope, filters)),
      this.database.run<PoolRow>(poolsQuery(scope, filters)),
      this.database.run<PoolQueueRow>(poolQueueQuery(scope, filters, burnWindow)),
      this.costs(scope, filters, periodSoFar, now, period),
    ]);
    const queueOf = new Map(queues.map((row) => [row.pool_id, row]));
    const tally = tallyFigures(allocations, usage, costs);
    const costFigures = costFiguresOf(period.currency, costs !== null);
    const allocatedCosts = allocatedCostsOf(period, pools, allocations);
    const summary: CapacitySummaryDto = {
      ...summaryFigures(tally.summary, now, period),
      ...costFigures(tally.summary, 'total_used_cost'),
      total_allocated_cost: allocatedCosts.summary,
      current_active_gpus: usage.reduce((sum, row) => sum + row.active_gpus, 0),
      current_active_gpu_share: round4(
        gpusOfUnits(usage.reduce((sum, row) => sum + row.active_share_units, 0)),
      ),
    };
    const report: CapacityReportDto = {
      organization_id: scope.organizationId,
      timezone: period.timezone,
      summary,
      pools: pools
        .filter((pool) => {
          const totals = tally.pools.get(pool.pool_id);
          return totals !== undefined && (totals.hasAllocation || totals.used > 0);
        })
        .sort((a, b) => compareIds(a.pool_id, b.pool_id))
        .map((pool): CapacityPoolDto => ({
          pool_id: pool.pool_id,
          name: pool.name,
          ...figuresOf(tally.pools.of(pool.pool_id), now, period),
          ...costFigures(tally.pools.of(pool.pool_id), 'used_cost'),
          allocated_cost: allocatedCosts.of(`pool:${pool.pool_id}`),
          ...queueFiguresOf(queueOf.get(pool.pool_id)),
          instance_types: pool.instance_types,
        })),
      initiatives: initiatives.map((initiative) => ({
        initiative_id: initiative.initiative_id,
        name: initiative.name,
        ...figuresOf(tally.initiatives.of(initiative.initiative_id), now, period),
        ...costFigures(tally.initiatives.of(initiative.initiative_id), 'used_cost'),
        allocated_cost: allocatedCosts.of(`initiative:${initiative.initiative_id}`),
      })),
      period: { start: period.start.toISOString(), end: period.end.toISOString() },
    };
    if (query.interval === 'day') await this.addBurnDown(scope, filters, periodSoFar, now, tally, report);
    return { report, currency: period.currency };
  }

  /**
   * The cost of the period so far, cut at every price change inside it (costByWindowQuery); null
   * without a price.
   */
  private async costs(
    scope: AuthScope,
    filters: CapacityFilters,
    periodSoFar: UsageWindow,
    now: Date,
    prices: OrganizationPeriodRow,
  ): Promise<CostRow[] | null> {
    if (prices.currency === null) return null;
    if (periodSoFar.from >= periodSoFar.to) return [];
    const cuts = prices.price_boundaries.filter((at) => at > periodSoFar.from && at < periodSoFar.to);
    const edges = [periodSoFar.from, ...cuts, periodSoFar.to];
    const windows = edges.slice(0, -1).map((from, index) => ({ from, to: edges[index + 1] }));
    return this.database.run<CostRow>(costByWindowQuery(scope, filters, windows, now));
  }

  /**
   * The period so far cut into the organization's local days, their use in one statement, and per
   * entry the day-by-day remaining budget and the thresholds crossed.
   */
  private async addBurnDown(
    scope: AuthScope,
    filters: CapacityFilters,
    periodSoFar: UsageWindow,
    now: Date,
    tally: Tally,
    report: CapacityReportDto,
  ): Promise<void> {
    const days = await this.localDays(scope, periodSoFar);
    const windows = days.map((day) => day.window);
    const rows = await this.database.run<WindowUsageRow>(usageByWindowQuery(scope, filters, windows, now));
    const perDay = dailyTally(rows, days.length);
    Object.assign(report.summary, burnDown(days, perDay.summary, tally.summary.allocated));
    for (const pool of report.pools) {
      Object.assign(
        pool,
        burnDown(days, perDay.of(`pool:${pool.pool_id}`), tally.pools.of(pool.pool_id).allocated),
      );
    }
    for (const initiative of report.initiatives) {
      const key = `initiative:${initiative.initiative_id}`;
      Object.assign(
        initiative,
        burnDown(days, perDay.of(key), tally.initiatives.of(initiative.initiative_id).allocated),
      );
    }
  }

  private async localDays(scope: AuthScope, periodSoFar: UsageWindow): Promise<BurnDownDay[]> {
    if (periodSoFar.from >= periodSoFar.to) return [];
    const boundaries = await this.database.run<{ boundary: Date; local_date: string }>(
      timelineBoundariesQuery(scope, 'day', periodSoFar.from, periodSoFar.to),
    );
    return boundaries.slice(0, -1).map((start, index) => ({
      date: start.local_date,
      window: {
        from: new Date(Math.max(start.boundary.getTime(), periodSoFar.from.getTime())),
        to: new Date(Math.min(boundaries[index + 1].boundary.getTime(), periodSoFar.to.getTime())),
      },
    }));
  }
}

/** Used GPU hours per day for the summary and for each pool and initiative (keys `pool:…`, `initiative:…`). */
function dailyTally(rows: WindowUsageRow[], dayCount: number) {
  const summary = new Array<number>(dayCount).fill(0);
  const byKey = new Map<string, number[]>();
  const of = (key: string) => {
    let days = byKey.get(key);
    if (!days) byKey.set(key, (days = new Array<number>(dayCount).fill(0)));
    return days;
  };
  for (const row of rows) {
    summary[row.window_index] += row.used_gpu_hours;
    of(`initiative:${row.initiative_id}`)[row.window_index] += row.used_gpu_hours;
    if (row.pool_id !== null) of(`pool:${row.pool_id}`)[row.window_index] += row.used_gpu_hours;
  }
  return { summary, of };
}

function tallyFigures(allocations: AllocationRow[], usage: UsageRow[], costs: CostRow[] | null): Tally {
  const tally: Tally = { summary: new Totals(), initiatives: new TotalsByKey(), pools: new TotalsByKey() };
  for (const allocation of allocations) {
    for (const totals of [
      tally.summary,
      tally.initiatives.of(allocation.initiative_id),
      tally.pools.of(allocation.pool_id),
    ]) {
      totals.allocated += allocation.allocated_gpu_hours;
      totals.hasAllocation = true;
    }
  }
  for (const row of usage) {
    for (const totals of totalsOf(tally, row)) {
      totals.used += row.used_gpu_hours;
      totals.usedInBurnWindow += row.burn_window_gpu_hours;
      totals.sampledGpuSeconds += row.sampled_gpu_seconds;
      totals.busyGpuSeconds += row.busy_gpu_seconds;
      totals.energyMicrojoules += row.energy_microjoules;
    }
  }
  for (const row of costs ?? []) {
    for (const totals of totalsOf(tally, row)) {
      totals.priceUnitUs.add(row.price_unit_us);
      totals.idlePriceUnitUs.add(row.idle_price_unit_us);
      totals.unpricedUnitUs += row.unpriced_unit_us;
    }
  }
  return tally;
}

/** Usage on an instance type no pool owns counts in the summary and its initiative, in no pool. */
function totalsOf(tally: Tally, row: Pick<UsageRow, 'initiative_id' | 'pool_id'>): Totals[] {
  const totals = [tally.summary, tally.initiatives.of(row.initiative_id)];
  if (row.pool_id !== null) totals.push(tally.pools.of(row.pool_id));
  return totals;
}

function figuresOf(totals: Totals, now: Date, period: BudgetPeriod) {
  return {
    ...budgetFigures(totals.allocated, totals.used, totals.usedInBurnWindow, now, period),
    ...idleFiguresOf(totals),
  };
}

/** A pool with no pending workload and no start in the window has 0 and null. */
function queueFiguresOf(row: PoolQueueRow | undefined) {
  return {
    pending_gpu_share: round4(gpusOfUnits(row?.pending_share_units ?? 0)),
    queue_wait_p95_seconds: round4OrNull(row?.queue_wait_p95_seconds ?? null),
  };
}

/** The idle figures of the use, and its energy. */
function idleFiguresOf(totals: Totals): IdleGpuJson & { total_energy_kwh: number } {
  return {
    ...idleGpuFigures({
      sampled_gpu_seconds: totals.sampledGpuSeconds,
      busy_gpu_seconds: totals.busyGpuSeconds,
    }),
    total_energy_kwh: round4(totals.energyMicrojoules / Number(MICROJOULES_PER_KWH)),
  };
}

function summaryFigures(
  totals: Totals,
  now: Date,
  period: BudgetPeriod,
): Omit<
  CapacitySummaryDto,
  | 'current_active_gpus'
  | 'current_active_gpu_share'
  | 'total_used_cost'
  | 'idle_cost'
  | 'unpriced_gpu_hours'
  | 'total_allocated_cost'
> {
  const figures = figuresOf(totals, now, period);
  return {
    total_allocated_gpu_hours: figures.allocated_gpu_hours,
    total_used_gpu_hours: figures.used_gpu_hours,
    total_remaining_gpu_hours: figures.remaining_gpu_hours,
    burn_rate_gpu_hours_per_day: figures.burn_rate_gpu_hours_per_day,
    projected_exhaustion_date: figures.projected_exhaustion_date,
    budget_status: figures.budget_status,
    ...idleFiguresOf(totals),
  };
}

/** One GPU-hour in share-unit-microseconds, exact as a float8 (below 2^53). */
const GPU_HOUR_UNIT_US = BigInt(UNIT_MICROSECONDS_PER_GPU_HOUR);

/**
 * The cost figures of one entry, named `name` (the summary's total_used_cost, an entry's used_cost):
 * rounded once from the exact sum, null without a currency (no cost was read then).
 */
function costFiguresOf(currency: string | null, computed: boolean) {
  const minorUnits = currency === null ? 0 : currencyMinorUnits(currency);
  return <K extends string>(totals: Totals, name: K) =>
    ({
      [name]:
        currency === null || !computed ? null : totals.priceUnitUs.rounded(GPU_HOUR_UNIT_US, minorUnits),
      idle_cost:
        currency === null || !computed ? null : totals.idlePriceUnitUs.rounded(GPU_HOUR_UNIT_US, minorUnits),
      // Without any price every GPU-hour is unpriced, as in the statistics.
      unpriced_gpu_hours:
        currency === null
          ? round4(totals.used)
          : computed
            ? round4(totals.unpricedUnitUs / GPU_SHARE_UNITS / 3.6e9)
            : null,
    }) as Record<K, string | null> & { idle_cost: string | null; unpriced_gpu_hours: number | null };
}

/** Allocated GPU-hours as the database gives them (float8) and prices, both in 10^-20 units. */
const ALLOCATION_SCALE = 20;

/**
 * The price of a pool's GPU-hour over the whole budget period, when it is one: every instance type of
 * the pool priced without a gap over the period, all at the same price. Null otherwise (a pool of
 * types at different prices, or a price that changes inside the period, has no one price).
 */
function poolPrice(period: OrganizationPeriodRow, instanceTypes: string[]): string | null {
  if (instanceTypes.length === 0) return null;
  let price: string | null = null;
  for (const type of instanceTypes) {
    const rows = period.period_prices.filter((row) => row.instance_type === type);
    let coveredTo = period.start.getTime();
    for (const row of rows) {
      if (Date.parse(row.from) > coveredTo) return null;
      if (price !== null && scaledDecimal(row.price, 10) !== scaledDecimal(price, 10)) return null;
      price = row.price;
      coveredTo = row.to === null ? Infinity : Math.max(coveredTo, Date.parse(row.to));
    }
    if (coveredTo < period.end.getTime()) return null;
  }
  return price;
}

/**
 * allocated_cost of every pool and initiative (`pool:…`, `initiative:…`) and the summary: allocated
 * GPU-hours × the pool's one price, summed exactly and rounded once; null as soon as one allocation
 * counted in it is in a pool without one price, and without a currency.
 */
function allocatedCostsOf(period: OrganizationPeriodRow, pools: PoolRow[], allocations: AllocationRow[]) {
  const sums = new Map<string, bigint | null>();
  const minorUnits = period.currency === null ? 0 : currencyMinorUnits(period.currency);
  const prices = new Map(pools.map((pool) => [pool.pool_id, poolPrice(period, pool.instance_types)]));
  const add = (key: string, amount: bigint | null) => {
    const sum = sums.has(key) ? sums.get(key)! : 0n;
    sums.set(key, sum === null || amount === null ? null : sum + amount);
  };
  for (const allocation of allocations) {
    const price = prices.get(allocation.pool_id) ?? null;
    const hours = String(allocation.allocated_gpu_hours);
    // A float printed with an exponent (below 1e-6 or from 1e21) is no allocation worth a price.
    const amount =
      price === null || /e/i.test(hours)
        ? null
        : scaledDecimal(hours, ALLOCATION_SCALE) * scaledDecimal(price, ALLOCATION_SCALE);
    for (const key of ['summary', `pool:${allocation.pool_id}`, `initiative:${allocation.initiative_id}`])
      add(key, amount);
  }
  const of = (key: string): string | null => {
    const sum = sums.get(key);
    if (period.currency === null || sum === undefined || sum === null) return null;
    return roundedAmount(sum, 10n ** BigInt(2 * ALLOCATION_SCALE), minorUnits);
  };
  return { of, summary: of('summary') };
}
