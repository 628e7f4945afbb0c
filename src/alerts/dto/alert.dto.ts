import { ApiProperty } from '@nestjs/swagger';
import { AsOfMetadataDto } from '../../common/http/as-of-metadata.dto';
import { ApiAsOfMetadataProperty, ApiRequestIdProperty } from '../../common/http/envelope-properties';

export const ALERT_NAMES = [
  'GpuBudgetThresholdCrossed',
  'GpuBudgetExhaustionForecast',
  'GpuWorkloadIdle',
  'GpuWorkloadOversized',
  'GpucapSyncStale',
] as const;

export class AlertDto {
  @ApiProperty({
    enum: ALERT_NAMES,
    example: 'GpuBudgetThresholdCrossed',
    description: 'the rule that fired (also the `alertname` label)',
  })
  alertname: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: {
      alertname: 'GpuBudgetThresholdCrossed',
      organization_id: 'org-acme',
      kind: 'initiative',
      initiative_id: 'team-vision',
      threshold: '0.9',
      severity: 'warning',
    },
    description: 'the label set Alertmanager received (its identity), `severity` included',
  })
  labels: Record<string, string>;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: {
      summary: "Team 'team-vision' has used 91.2 % of its GPU-hour budget",
      description: "Team 'team-vision' (Vision) has used 912 of its 1000 allocated GPU hours …",
    },
    description:
      '`summary` and `description`, naming the team, pool, workload or source with figures and units',
  })
  annotations: Record<string, string>;

  @ApiProperty({ format: 'date-time', description: 'when the condition was first found to hold' })
  starts_at: string;
}

export class AlertListDto {
  @ApiProperty({ type: [AlertDto], description: 'newest first' })
  alerts: AlertDto[];
}

export class AlertsEnvelopeDto {
  @ApiProperty({ type: AlertListDto, description: 'the alerts firing now' })
  data: AlertListDto;

  @ApiAsOfMetadataProperty()
  metadata: AsOfMetadataDto;

  @ApiRequestIdProperty()
  request_id: string;
}
