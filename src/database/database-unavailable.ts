import { DatabaseUnresponsiveError } from './database-stall-watch';

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  // The statement ran past statement_timeout (or was cancelled): a database too slow to answer now.
  '57014', // query_canceled
  '55P03', // lock_not_available
  // The configured database or role no longer lets us in (dropped, renamed, password changed).
  '3D000', // invalid_catalog_name
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
]);
/** Class 53, insufficient resources: too many connections, out of memory, disk full. */
const RESOURCE_ERROR_CLASS = '53';

const CONNECTION_ERROR_MESSAGES = [
  'Connection terminated',
  // pg's client-side query_timeout: the server did not answer at all (frozen, or cut off).
  'Query read timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection ended unexpectedly',
];

/** The service is up but has not reached its database since it started. */
export class DatabaseNotConnectedError extends Error {
  constructor() {
    super('The database has not been reached yet');
  }
}

/**
 * True when an error (or the driver error TypeORM wraps) means PostgreSQL cannot answer now: not
 * reachable, not letting us in, out of resources, or too slow for the statement bound. Each is a 503
 * the caller may retry, never a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseNotConnectedError || error instanceof DatabaseUnresponsiveError) return true;
  for (let current: unknown = error, depth = 0; current && depth < 3; depth++) {
    const candidate = current as {
      code?: unknown;
      message?: unknown;
      driverError?: unknown;
      cause?: unknown;
    };
    const code = typeof candidate.code === 'string' ? candidate.code : '';
    if (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08') || code.startsWith(RESOURCE_ERROR_CLASS)) {
      return true;
    }
    const message = typeof candidate.message === 'string' ? candidate.message : '';
    if (CONNECTION_ERROR_MESSAGES.some((text) => message.includes(text))) return true;
    current = candidate.driverError ?? candidate.cause;
  }
  return false;
}
