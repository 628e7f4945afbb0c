import { Controller, Get, Param, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvStream, csvTable, type CsvRow, flattenRow, prefersCsv } from '../common/http/csv/csv-table';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { AsOf } from '../common/http/as-of.decorator';
import { AggregateRead } from '../common/http/aggregate-read/aggregate-read.decorator';
import { ListWorkloadsQueryDto } from './dto/list-workloads-query.dto';
import { NoQueryDto } from '../common/validation/no-query.dto';
import { WorkloadIdParams } from '../common/validation/workload-id-params.dto';
import {
  WorkloadDetailEnvelopeDto,
  WorkloadListEnvelopeDto,
  WorkloadStatsEnvelopeDto,
} from './dto/workload-response.dto';
import { WorkloadStatsQueryDto } from './dto/workload-stats-query.dto';
import { type WorkloadStatsResult, WorkloadsService } from './workloads.service';
import type { WorkloadSummaryJson } from './workload.responses';
import { gpuSharingColumns } from '../common/gpu-sharing';

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
  @ApiProducesCsv()
  async list(
    @Scope() scope: AuthScope,
    @Query() query: ListWorkloadsQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ) {
    if (!prefersCsv(request)) return this.workloads.list(scope, query, asOf);
    const rows = await this.workloads.listCsv(scope, query, asOf);
    return csvStream(WORKLOAD_CSV_COLUMNS, flattenRows(rows), 'workloads.csv');
  }

  // Declared before ':workload_id' so "stats" is never taken for an id.
  @Get('stats')
  @ApiOperation({
    operationId: 'getWorkloadStats',
    summary: 'Statistics of the workloads submitted in a time range',
  })
  @ApiOkResponse({ type: WorkloadStatsEnvelopeDto })
  @ApiProducesCsv()
  @AggregateRead()
  async stats(
    @Scope() scope: AuthScope,
    @Query() query: WorkloadStatsQueryDto,
    @Req() request: Request,
    @AsOf() asOf: Date,
  ) {
    const stats = await this.workloads.stats(scope, query, asOf);
    return prefersCsv(request) ? csvTable(statsCsvRows(stats.data), 'workload-stats.csv') : stats;
  }

  @Get(':workload_id')
  @ApiOperation({
    operationId: 'getWorkload',
    summary: 'One workload with its derived duration and GPU hours',
  })
  @ApiOkResponse({ type: WorkloadDetailEnvelopeDto })
  detail(
    @Scope() scope: AuthScope,
    @Param() params: WorkloadIdParams,
    @Query() _query: NoQueryDto,
    @AsOf() asOf: Date,
  ) {
    return this.workloads.detail(scope, params.workload_id, asOf);
  }
}

const WORKLOAD_CSV_COLUMNS = [
  'workload_id',
  'name',
  'status',
  'submitted_by',
  'initiative_id',
  'instance_type',
  'gpu_count',
  'gpu_share',
  'gpu_sharing_mode',
  'gpu_sharing_profile',
  'gpu_sharing_replicas',
  'cluster_id',
  'submitted_at',
  'started_at',
  'wait_seconds',
  'cost',
  'energy_kwh',
  'carbon_kg',
];

async function* flattenRows(rows: AsyncIterable<WorkloadSummaryJson>): AsyncIterable<CsvRow> {
  for await (const { gpu_sharing: sharing, ...row } of rows)
    yield flattenRow({ ...row, ...gpuSharingColumns(sharing) });
}

/** Timeline buckets (× groups when grouped) with an interval, else the groups, else the summary. */
function statsCsvRows(stats: WorkloadStatsResult): CsvRow[] {
  if (stats.timeline) {
    return stats.timeline.flatMap(({ grouped, ...bucket }) =>
      grouped
        ? grouped.map((group) => ({
            bucket_start: bucket.bucket_start,
            bucket_end: bucket.bucket_end,
            ...flattenRow(group),
          }))
        : [flattenRow(bucket)],
    );
  }
  return stats.grouped.length > 0
    ? stats.grouped.map((group) => flattenRow(group))
    : [flattenRow({ ...stats.summary })];
}
