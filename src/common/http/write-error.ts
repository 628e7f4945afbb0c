import type { Response } from 'express';
import { recordErrorCode } from '../logging/error-code-of-response';
import type { ApiError } from './api-error';

/** Writes the contract's error body; used by the exception filter and by middleware that runs before Nest. */
export function writeError(response: Response, error: ApiError, requestId: string): void {
  for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
  recordErrorCode(response, error.code);
  response.status(error.status).json(errorBody(error.code, error.message, error.details, requestId));
}

/** The contract's error envelope (contract §2). */
export function errorBody(code: string, message: string, details: unknown[], requestId: string) {
  return { error: { code, message, details }, request_id: requestId };
}
