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
  '53300', // too_many_connections
]);

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

/** True when an error (or the driver error TypeORM wraps) means PostgreSQL cannot be reached. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseNotConnectedError) return true;
  for (let current: unknown = error, depth = 0; current && depth < 3; depth++) {
    const candidate = current as {
      code?: unknown;
      message?: unknown;
      driverError?: unknown;
      cause?: unknown;
    };
    const code = typeof candidate.code === 'string' ? candidate.code : '';
    if (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08')) return true;
    const message = typeof candidate.message === 'string' ? candidate.message : '';
    if (CONNECTION_ERROR_MESSAGES.some((text) => message.includes(text))) return true;
    current = candidate.driverError ?? candidate.cause;
  }
  return false;
}
