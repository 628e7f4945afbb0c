import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { ApiError, DetailLocation, ErrorDetail, stringifyValue } from './api-error';

/** Carries class-validator's raw errors out of the exception factory so the pipe can add a location. */
class RawValidationFailure extends Error {
  constructor(readonly errors: ValidationError[]) {
    super('validation failed');
  }
}

const LOCATION_OF: Record<string, DetailLocation> = { query: 'query', param: 'path', custom: 'header' };
const UNKNOWN_PARAMETER = 'is not a known parameter';
const NUL_ISSUE = 'must not contain NUL characters';

/**
 * The global validation pipe: strict DTOs (unknown parameters rejected, explicit transforms only)
 * and the one mapping from class-validator's output to the contract's `details` entries.
 *
 * Query and path parameters are screened first, by own keys against a Set of the DTO's properties:
 * class-validator's whitelist looks names up in a plain object, so `constructor` or `toString` count
 * as declared there, and Nest strips `__proto__`/`constructor`/`prototype` without a word; either
 * way an unknown parameter would silently be ignored. NUL is refused here because PostgreSQL cannot
 * hold it in text: left through, it is a 500 from the driver.
 */
@Injectable()
export class ContractValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      validationError: { target: false, value: true },
      exceptionFactory: (errors) => new RawValidationFailure(errors),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const location = LOCATION_OF[metadata.type] ?? 'query';
    const screened = this.screen(value ?? {}, metadata, location);
    try {
      const result = await super.transform(screened.value, metadata);
      if (screened.details.length > 0) throw ApiError.validation(screened.details);
      return result;
    } catch (error) {
      if (!(error instanceof RawValidationFailure)) throw error;
      // A parameter screened out is reported once, not again as missing.
      const screenedOut = new Set(screened.details.map((detail) => detail.field));
      const remaining = error.errors.filter((failure) => !screenedOut.has(failure.property));
      throw ApiError.validation([...screened.details, ...toDetails(remaining, location)]);
    }
  }

  private screen(value: unknown, metadata: ArgumentMetadata, location: DetailLocation): Screened {
    if (metadata.type !== 'query' && metadata.type !== 'param') return { value, details: [] };
    if (metadata.data !== undefined) {
      const details = containsNul(value) ? [nulDetail(metadata.data, location, value)] : [];
      return { value, details };
    }
    if (typeof value !== 'object' || value === null) return { value, details: [] };
    const known = this.toValidate(metadata) ? declaredProperties(metadata.metatype as object) : null;
    return screenParameters(value as Record<string, unknown>, known, location);
  }
}

interface Screened {
  value: unknown;
  details: ErrorDetail[];
}

/** Keeps the parameters the DTO declares and that PostgreSQL can hold; reports the others. */
function screenParameters(
  parameters: Record<string, unknown>,
  known: ReadonlySet<string> | null,
  location: DetailLocation,
): Screened {
  const kept: Record<string, unknown> = {};
  const details: ErrorDetail[] = [];
  for (const name of Object.keys(parameters)) {
    const value = parameters[name];
    if (known && !known.has(name)) {
      details.push({ field: name, location, issue: UNKNOWN_PARAMETER, value: stringifyValue(value) });
    } else if (containsNul(value) || name.includes('\u0000')) {
      details.push(nulDetail(name, location, value));
    } else {
      kept[name] = value;
    }
  }
  return { value: kept, details };
}

const declaredCache = new WeakMap<object, ReadonlySet<string>>();

function declaredProperties(metatype: object): ReadonlySet<string> {
  let declared = declaredCache.get(metatype);
  if (!declared) {
    const rules = getMetadataStorage().getTargetValidationMetadatas(
      metatype as new () => object,
      '',
      false,
      false,
    );
    declared = new Set(rules.map((rule) => rule.propertyName));
    declaredCache.set(metatype, declared);
  }
  return declared;
}

function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  return Array.isArray(value) && value.some(containsNul);
}

function nulDetail(field: string, location: DetailLocation, value: unknown): ErrorDetail {
  return { field, location, issue: NUL_ISSUE, value: stringifyValue(value) };
}

export function toDetails(errors: ValidationError[], location: DetailLocation): ErrorDetail[] {
  return errors.map((error) => {
    const constraints = error.constraints ?? {};
    const issue = constraints.whitelistValidation
      ? UNKNOWN_PARAMETER
      : // Several rules may share one message (an integer range): say it once.
        [
          ...new Set(Object.values(constraints).map((message) => stripPropertyName(message, error.property))),
        ].join('; ');
    const detail: ErrorDetail = { field: error.property, location, issue };
    if (error.value !== undefined) detail.value = stringifyValue(error.value);
    return detail;
  });
}

/** class-validator's default messages start with the property name, which `field` already carries. */
function stripPropertyName(message: string, property: string): string {
  return message.startsWith(`${property} `) ? message.slice(property.length + 1) : message;
}
