import type { Response } from 'express';
import type { ApiError } from './api-error';

/** Writes the contract's error body; used by the exception filter and by middleware that runs before Nest. */
export function writeError(response: Response, error: ApiError, requestId: string): void {
  for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
  response.status(error.status).json({
    error: { code: error.code, message: error.message, details: error.details },
    request_id: requestId,
  });
}
