import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { NoQueryDto } from '../common/validation/no-query.dto';
import { AlertsService } from './alerts.service';
import { type AlertDto, AlertsEnvelopeDto } from './dto/alert.dto';

@ApiTags('alerts')
@Controller('alerts')
export class AlertsController {
  constructor(private readonly alerts: AlertsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listAlerts',
    summary: 'The alerts firing now in your scope, as `gpucap alerts` last sent them to Alertmanager',
    description:
      'Budget thresholds, exhaustion forecasts, idle workloads and stale sync sources. A TEAM_LEAD or ' +
      "MEMBER sees only its teams' and their workloads' alerts; pools and sync sources are an ORG_ADMIN's.",
  })
  @ApiOkResponse({ type: AlertsEnvelopeDto })
  async listAlerts(@Scope() scope: AuthScope, @Query() _query: NoQueryDto): Promise<AlertDto[]> {
    return this.alerts.firing(scope);
  }
}
