const MAX_MESSAGE = 500;

export interface LoggableError {
  type: string;
  code?: string;
  message?: string;
}

/**
 * What of an error goes into a log line. Never the whole object: a TypeORM QueryFailedError carries the
 * SQL and its parameters, and a driver's stack or connection error names hosts. `withMessage: false`
 * for connection errors, whose messages are mostly an address ("connect ECONNREFUSED 10.0.0.5:5432").
 */
export function loggableError(error: unknown, withMessage = true): LoggableError {
  const candidate = (typeof error === 'object' && error !== null ? error : {}) as {
    name?: unknown;
    code?: unknown;
    message?: unknown;
  };
  const loggable: LoggableError = {
    type: typeof candidate.name === 'string' ? candidate.name : typeof error,
  };
  if (typeof candidate.code === 'string' || typeof candidate.code === 'number') {
    loggable.code = String(candidate.code);
  }
  if (withMessage && typeof candidate.message === 'string') {
    loggable.message = candidate.message.slice(0, MAX_MESSAGE);
  }
  return loggable;
}
