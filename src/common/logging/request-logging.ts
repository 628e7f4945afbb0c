import type { LoggerService } from '@nestjs/common';
import { Logger, PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { pinoHttp } from 'pino-http';
import { assignRequestId } from '../http/request-id';

/** One pino instance per process: application logs and request logs share its level and redaction. */
export function createRootLogger(level: string): pino.Logger {
  return pino({ level, redact: ['req.headers.authorization', 'req.headers.cookie'] });
}

/** Nest's logger (bootstrap, `new Logger(...)` in providers) writing through the root pino instance. */
export function nestLogger(root: pino.Logger): LoggerService {
  return new Logger(new PinoLogger({ pinoHttp: { logger: root } }), {});
}

/**
 * One log line per request with its id, status and time. Mounted as plain Express middleware rather
 * than through nestjs-pino's LoggerModule, whose per-request AsyncLocalStorage binding enables
 * promise hooks for every promise of the request: measured at ~40% of a detail request's CPU
 * (docs/benchmarks.md). Nothing here needs a request-scoped logger; errors log their request id.
 */
export function requestLogging(root: pino.Logger) {
  return pinoHttp({
    logger: root,
    genReqId: assignRequestId,
    autoLogging: { ignore: (request) => request.url === '/v1/health' },
  });
}
