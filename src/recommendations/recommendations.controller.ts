import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { AggregateRead } from '../common/http/aggregate-read/aggregate-read.decorator';
import { AsOf } from '../common/http/as-of.decorator';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvStream, type CsvRow, prefersCsv } from '../common/http/csv/csv-table';
import { RecommendationsQueryDto } from './dto/recommendations-query.dto';
import { RecommendationsEnvelopeDto } from './dto/recommendations-response.dto';
import { RECOMMENDATION_CSV_COLUMNS, recommendationCsvRow } from './recommendations.responses';
import { RecommendationsService } from './recommendations.service';

@ApiTags('recommendations')
@Controller('recommendations')
export class RecommendationsController {
  constructor(private readonly recommendations: RecommendationsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listRecommendations',
    summary:
      'Workloads that could run smaller (a MIG slice or fewer GPUs), with the evidence, the risk and the GPU-hours and money saved',
  })
  @ApiOkResponse({ type: RecommendationsEnvelopeDto })
  @ApiProducesCsv()
  @AggregateRead()
  async list(
    @Scope() scope: AuthScope,
    @Query() query: RecommendationsQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ) {
    if (!prefersCsv(request)) return this.recommendations.list(scope, query, asOf);
    const items = await this.recommendations.listAll(scope, query, asOf);
    return csvStream(RECOMMENDATION_CSV_COLUMNS, csvRows(items), 'recommendations.csv');
  }
}

async function* csvRows(items: Parameters<typeof recommendationCsvRow>[0][]): AsyncIterable<CsvRow> {
  for (const item of items) yield recommendationCsvRow(item);
}
