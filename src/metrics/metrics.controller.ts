import { Controller, Get, Param, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvTable, flattenRow, prefersCsv } from '../common/http/csv/csv-table';
import { gpuSharingColumns } from '../common/gpu-sharing';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { AsOf } from '../common/http/as-of.decorator';
import { RankedMetricsEnvelopeDto, WorkloadMetricsEnvelopeDto } from './dto/metrics-response.dto';
import { RankedMetricsQueryDto } from './dto/ranked-metrics-query.dto';
import { WorkloadIdParams } from '../common/validation/workload-id-params.dto';
import { WorkloadMetricsQueryDto } from './dto/workload-metrics-query.dto';
import { MetricsService } from './metrics.service';

@ApiTags('metrics')
@Controller('workloads')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @ApiOperation({
    operationId: 'listRankedWorkloadMetrics',
    summary: 'Workloads in your scope ranked by lifetime average of a metric, or by GPU hours',
  })
  @ApiOkResponse({ type: RankedMetricsEnvelopeDto })
  @ApiProducesCsv()
  async ranked(
    @Scope() scope: AuthScope,
    @Query() query: RankedMetricsQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ) {
    const ranked = await this.metrics.ranked(scope, query, asOf);
    if (!prefersCsv(request)) return ranked;
    // One row per ranked workload of the page, in rank order: workload_id, name, initiative_id, <metric>_avg, <metric>_current.
    return csvTable(
      ranked.data.workloads.map(({ gpu_sharing: sharing, ...entry }) =>
        flattenRow({ ...entry, ...gpuSharingColumns(sharing) }),
      ),
      'workload-metrics.csv',
    );
  }

  @Get(':workload_id/metrics')
  @ApiOperation({
    operationId: 'getWorkloadMetrics',
    summary: "avg, min, max and latest of a workload's metrics over a window",
  })
  @ApiOkResponse({ type: WorkloadMetricsEnvelopeDto })
  workloadMetrics(
    @Scope() scope: AuthScope,
    @Param() params: WorkloadIdParams,
    @Query() query: WorkloadMetricsQueryDto,
    @AsOf() asOf: Date,
  ) {
    return this.metrics.workloadMetrics(scope, params.workload_id, query, asOf);
  }
}
