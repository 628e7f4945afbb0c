import { Controller, Get, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { AsOf } from '../common/http/as-of.decorator';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvStream, type CsvRow, prefersCsv } from '../common/http/csv/csv-table';
import { FocusQueryDto } from './dto/focus-query.dto';
import { FocusEnvelopeDto } from './dto/focus-response.dto';
import { CostsService } from './costs.service';
import { FOCUS_COLUMNS, type FocusRecordJson } from './focus.responses';

@ApiTags('costs')
@Controller('costs')
export class CostsController {
  constructor(private readonly costs: CostsService) {}

  @Get('focus')
  @ApiOperation({
    operationId: 'getFocusCosts',
    summary:
      'GPU cost as FOCUS 1.2 records: one per workload, UTC day and price it ran in, inside the date range',
  })
  @ApiOkResponse({ type: FocusEnvelopeDto })
  @ApiProducesCsv()
  async focus(
    @Scope() scope: AuthScope,
    @Query() query: FocusQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ) {
    if (!prefersCsv(request)) return this.costs.focus(scope, query, asOf);
    this.costs.checkFocus(scope, query, asOf);
    return csvStream([...FOCUS_COLUMNS], csvRows(this.costs.focusAll(scope, query, asOf)), 'focus.csv');
  }
}

/** Tags is a JSON object in a FOCUS file: one cell of JSON text. */
async function* csvRows(records: AsyncIterable<FocusRecordJson>): AsyncIterable<CsvRow> {
  for await (const { Tags: tags, ...columns } of records) yield { ...columns, Tags: JSON.stringify(tags) };
}
