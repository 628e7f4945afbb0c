import { applyDecorators } from '@nestjs/common';
import { Transform, Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
} from 'class-validator';
import { IDENTIFIER_PATTERN } from '../core/identifier';

// The sync config file as written (snake_case keys), validated with class-validator like the HTTP
// parameters. A property's rules run in the order its decorator lists them, and validation stops at
// the first that fails: a message is one rule of one key, and sync-config.ts puts the key's path in
// front of it. A message that starts with `.` or `[` names an entry of a map or an element of a list:
// it continues the path.

/** Prometheus refuses a range query of more than 11,000 points per series. */
export const PROMETHEUS_MAX_POINTS = 11_000;

const TEXT = 'must be a non-empty string';
const NUMBER_ABOVE_ZERO = 'must be a number greater than 0';

/**
 * A value that is not a section, validated as written. Left to itself, class-transformer would copy an
 * object or a list, taking an own `constructor` key of an object for its class (and failing on one)
 * and leaving such keys out. Told the class `Boolean` it copies nothing (it makes booleans, which
 * never fails), and the transform then puts back the value as written.
 */
function Value(...rules: PropertyDecorator[]): PropertyDecorator {
  return applyDecorators(
    Type(() => Boolean),
    Transform(({ obj, key }: { obj: Record<string, unknown>; key: string }) => obj[key]),
    ...rules,
  );
}

function Optional(...rules: PropertyDecorator[]): PropertyDecorator {
  return Value(IsOptional(), ...rules);
}

function Text(): PropertyDecorator {
  return Optional(Matches(/\S/, { message: TEXT }));
}

function Identifier(): PropertyDecorator {
  return Matches(IDENTIFIER_PATTERN, {
    message: 'must be an identifier: 1 to 128 characters from A-Z a-z 0-9 . _ : -',
  });
}

function RequiredIdentifier(): PropertyDecorator {
  return Value(IsDefined({ message: 'is required' }), Identifier());
}

function OptionalIdentifier(): PropertyDecorator {
  return Optional(Identifier());
}

function TextList(...rules: PropertyDecorator[]): PropertyDecorator {
  const message = 'must be an array of non-empty strings';
  return Optional(
    IsArray({ message }),
    IsString({ each: true, message }),
    IsNotEmpty({ each: true, message }),
    ...rules,
  );
}

function Flag(): PropertyDecorator {
  return Optional(IsBoolean({ message: 'must be true or false' }));
}

function OneOf(values: readonly string[]): PropertyDecorator {
  return Optional(IsIn(values as string[], { message: `must be one of ${values.join(', ')}` }));
}

function NumberAboveZero(...rules: PropertyDecorator[]): PropertyDecorator {
  return Optional(
    IsNumber({}, { message: NUMBER_ABOVE_ZERO }),
    IsPositive({ message: NUMBER_ABOVE_ZERO }),
    ...rules,
  );
}

function WholeNumberAboveZero(...rules: PropertyDecorator[]): PropertyDecorator {
  return NumberAboveZero(IsInt({ message: 'must be a whole number' }), ...rules);
}

function NumberFromZero(): PropertyDecorator {
  const message = 'must be a number greater than or equal to 0';
  return Optional(IsNumber({}, { message }), Min(0, { message }));
}

/** A nested section of its own class. */
function Section(type: () => new () => object): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsObject({ message: 'must be an object' }),
    ValidateNested(),
    Type(type),
  );
}

/** A map whose entries are checked in order: the message is the first bad entry's. */
function Entries(issue: (name: string, value: unknown) => string | null): PropertyDecorator {
  const first = (map: object) =>
    Object.entries(map)
      .map(([name, value]) => issue(name, value))
      .find((message) => message !== null) ?? null;
  return Optional(
    IsObject({ message: 'must be an object' }),
    ValidateBy({
      name: 'entries',
      validator: {
        validate: (value: object) => first(value) === null,
        defaultMessage: (args) => first(args!.value as object) ?? '',
      },
    }),
  );
}

function IdentifierMap(): PropertyDecorator {
  return Entries((name, value) =>
    typeof value === 'string' && IDENTIFIER_PATTERN.test(value)
      ? null
      : `.${name} must be an identifier (A-Z a-z 0-9 . _ : -, at most 128)`,
  );
}

/** Name → share of one GPU (greater than 0, at most 1), e.g. a MIG profile's 1/7. */
function ShareMap(): PropertyDecorator {
  return Entries((name, share) => {
    if (name.trim() === '') return 'has an empty name';
    const valid = typeof share === 'number' && Number.isFinite(share) && share > 0 && share <= 1;
    return valid ? null : `.${name} must be a number greater than 0 and at most 1 (the share of one GPU)`;
  });
}

function HttpUrl(): PropertyDecorator {
  const message = 'is required: an http(s) URL such as http://127.0.0.1:9090';
  return Value(
    IsDefined({ message }),
    Matches(/\S/, { message: TEXT }),
    Matches(/^https?:\/\/[^\s]+$/, { message }),
  );
}

/** A list of sections of one class (`clusters`). */
function Sections(type: () => new () => object): PropertyDecorator {
  return applyDecorators(
    IsOptional(),
    IsArray({ message: 'must be an array of objects' }),
    ValidateBy({
      name: 'sections',
      validator: {
        validate: (entries: unknown[]) => entries.every(isSection),
        defaultMessage: (args) =>
          `[${(args!.value as unknown[]).findIndex((entry) => !isSection(entry))}] must be an object`,
      },
    }),
    ValidateNested({ each: true }),
    Type(type),
  );
}

export function isSection(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class KubernetesSection {
  @Text() kubeconfig?: string;
  @Text() context?: string;
  @TextList() namespaces?: string[];
  @Text() cluster_id?: string;
  @Text() initiative_label?: string;
  @IdentifierMap() initiative_by_namespace?: Record<string, string>;
  @OptionalIdentifier() default_initiative?: string;
  @Text() submitter_label?: string;
  @Text() default_submitter?: string;
  @Text() instance_type_label?: string;
  @Text() gpu_resource?: string;
  /** Share of one GPU per instance of MIG profiles not built in (or overriding a built-in one). */
  @ShareMap() mig_profiles?: Record<string, number>;
  @Flag() is_managed?: boolean;
  @NumberAboveZero() timeout_seconds?: number;
}

export class BasicAuthSection {
  @Text() username?: string;
  @Text() password?: string;
  @Text() password_file?: string;
}

export class PrometheusSection {
  @HttpUrl() url: string;

  @WholeNumberAboveZero() step_seconds?: number;
  @WholeNumberAboveZero(
    Max(PROMETHEUS_MAX_POINTS, { message: `must be at most ${PROMETHEUS_MAX_POINTS} (Prometheus' limit)` }),
  )
  window_points?: number;
  @Section(() => BasicAuthSection) basic_auth?: BasicAuthSection;
  @Text() bearer_token?: string;
  @Text() bearer_token_file?: string;
  @NumberAboveZero() backfill_hours?: number;
  @NumberFromZero() overlap_seconds?: number;
  @NumberFromZero() lag_seconds?: number;
  @NumberAboveZero() timeout_seconds?: number;
  @OneOf(['auto', 'ratio', 'percent']) gr_engine_active_unit?: 'auto' | 'ratio' | 'percent';
}

export class SlurmSection {
  @Text() sacct_json_file?: string;
  @TextList(ArrayNotEmpty({ message: 'must name a program' })) sacct_command?: string[];
  @Text() job_label?: string;
  @OptionalIdentifier() cluster_id?: string;
  @IdentifierMap() initiative_by_account?: Record<string, string>;
  @OptionalIdentifier() default_initiative?: string;
  @IdentifierMap() instance_type_by_partition?: Record<string, string>;
  /** Share of one GPU per device of a gres type (`gpu:<type>`), for site-named MIG-like types. */
  @ShareMap() gpu_share_by_type?: Record<string, number>;
  @Flag() is_managed?: boolean;
  @NumberAboveZero() timeout_seconds?: number;
}

/** A `clusters[]` entry. */
export class ClusterSection {
  @RequiredIdentifier() cluster_id: string;
  @Section(() => KubernetesSection) kubernetes?: KubernetesSection;
  @Section(() => PrometheusSection) prometheus?: PrometheusSection;
  @Section(() => SlurmSection) slurm?: SlurmSection;
}

export class SyncConfigFile {
  @RequiredIdentifier() organization_id: string;
  /** Records of the import's `prices` section, checked by the importer's own rules (sync-config.ts). */
  @Optional(IsArray({ message: 'must be a list of price records (the import format)' })) prices?: unknown[];
  /** Records of the import's `carbon_intensity` section, checked the same way. */
  @Optional(IsArray({ message: 'must be a list of carbon intensity records (the import format)' }))
  carbon_intensity?: unknown[];
  /** Records of the import's `instance_types` section, checked the same way. */
  @Optional(IsArray({ message: 'must be a list of instance type records (the import format)' }))
  instance_types?: unknown[];
  @OneOf(['create', 'refuse']) unknown_initiatives?: 'create' | 'refuse';
  @Section(() => KubernetesSection) kubernetes?: KubernetesSection;
  @Section(() => PrometheusSection) prometheus?: PrometheusSection;
  @Section(() => SlurmSection) slurm?: SlurmSection;
  @Sections(() => ClusterSection) clusters?: ClusterSection[];
}
