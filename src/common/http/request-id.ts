import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const PRINTABLE_ASCII = /^[\x20-\x7e]{1,128}$/;

/** The caller's X-Request-Id when it is 1..128 printable ASCII characters, otherwise a new UUID. */
export function resolveRequestId(header: string | string[] | undefined): string {
  return typeof header === 'string' && PRINTABLE_ASCII.test(header) ? header : randomUUID();
}

export type RequestWithId = IncomingMessage & { id?: unknown };

/** Called by the request log first, so logs and responses share one id; also sets the response header. */
export function assignRequestId(request: RequestWithId, response: ServerResponse): string {
  if (typeof request.id === 'string') return request.id;
  const id = resolveRequestId(request.headers['x-request-id']);
  request.id = id;
  response.setHeader('X-Request-Id', id);
  return id;
}

export function requestIdOf(request: RequestWithId): string {
  return typeof request.id === 'string' ? request.id : 'unknown';
}
