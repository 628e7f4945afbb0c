import { ApiRequestIdProperty } from '../../common/http/envelope-properties';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class HealthChecksDto {
  @ApiProperty({
    enum: ['ok', 'down'],
    description: 'ok: the database answered a query just now; down: it did not (the service answers 503)',
  })
  database: 'ok' | 'down';

  @ApiPropertyOptional({
    enum: ['ok', 'degraded'],
    description:
      'Only with REDIS_URL set. `degraded`: Redis cannot be reached and each replica counts rate limits on its ' +
      'own; requests are still served, so this alone never makes the service unhealthy.',
  })
  redis?: 'ok' | 'degraded';

  @ApiPropertyOptional({
    type: () => [ReplicaHealthDto],
    description:
      'Only with DATABASE_READ_URLS set: each streaming replica, by its position in that list, with its lag and whether reads go to it. A replica out of use never makes the service unhealthy: its reads go to the primary.',
  })
  replicas?: ReplicaHealthDto[];
}

export class ReplicaHealthDto {
  @ApiProperty({ example: 1, description: 'its position in DATABASE_READ_URLS, from 1' })
  replica: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    example: 0.4,
    description:
      'seconds between the newest WAL position the primary reported and the moment the primary was at the position the replica has replayed; null while unreachable or not yet measured',
  })
  lag_seconds: number | null;

  @ApiProperty({
    description: 'whether reads go to it: reachable and lagging at most READ_REPLICA_MAX_LAG_SECONDS',
  })
  in_use: boolean;
}

export class HealthReport {
  @ApiProperty({
    enum: ['healthy', 'unhealthy'],
    description:
      'healthy (HTTP 200) when the database answers (or, with DATABASE_READ_URLS, a replica in use does), unhealthy (HTTP 503) otherwise',
  })
  status: 'healthy' | 'unhealthy';

  @ApiProperty({
    example: '1.4.0',
    description: 'the version of the API the service implements (as in the OpenAPI info.version)',
  })
  version: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-20T10:15:00.000Z',
    description: "the service's clock when it answered (UTC, milliseconds)",
  })
  timestamp: string;

  @ApiProperty({ type: HealthChecksDto, description: 'the state of each dependency the service checked' })
  checks: HealthChecksDto;
}

export class HealthEnvelopeDto {
  @ApiProperty({ type: HealthReport, description: 'the health report' })
  data: HealthReport;

  @ApiRequestIdProperty()
  request_id: string;
}

export class LivenessReport {
  @ApiProperty({ enum: ['alive'], description: 'always alive: the process runs and answers HTTP' })
  status: 'alive';

  @ApiProperty({
    example: '1.4.0',
    description: 'the version of the API the service implements (as in the OpenAPI info.version)',
  })
  version: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-20T10:15:00.000Z',
    description: "the service's clock when it answered (UTC, milliseconds)",
  })
  timestamp: string;
}

export class LivenessEnvelopeDto {
  @ApiProperty({ type: LivenessReport, description: 'the liveness report' })
  data: LivenessReport;

  @ApiRequestIdProperty()
  request_id: string;
}
