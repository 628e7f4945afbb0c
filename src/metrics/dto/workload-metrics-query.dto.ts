import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, ValidateBy } from 'class-validator';
import { QueryEnum } from '../../common/validation/query-decorators';
import { METRIC_NAMES, parseMetricList, TIME_RANGES, type TimeRange } from '../metric-names';
import { parseStep, STEP_ISSUE } from '../series-step';

/** A comma list of known metric names; the issue names the unknown ones. */
function IsMetricList(): PropertyDecorator {
  return ValidateBy({
    name: 'isMetricList',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && 'metrics' in parseMetricList(value),
      defaultMessage: (args) => {
        if (typeof args?.value !== 'string') return 'must be a comma-separated list of metric names';
        const parsed = parseMetricList(args.value);
        const unknown = 'unknown' in parsed ? parsed.unknown.map((name) => `'${name}'`).join(', ') : '';
        return `unknown metric name(s) ${unknown}; known: ${METRIC_NAMES.join(', ')}`;
      },
    },
  });
}

export class WorkloadMetricsQueryDto {
  @ApiPropertyOptional({ enum: TIME_RANGES, default: 'last_1h' })
  @IsOptional()
  @QueryEnum(TIME_RANGES)
  time_range?: TimeRange;

  @ApiPropertyOptional({
    description: `comma-separated metric names (${METRIC_NAMES.join(', ')}); repeats ignored, also when the parameter itself is repeated; omitted: all`,
    example: 'gpu_utilization,gpu_usage',
  })
  @IsOptional()
  // `metrics=a&metrics=b` names the same list as `metrics=a,b`: the contract ignores repeats either way.
  @Transform(({ value }) =>
    Array.isArray(value) && value.every((part) => typeof part === 'string') ? value.join(',') : value,
  )
  @IsMetricList()
  metrics?: string;

  @ApiPropertyOptional({
    type: String,
    description:
      'Adds `series` (one point per step, buckets aligned to multiples of the step since the Unix epoch) ' +
      'and p50/p95 per metric; from 1m to 1d, at most 11,000 points over the window',
    example: '5m',
  })
  @IsOptional()
  @Transform(({ value }) => (typeof value === 'string' ? (parseStep(value) ?? value) : value))
  @IsInt({ message: STEP_ISSUE })
  step?: number;
}
