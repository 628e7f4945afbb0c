import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class HealthChecksDto {
  @ApiProperty({ enum: ['ok', 'down'] })
  database: 'ok' | 'down';

  @ApiPropertyOptional({
    enum: ['ok', 'degraded'],
    description:
      'Only with REDIS_URL set. `degraded`: Redis cannot be reached and each replica counts rate limits on its ' +
      'own; requests are still served, so this alone never makes the service unhealthy.',
  })
  redis?: 'ok' | 'degraded';
}

export class HealthReport {
  @ApiProperty({ enum: ['healthy', 'unhealthy'] })
  status: 'healthy' | 'unhealthy';

  @ApiProperty({ example: '1.4.0' })
  version: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-20T10:15:00.000Z' })
  timestamp: string;

  @ApiProperty({ type: HealthChecksDto })
  checks: HealthChecksDto;
}

export class HealthEnvelopeDto {
  @ApiProperty({ type: HealthReport })
  data: HealthReport;

  @ApiProperty()
  request_id: string;
}

export class LivenessReport {
  @ApiProperty({ enum: ['alive'] })
  status: 'alive';

  @ApiProperty({ example: '1.4.0' })
  version: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-20T10:15:00.000Z' })
  timestamp: string;
}

export class LivenessEnvelopeDto {
  @ApiProperty({ type: LivenessReport })
  data: LivenessReport;

  @ApiProperty()
  request_id: string;
}
