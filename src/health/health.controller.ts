import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../common/auth/public.decorator';
import { HealthEnvelopeDto, HealthReport } from './dto/health-report.dto';
import { HealthService } from './health.service';

@ApiTags('health')
@Controller('health')
@Public()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({ summary: 'Service health; needs no credentials and no organization header' })
  @ApiOkResponse({ type: HealthEnvelopeDto, description: 'healthy' })
  @ApiServiceUnavailableResponse({
    type: HealthEnvelopeDto,
    description: 'unhealthy: the database cannot be reached',
  })
  async check(@Res({ passthrough: true }) response: Response): Promise<HealthReport> {
    const report = await this.health.check();
    response.setHeader('Cache-Control', 'no-store');
    if (report.status !== 'healthy') response.status(503);
    return report;
  }
}
