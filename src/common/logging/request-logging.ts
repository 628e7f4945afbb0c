import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { Logger, PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { pinoHttp } from 'pino-http';
import { parseApiToken } from '../auth/api-token-format';
import type { RequestWithScope } from '../auth/auth-scope.decorator';
import { assignRequestId } from '../http/request-id';
import { IDENTIFIER_PATTERN } from '../validation/identifier';
import { errorCodeOf } from './error-code-of-response';

/**
 * The request headers a log line carries. An allowlist, not a list of secrets to hide: a credential
 * in a header nobody thought of (Proxy-Authorization, X-Api-Key, a gateway's own) never reaches a log.
 */
const LOGGED_HEADERS = ['user-agent', 'accept', 'x-organization-id', 'x-request-id', 'x-forwarded-for'];

/** The one key every log line uses for the request id: request logs, application logs, client errors. */
export const REQUEST_ID_KEY = 'request_id';

/** One pino instance per process: application logs and request logs share its level and format. */
export function createRootLogger(level: string, destination?: pino.DestinationStream): pino.Logger {
  const options: pino.LoggerOptions = {
    level,
    // No `hostname`: log lines name no host; the platform's collector knows which replica wrote them.
    base: { pid: process.pid },
    // Level names ("warn") rather than pino's numbers (40): what an operator greps for.
    formatters: { level: (label) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Nest's logger (bootstrap, `new Logger(...)` in providers) writing through the root pino instance. */
export function nestLogger(root: pino.Logger): LoggerService {
  return new Logger(new PinoLogger({ pinoHttp: { logger: root } }), {});
}

type LoggedRequest = IncomingMessage & RequestWithScope & { id?: unknown; user?: { subject?: string } };

/**
 * One log line per request with its id, status and time; 4xx at warn and 5xx at error, with the
 * error code, organization and credential id. Mounted as plain Express middleware rather
 * than through nestjs-pino's LoggerModule, whose per-request AsyncLocalStorage binding enables
 * promise hooks for every promise of the request: measured at ~40% of a detail request's CPU
 * (docs/benchmarks.md). Nothing here needs a request-scoped logger; errors log their request id.
 */
export function requestLogging(root: pino.Logger) {
  return pinoHttp({
    logger: root,
    genReqId: assignRequestId,
    autoLogging: { ignore: (request) => request.url === '/v1/health' },
    customProps: (request) => ({ [REQUEST_ID_KEY]: request.id }),
    customLogLevel: (_request, response, error) =>
      error || response.statusCode >= 500 ? 'error' : response.statusCode >= 400 ? 'warn' : 'info',
    customSuccessObject: (request, response, fields: object) => ({
      ...fields,
      ...outcome(request as LoggedRequest, response),
    }),
    customErrorObject: (request, response, _error, fields: object) => ({
      ...fields,
      ...outcome(request as LoggedRequest, response),
    }),
    serializers: {
      req: (request: { method: string; url: string; headers: Record<string, unknown> }) => ({
        method: request.method,
        url: request.url,
        headers: pickHeaders(request.headers),
      }),
      res: (response: { statusCode: number }) => ({ statusCode: response.statusCode }),
    },
  });
}

function pickHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of LOGGED_HEADERS) if (headers[name] !== undefined) picked[name] = headers[name];
  return picked;
}

/** What an operator needs on a failed request's line: never a secret (token ids are not secret). */
function outcome(request: LoggedRequest, response: ServerResponse): Record<string, string> {
  if (response.statusCode < 400) return {};
  const fields: Record<string, string> = {};
  const code = errorCodeOf(response);
  if (code) fields.error_code = code;
  const organization = request.authScope?.organizationId ?? request.headers['x-organization-id'];
  if (typeof organization === 'string' && IDENTIFIER_PATTERN.test(organization)) {
    fields.organization_id = organization;
  }
  const credential = credentialOf(request);
  if (credential) fields.credential_id = credential;
  return fields;
}

function credentialOf(request: LoggedRequest): string | undefined {
  if (request.authScope) return request.authScope.credentialKey;
  if (typeof request.user?.subject === 'string') return `sub:${request.user.subject}`;
  const bearer = /^Bearer +(\S+)/i.exec(request.headers.authorization ?? '');
  const apiToken = bearer ? parseApiToken(bearer[1]) : null;
  return apiToken ? `token:${apiToken.tokenId}` : undefined;
}
