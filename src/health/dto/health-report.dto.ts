import { ApiProperty } from '@nestjs/swagger';

export class HealthChecksDto {
  @ApiProperty({ enum: ['ok', 'down'] })
  database: 'ok' | 'down';
}

export class HealthReport {
  @ApiProperty({ enum: ['healthy', 'unhealthy'] })
  status: 'healthy' | 'unhealthy';

  @ApiProperty({ example: '1.4.0' })
  version: string;

  @ApiProperty({ example: '2026-11-20T10:15:00.000Z' })
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
