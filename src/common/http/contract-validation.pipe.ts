import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiError, DetailLocation, ErrorDetail, stringifyValue } from './api-error';

/** Carries class-validator's raw errors out of the exception factory so the pipe can add a location. */
class RawValidationFailure extends Error {
  constructor(readonly errors: ValidationError[]) {
    super('validation failed');
  }
}

const LOCATION_OF: Record<string, DetailLocation> = { query: 'query', param: 'path', custom: 'header' };

/**
 * The global validation pipe: strict DTOs (unknown parameters rejected, explicit transforms only)
 * and the one mapping from class-validator's output to the contract's `details` entries.
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
    try {
      return await super.transform(value ?? {}, metadata);
    } catch (error) {
      if (!(error instanceof RawValidationFailure)) throw error;
      throw ApiError.validation(toDetails(error.errors, LOCATION_OF[metadata.type] ?? 'query'));
    }
  }
}

export function toDetails(errors: ValidationError[], location: DetailLocation): ErrorDetail[] {
  return errors.map((error) => {
    const constraints = error.constraints ?? {};
    const issue = constraints.whitelistValidation
      ? 'is not a known parameter'
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
