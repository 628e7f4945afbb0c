import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import type { AuthScope } from '../common/auth/auth-scope';
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
  PoolRow,
  poolsQuery,
  UsageRow,
  usageByInitiativeAndPoolQuery,
} from './capacity.queries';
import { CapacityQueryDto } from './dto/capacity-query.dto';
import { CapacityPoolDto, CapacityReportDto, CapacitySummaryDto } from './dto/capacity-report.dto';
import { DAY_MS } from './usage-window';

/** Unrounded GPU hours of one pool, one initiative or the whole scope. */
class Totals {
  allocated = 0;
  hasAllocation = false;
  used = 0;
  usedInBurnWindow = 0;
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
  constructor(
    private readonly database: ScopedDatabase,
    private readonly clock: Clock,
  ) {}

  async report(scope: AuthScope, query: CapacityQueryDto): Promise<CapacityReportDto> {
    assertInitiativeInScope(scope, query.initiative_id);
    const filters: CapacityFilters = {
      initiativeId: query.initiative_id ?? null,
      poolId: query.pool_id ?? null,
    };
    const now = this.clock.now();
    const [period] = await this.database.run<BudgetPeriod>(budgetPeriodQuery(scope));
    if (!period) throw new Error(`Organization ${scope.organizationId} vanished during the request`);
    const periodSoFar = { from: period.start, to: new Date(Math.min(period.end.getTime(), now.getTime())) };
    const burnWindow = { from: new Date(now.getTime() - BURN_WINDOW_DAYS * DAY_MS), to: now };
    const [usage, allocations, initiatives, pools] = await Promise.all([
      this.database.run<UsageRow>(
        usageByInitiativeAndPoolQuery(scope, filters, { period: periodSoFar, burn: burnWindow }),
      ),
      this.database.run<AllocationRow>(allocationsQuery(scope, filters)),
      this.database.run<InitiativeRow>(initiativesQuery(scope, filters)),
      this.database.run<PoolRow>(poolsQuery(scope, filters)),
    ]);
    const tally = tallyFigures(allocations, usage);
    const summary: CapacitySummaryDto = {
      ...summaryFigures(tally.summary, now),
      current_active_gpus: usage.reduce((sum, row) => sum + row.active_gpus, 0),
    };
    return {
      organization_id: scope.organizationId,
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
          ...figuresOf(tally.pools.of(pool.pool_id), now),
          instance_types: pool.instance_types,
        })),
      initiatives: initiatives.map((initiative) => ({
        initiative_id: initiative.initiative_id,
        name: initiative.name,
        ...figuresOf(tally.initiatives.of(initiative.initiative_id), now),
      })),
      period: { start: period.start.toISOString(), end: period.end.toISOString() },
    };
  }
}

function tallyFigures(allocations: AllocationRow[], usage: UsageRow[]): Tally {
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
    }
  }
  return tally;
}

/** Usage on an instance type no pool owns counts in the summary and its initiative, in no pool. */
function totalsOf(tally: Tally, row: UsageRow): Totals[] {
  const totals = [tally.summary, tally.initiatives.of(row.initiative_id)];
  if (row.pool_id !== null) totals.push(tally.pools.of(row.pool_id));
  return totals;
}

function figuresOf(totals: Totals, now: Date) {
  return budgetFigures(totals.allocated, totals.used, totals.usedInBurnWindow, now);
}

function summaryFigures(totals: Totals, now: Date): Omit<CapacitySummaryDto, 'current_active_gpus'> {
  const figures = figuresOf(totals, now);
  return {
    total_allocated_gpu_hours: figures.allocated_gpu_hours,
    total_used_gpu_hours: figures.used_gpu_hours,
    total_remaining_gpu_hours: figures.remaining_gpu_hours,
    burn_rate_gpu_hours_per_day: figures.burn_rate_gpu_hours_per_day,
    projected_exhaustion_date: figures.projected_exhaustion_date,
  };
}

/** Identifiers are ASCII; order them by code point, as the SQL does with COLLATE "C". */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
