import { Controller, Get, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/public.decorator';
import { NoQueryDto } from '../common/validation/no-query.dto';
import {
  HealthEnvelopeDto,
  HealthReport,
  LivenessEnvelopeDto,
  LivenessReport,
} from './dto/health-report.dto';
import { HealthService } from './health.service';

/** Both probes need no credentials and no organization header, and are never rate limited. */
@ApiTags('health')
@Controller('health')
@Public()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({
    operationId: 'getHealth',
    summary: 'Readiness: whether this replica can serve requests (its database is reachable)',
    description: 'Needs no credentials and no organization header; never rate limited.',
  })
  @ApiOkResponse({ type: HealthEnvelopeDto, description: 'healthy' })
  @ApiServiceUnavailableResponse({
    type: HealthEnvelopeDto,
    description: 'unhealthy: the database cannot be reached',
  })
  async check(
    @Res({ passthrough: true }) response: Response,
    @Query() _query: NoQueryDto,
  ): Promise<HealthReport> {
    const report = await this.health.check();
    response.setHeader('Cache-Control', 'no-store');
    if (report.status !== 'healthy') response.status(503);
    return report;
  }

  @Get('live')
  @ApiOperation({
    operationId: 'getLiveness',
    summary: 'Liveness: the process is running; checks no dependency, so an outage never restarts it',
    description: 'Needs no credentials and no organization header; never rate limited.',
  })
  @ApiOkResponse({ type: LivenessEnvelopeDto, description: 'alive' })
  live(@Res({ passthrough: true }) response: Response, @Query() _query: NoQueryDto): LivenessReport {
    response.setHeader('Cache-Control', 'no-store');
    return this.health.live();
  }
}
