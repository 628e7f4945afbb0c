import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { ListWorkloadsQueryDto } from './dto/list-workloads-query.dto';
import { NoQueryDto, WorkloadIdParams } from './dto/workload-id-params.dto';
import {
  WorkloadDetailEnvelopeDto,
  WorkloadListEnvelopeDto,
  WorkloadStatsEnvelopeDto,
} from './dto/workload-response.dto';
import { WorkloadStatsQueryDto } from './dto/workload-stats-query.dto';
import { WorkloadsService } from './workloads.service';

@ApiTags('workloads')
@Controller('workloads')
export class WorkloadsController {
  constructor(private readonly workloads: WorkloadsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listWorkloads',
    summary: 'Workloads in your scope, newest first, keyset paged',
  })
  @ApiOkResponse({ type: WorkloadListEnvelopeDto })
  list(@Scope() scope: AuthScope, @Query() query: ListWorkloadsQueryDto) {
    return this.workloads.list(scope, query);
  }

  // Declared before ':workload_id' so "stats" is never taken for an id.
  @Get('stats')
  @ApiOperation({
    operationId: 'getWorkloadStats',
    summary: 'Statistics of the workloads submitted in a time range',
  })
  @ApiOkResponse({ type: WorkloadStatsEnvelopeDto })
  stats(@Scope() scope: AuthScope, @Query() query: WorkloadStatsQueryDto) {
    return this.workloads.stats(scope, query);
  }

  @Get(':workload_id')
  @ApiOperation({
    operationId: 'getWorkload',
    summary: 'One workload with its derived duration and GPU hours',
  })
  @ApiOkResponse({ type: WorkloadDetailEnvelopeDto })
  detail(@Scope() scope: AuthScope, @Param() params: WorkloadIdParams, @Query() _query: NoQueryDto) {
    return this.workloads.detail(scope, params.workload_id);
  }
}
