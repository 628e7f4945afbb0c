import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { RankedMetricsEnvelopeDto, WorkloadMetricsEnvelopeDto } from './dto/metrics-response.dto';
import { RankedMetricsQueryDto } from './dto/ranked-metrics-query.dto';
import { WorkloadIdParams } from '../workloads/dto/workload-id-params.dto';
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
  ranked(@Scope() scope: AuthScope, @Query() query: RankedMetricsQueryDto) {
    return this.metrics.ranked(scope, query);
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
  ) {
    return this.metrics.workloadMetrics(scope, params.workload_id, query);
  }
}
