import { redactApiTokens } from '../auth/api-token-format';
import { ErrorCode, HTTP_STATUS_OF } from './error-codes';

export type DetailLocation = 'query' | 'path' | 'header';

export interface ErrorDetail {
  field: string;
  location: DetailLocation;
  issue: string;
  /** Left out for secrets such as tokens. */
  value?: string;
}

/** Every error the service means to return; the exception filter turns it into the contract's body. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get status(): number {
    return HTTP_STATUS_OF[this.code];
  }

  static validation(details: ErrorDetail[], message?: string): ApiError {
    const fields = details.map((detail) => detail.field).join(', ');
    return new ApiError(ErrorCode.VALIDATION_ERROR, message ?? `Invalid request: ${fields}`, details);
  }

  static invalidField(field: string, location: DetailLocation, issue: string, value?: unknown): ApiError {
    const detail: ErrorDetail = { field, location, issue };
    if (value !== undefined) detail.value = stringifyValue(value);
    return ApiError.validation([detail], `Invalid ${location} parameter '${field}': ${issue}`);
  }

  static unauthenticated(message: string): ApiError {
    return new ApiError(ErrorCode.UNAUTHENTICATED, message, [], { 'WWW-Authenticate': 'Bearer' });
  }

  static forbidden(message: string): ApiError {
    return new ApiError(ErrorCode.FORBIDDEN, message);
  }

  static notFound(message: string): ApiError {
    return new ApiError(ErrorCode.NOT_FOUND, message);
  }

  static databaseUnavailable(): ApiError {
    return new ApiError(
      ErrorCode.SERVICE_UNAVAILABLE,
      'The database is unavailable or too slow right now; retry shortly',
      [],
      { 'Retry-After': '5' },
    );
  }

  /** Anything not raised on purpose: no detail, so no stack, SQL or host ever leaks. */
  static internal(): ApiError {
    return new ApiError(ErrorCode.INTERNAL_ERROR, 'An unexpected error occurred');
  }
}

/** Error detail values are echoed back, so they are bounded and always strings. */
export function stringifyValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return redactApiTokens(text ?? String(value)).slice(0, 200);
}
