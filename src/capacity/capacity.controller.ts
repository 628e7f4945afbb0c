import { Controller, Get, Query, Req, StreamableFile } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { AsOf } from '../common/http/as-of.decorator';
import { AggregateRead } from '../common/http/aggregate-read/aggregate-read.decorator';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvTable, type CsvRow, flattenRow, prefersCsv } from '../common/http/csv/csv-table';
import { CapacityService } from './capacity.service';
import type { CurrencyMetadata } from '../common/cost';
import { WithMetadata } from '../common/http/envelope';
import { type CapacityCsvLevel, CapacityQueryDto } from './dto/capacity-query.dto';
import { CapacityEnvelopeDto, CapacityReportDto } from './dto/capacity-report.dto';

@ApiTags('capacity')
@Controller('capacity')
export class CapacityController {
  constructor(private readonly capacity: CapacityService) {}

  @Get()
  @ApiOperation({
    operationId: 'getCapacity',
    summary:
      'GPU-hour budgets, use inside the current period and burn rates, over your scope and the filters',
  })
  @ApiOkResponse({ type: CapacityEnvelopeDto })
  @ApiProducesCsv()
  @AggregateRead()
  async getCapacity(
    @Scope() scope: AuthScope,
    @Query() query: CapacityQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ): Promise<WithMetadata<CapacityReportDto, CurrencyMetadata> | StreamableFile> {
    const { report, currency } = await this.capacity.reportWithCurrency(scope, query, asOf);
    if (prefersCsv(request)) return csvTable(capacityCsvRows(report, query.level), 'capacity.csv');
    return new WithMetadata(report, { currency });
  }
}

type CsvEntry = { kind: string; id: string; figures: object };

/**
 * One row for the summary, each pool and each initiative (`kind`, `id`); with interval=day one row
 * per day of each instead, the burn-down a spreadsheet charts. With `level`, one of the three only,
 * as its own table: its id under its own name and no `kind`, so no column is left empty by design.
 */
function capacityCsvRows(report: CapacityReportDto, level?: CapacityCsvLevel): CsvRow[] {
  const summary = [{ kind: 'summary', id: report.organization_id, figures: report.summary }];
  const pools = report.pools.map((pool) => ({ kind: 'pool', id: pool.pool_id, figures: pool }));
  const initiatives = report.initiatives.map((initiative) => ({
    kind: 'initiative',
    id: initiative.initiative_id,
    figures: initiative,
  }));
  if (level === undefined) return [...summary, ...pools, ...initiatives].flatMap((entry) => entryRows(entry));
  const idColumn = { summary: 'organization_id', pools: 'pool_id', initiatives: 'initiative_id' }[level];
  const entries = { summary, pools, initiatives }[level];
  return entries.flatMap((entry) =>
    entryRows(entry).map(({ kind: _kind, id, ...rest }) => ({ [idColumn]: id, ...rest })),
  );
}

function entryRows({ kind, id, figures }: CsvEntry): CsvRow[] {
  const { daily, pool_id: _pool, initiative_id: _initiative, ...rest } = figures as Record<string, unknown>;
  if (Array.isArray(daily))
    return daily.map((day: Record<string, unknown>) => ({ kind, id, ...flattenRow({ ...day }) }));
  const row: CsvRow = { kind, id, ...flattenRow(rest) };
  if (Array.isArray(rest.instance_types)) row.instance_types = rest.instance_types.join(' ');
  return [row];
}
