import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { Logger, PinoLogger } from 'nestjs-pino';
import pino from 'pino';
import { parseApiToken, redactApiTokens } from '../common/auth/api-token-format';
import type { RequestWithScope } from '../common/auth/auth-scope.decorator';
import { assignRequestId } from '../common/http/request-id';
import { IDENTIFIER_PATTERN } from '../core/identifier';
import { errorCodeOf } from '../common/logging/error-code-of-response';

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
type RequestLevel = 'info' | 'warn' | 'error';

/**
 * One log line per request with its id, status and time; 4xx at warn and 5xx at error, with the
 * error code, organization and credential id. Plain Express middleware rather than nestjs-pino's
 * LoggerModule, whose per-request AsyncLocalStorage binding enables promise hooks for every promise
 * of the request (a large share of a short request's CPU), and rather than pino-http, which builds a
 * child logger per request even when its line is below the level: here a request below the level costs one listener and one clock read.
 */
export function requestLogging(root: pino.Logger) {
  return (request: LoggedRequest, response: ServerResponse, next: () => void): void => {
    const requestId = assignRequestId(request, response);
    // Read now: routing may rewrite request.url before the response closes.
    const url = request.url;
    if (url === '/v1/health') return next();
    const started = performance.now();
    response.once('close', () => {
      const finished = response.writableFinished;
      // A client that goes away early is not the service's failure (and must not fill the error log).
      const level: RequestLevel =
        finished && response.statusCode >= 500
          ? 'error'
          : !finished || response.statusCode >= 400
            ? 'warn'
            : 'info';
      if (!root.isLevelEnabled(level)) return;
      root[level](
        {
          [REQUEST_ID_KEY]: requestId,
          req: {
            method: request.method,
            url: redactApiTokens(url ?? ''),
            headers: pickHeaders(request.headers),
          },
          res: { statusCode: response.statusCode },
          responseTime: Math.round(performance.now() - started),
          ...outcome(request, response),
        },
        finished ? 'request completed' : 'request aborted',
      );
    });
    next();
  };
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
  const verified = verifiedCredentialOf(request);
  if (verified) fields.credential_id = verified;
  else {
    // Anyone can put a real token's id in front of a wrong secret: named apart, it is never taken
    // for the token holder's own failure.
    const claimed = claimedTokenOf(request);
    if (claimed) fields.claimed_credential_id = claimed;
  }
  return fields;
}

function verifiedCredentialOf(request: LoggedRequest): string | undefined {
  if (request.authScope) return request.authScope.credentialKey;
  if (typeof request.user?.subject === 'string') return `sub:${request.user.subject}`;
  return undefined;
}

function claimedTokenOf(request: LoggedRequest): string | undefined {
  const bearer = /^Bearer +(\S+)/i.exec(request.headers.authorization ?? '');
  const apiToken = bearer ? parseApiToken(bearer[1]) : null;
  return apiToken ? `token:${apiToken.tokenId}` : undefined;
}
