import { Controller, Get, Query, Req, StreamableFile } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { ApiProducesCsv } from '../common/http/csv/api-produces-csv';
import { csvTable, flattenRow, prefersCsv } from '../common/http/csv/csv-table';
import { NoQueryDto } from '../common/validation/no-query.dto';
import { AlertsService } from './alerts.service';
import { type AlertListDto, AlertsEnvelopeDto } from './dto/alert.dto';

@ApiTags('alerts')
@Controller('alerts')
export class AlertsController {
  constructor(private readonly alerts: AlertsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listAlerts',
    summary: 'The alerts firing now in your scope, as the last cycle of `gpucap alerts` found them',
    description:
      'Budget thresholds, exhaustion forecasts, idle workloads and stale sync sources. A TEAM_LEAD or ' +
      "MEMBER sees only its teams' and their workloads' alerts; pools and sync sources are an ORG_ADMIN's.",
  })
  @ApiOkResponse({ type: AlertsEnvelopeDto })
  @ApiProducesCsv()
  async listAlerts(
    @Scope() scope: AuthScope,
    @Query() _query: NoQueryDto,
    @Req() request: Request,
  ): Promise<AlertListDto | StreamableFile> {
    const alerts = await this.alerts.firing(scope);
    if (!prefersCsv(request)) return { alerts };
    // One row per alert: its labels and annotations as `labels_…` and `annotations_…` columns.
    return csvTable(
      alerts.map((alert) => flattenRow({ ...alert })),
      'alerts.csv',
    );
  }
}
