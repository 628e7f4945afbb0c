import { plainToInstance, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDefined,
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
  type ValidationError,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { readConfigFile, readSecret } from '../common/config-file';
import { IDENTIFIER_ISSUE, IDENTIFIER_PATTERN } from '../core/identifier';

/** A config file that cannot be used: the message names the key and the rule. */
export class AlertsConfigError extends Error {}

const HTTP_URL = /^https?:\/\/\S+$/;

class BasicAuthSection {
  @IsString()
  @IsNotEmpty()
  username: string;

  @IsOptional()
  @IsString()
  password?: string;

  @IsOptional()
  @IsString()
  password_file?: string;
}

class AlertmanagerSection {
  @Matches(HTTP_URL, { message: 'must be an http(s) URL such as http://127.0.0.1:9093' })
  url: string;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => BasicAuthSection)
  basic_auth?: BasicAuthSection;

  @IsOptional()
  @IsString()
  bearer_token?: string;

  @IsOptional()
  @IsString()
  bearer_token_file?: string;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  @Max(300)
  timeout_seconds?: number;
}

class IdleWorkloadRule {
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100)
  max_utilization: number;

  @IsInt()
  @Min(1)
  @Max(10_080)
  for_minutes: number;
}

class OversizedWorkloadRule {
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  min_gpu_hours_saved_per_day: number;
}

class AlertRulesSection {
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsNumber({ allowNaN: false, allowInfinity: false }, { each: true })
  @IsPositive({ each: true })
  @Max(10, { each: true })
  budget_thresholds?: number[];

  @IsOptional()
  @IsBoolean()
  exhaustion_forecast?: boolean;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => IdleWorkloadRule)
  idle_workload?: IdleWorkloadRule;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => OversizedWorkloadRule)
  oversized_workload?: OversizedWorkloadRule;

  @IsOptional()
  @IsInt()
  @Min(1)
  sync_stale_minutes?: number;
}

class AlertsConfigFile {
  @IsString()
  @Matches(IDENTIFIER_PATTERN, { message: IDENTIFIER_ISSUE })
  organization_id: string;

  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => AlertmanagerSection)
  alertmanager: AlertmanagerSection;

  @Matches(HTTP_URL, { message: 'must be an http(s) URL such as https://gpucap.example.com/' })
  dashboard_url: string;

  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => AlertRulesSection)
  rules: AlertRulesSection;
}

export interface AlertmanagerTarget {
  url: string;
  basicAuth: { username: string; password: string } | null;
  bearerToken: string | null;
  timeoutMs: number;
}

export interface AlertRules {
  /** Ascending, each as written in the config (its label value). */
  budgetThresholds: { value: number; label: string }[];
  exhaustionForecast: boolean;
  idleWorkload: { maxUtilization: number; forMinutes: number } | null;
  /** Running workloads whose advice saves at least this many GPU-hours a day. */
  oversizedWorkload: { minGpuHoursSavedPerDay: number } | null;
  syncStaleMinutes: number | null;
}

export interface AlertsConfig {
  organizationId: string;
  alertmanager: AlertmanagerTarget;
  dashboardUrl: string;
  rules: AlertRules;
}

/** Reads and checks an alerts config (JSON or YAML); every problem is an AlertsConfigError naming its key. */
export function loadAlertsConfig(path: string): AlertsConfig {
  const { document, base } = readConfigFile(path, AlertsConfigError);
  return alertsConfigOf(document, base);
}

/** The checks of loadAlertsConfig on a parsed document; files named in it are relative to `base`. */
export function alertsConfigOf(document: unknown, base: string): AlertsConfig {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new AlertsConfigError('the config must be a mapping with organization_id, alertmanager, rules');
  }
  const file = plainToInstance(AlertsConfigFile, document);
  const errors = validateSync(file, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) throw new AlertsConfigError(issues(errors).join('; '));
  const rules = file.rules;
  const thresholds = rules.budget_thresholds ?? [];
  if (new Set(thresholds).size !== thresholds.length) {
    throw new AlertsConfigError('rules.budget_thresholds: each threshold may appear once');
  }
  const alertmanager = file.alertmanager;
  if (alertmanager.bearer_token != null && alertmanager.bearer_token_file != null) {
    throw new AlertsConfigError(
      'alertmanager.bearer_token and alertmanager.bearer_token_file exclude each other',
    );
  }
  if (
    alertmanager.basic_auth &&
    (alertmanager.bearer_token != null || alertmanager.bearer_token_file != null)
  ) {
    throw new AlertsConfigError('alertmanager.basic_auth and alertmanager.bearer_token exclude each other');
  }
  return {
    organizationId: file.organization_id,
    alertmanager: {
      url: alertmanager.url.replace(/\/+$/, ''),
      basicAuth: basicAuth(alertmanager.basic_auth, base),
      bearerToken: readSecret(
        alertmanager.bearer_token,
        alertmanager.bearer_token_file,
        'alertmanager.bearer_token',
        base,
        AlertsConfigError,
      ),
      timeoutMs: (alertmanager.timeout_seconds ?? 10) * 1000,
    },
    dashboardUrl: file.dashboard_url,
    rules: {
      budgetThresholds: [...thresholds]
        .sort((a, b) => a - b)
        .map((value) => ({ value, label: thresholdLabel(value) })),
      exhaustionForecast: rules.exhaustion_forecast ?? false,
      idleWorkload: rules.idle_workload
        ? { maxUtilization: rules.idle_workload.max_utilization, forMinutes: rules.idle_workload.for_minutes }
        : null,
      oversizedWorkload: rules.oversized_workload
        ? { minGpuHoursSavedPerDay: rules.oversized_workload.min_gpu_hours_saved_per_day }
        : null,
      syncStaleMinutes: rules.sync_stale_minutes ?? null,
    },
  };
}

/** YAML and JSON both read `1.0` as the number 1: a whole threshold keeps the decimal it was written with. */
function thresholdLabel(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

function basicAuth(section: BasicAuthSection | undefined, base: string): AlertmanagerTarget['basicAuth'] {
  if (!section) return null;
  const password = readSecret(
    section.password,
    section.password_file,
    'alertmanager.basic_auth.password',
    base,
    AlertsConfigError,
  );
  if (password === null) {
    throw new AlertsConfigError('alertmanager.basic_auth: a password (or password_file) is required');
  }
  return { username: section.username, password };
}

/** class-validator's nested errors as `path.to.key: rule` lines, in the document's order. */
function issues(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((error) => {
    const key = `${parent}${error.property}`;
    const own = Object.values(error.constraints ?? {}).map(
      (message) => `${key}: ${ruleOf(message, error.property)}`,
    );
    return [...own, ...issues(error.children ?? [], `${key}.`)];
  });
}

/** class-validator starts its messages with the property name; the key already says it. */
function ruleOf(message: string, property: string): string {
  if (message === `property ${property} should not exist`) return 'is not a known key';
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}
