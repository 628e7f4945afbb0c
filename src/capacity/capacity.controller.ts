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
import { CapacityQueryDto } from './dto/capacity-query.dto';
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
    if (prefersCsv(request)) return csvTable(capacityCsvRows(report), 'capacity.csv');
    return new WithMetadata(report, { currency });
  }
}

/**
 * One row for the summary, each pool and each initiative (`kind`, `id`); with interval=day one row
 * per day of each instead, the burn-down a spreadsheet charts.
 */
function capacityCsvRows(report: CapacityReportDto): CsvRow[] {
  const entries = [
    { kind: 'summary', id: report.organization_id, figures: report.summary },
    ...report.pools.map((pool) => ({ kind: 'pool', id: pool.pool_id, figures: pool })),
    ...report.initiatives.map((initiative) => ({
      kind: 'initiative',
      id: initiative.initiative_id,
      figures: initiative,
    })),
  ];
  return entries.flatMap(({ kind, id, figures }) => {
    if (figures.daily) return figures.daily.map((day) => ({ kind, id, ...flattenRow({ ...day }) }));
    const {
      pool_id: _pool,
      initiative_id: _initiative,
      ...rest
    } = figures as unknown as Record<string, unknown>;
    const row: CsvRow = { kind, id, ...flattenRow(rest) };
    if ('instance_types' in figures) row.instance_types = figures.instance_types.join(' ');
    return [row];
  });
}
