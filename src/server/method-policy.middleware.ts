import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../common/http/api-error';
import { ErrorCode } from '../common/http/error-codes';
import { assignRequestId } from '../common/http/request-id';
import { writeError } from '../common/http/write-error';

/** Every path the API serves; other methods on these are 405, everything else falls through to 404. */
const API_PATHS = [
  /^\/v1\/health(\/live)?\/?$/,
  /^\/v1\/openapi\.json$/,
  /^\/v1\/workloads\/?$/,
  /^\/v1\/workloads\/[^/]+\/?$/,
  /^\/v1\/workloads\/[^/]+\/metrics\/?$/,
  /^\/v1\/capacity\/?$/,
];
export const ALLOW = 'GET, HEAD';

/** Whether `path` is one the API serves (with any method): other methods there are 405, not 404. */
export function isApiPath(path: string): boolean {
  return API_PATHS.some((pattern) => pattern.test(path));
}

/**
 * The API is read-only (contract §2): OPTIONS is answered here and never an error, and a write
 * method on an existing path is 405 with `Allow`. Runs before authentication, like routing does.
 */
export function methodPolicy(request: Request, response: Response, next: NextFunction): void {
  const requestId = assignRequestId(request, response);
  if (request.method === 'GET' || request.method === 'HEAD') return next();
  if (request.method === 'OPTIONS') {
    response.setHeader('Allow', `${ALLOW}, OPTIONS`);
    response.status(204).end();
    return;
  }
  if (!isApiPath(request.path)) return next();
  response.setHeader('Allow', ALLOW);
  writeError(
    response,
    new ApiError(
      ErrorCode.METHOD_NOT_ALLOWED,
      `Method ${request.method} is not allowed on ${request.path}; use GET`,
    ),
    requestId,
  );
}
