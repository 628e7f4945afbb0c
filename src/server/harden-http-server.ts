import { randomUUID } from 'node:crypto';
import { IncomingMessage, maxHeaderSize, Server, STATUS_CODES } from 'node:http';
import type { RequestHandler } from 'express';
import type { Duplex } from 'node:stream';
import { ApiError, ErrorDetail } from '../common/http/api-error';
import type { MethodPolicy } from './method-policy.middleware';
import { requestIdOf, resolveRequestId } from '../common/http/request-id';
import { errorBody, writeError } from '../common/http/write-error';

/** The part of a pino logger this needs. */
export interface ConnectionLogger {
  warn(fields: object, message: string): void;
}

/**
 * Requests Node answers on its own, before Express sees them, get the contract's error envelope too:
 * a request Node cannot parse (too large, garbage, NUL in a header) and CONNECT, which Node otherwise
 * answers with a bare status line and an empty body, or not at all.
 *
 * Error codes: the contract's table has no row for these, so each takes the code of the closest one.
 * A request that is malformed or too large is VALIDATION_ERROR (a header "malformed, out of range"),
 * sent with the HTTP status Node would send (431 for oversized headers, which tells clients and
 * proxies not to retry as is; 408 for a request that never completed; 400 otherwise). CONNECT gets
 * what every other method gets (contract §2): 405 with `Allow` on a path a route serves, 404 elsewhere.
 * An `Expect` Node does not know gets 417 with the envelope. An HTTP/1.1 request without `Host`,
 * which Node would refuse with a bare 400, goes on to Express, where hostRequired() refuses it with
 * the envelope, a request id and a log line like any other request.
 */
export function hardenHttpServer(server: Server, logger: ConnectionLogger, methodPolicy: MethodPolicy): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(server, error, socket, logger),
  );
  server.on('connect', (request: IncomingMessage, socket: Duplex) =>
    answerConnect(request, socket, logger, methodPolicy),
  );
  server.on('checkExpectation', (request: IncomingMessage) => answerExpectation(request, logger));
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
}

/**
 * Keeps an idle keep-alive connection open for `seconds`. Node's 5 s default is shorter than a load
 * balancer's idle timeout, so the balancer would reuse a connection just as the service closes it and
 * answer that request 502 itself. The headers timeout stays above it (and the whole-request bound no
 * shorter), so the two timers never race on a connection reused late in its idle time.
 */
export function keepIdleConnections(server: Server, seconds: number): void {
  server.keepAliveTimeout = seconds * 1000;
  server.headersTimeout = server.keepAliveTimeout + 1000;
  server.requestTimeout = Math.max(server.requestTimeout, server.headersTimeout);
}

/** Refuses an HTTP/1.1 request without `Host` (RFC 9112 §3.2); mounted after the request log. */
export function hostRequired(): RequestHandler {
  return (request, response, next) => {
    if (request.httpVersion !== '1.1' || request.headers.host !== undefined) return next();
    const apiError = ApiError.validation(
      [{ field: 'Host', location: 'header', issue: 'is required in an HTTP/1.1 request' }],
      'The request has no Host header',
    );
    writeError(response, apiError, requestIdOf(request));
  };
}

function answerExpectation(request: IncomingMessage, logger: ConnectionLogger): void {
  const apiError = ApiError.validation(
    [{ field: 'Expect', location: 'header', issue: 'only 100-continue is understood' }],
    'The request expects what the service does not do',
  );
  refuse(request.socket, logger, {
    status: 417,
    apiError,
    requestId: resolveRequestId(request.headers['x-request-id']),
    logged: { method: request.method },
  });
}

function answerClientError(
  server: Server,
  error: NodeJS.ErrnoException,
  socket: Duplex & { bytesWritten?: number },
  logger: ConnectionLogger,
): void {
  // Node's own rule: nothing to answer on a dead socket, or once a response has started on it.
  if (error.code === 'ECONNRESET' || !socket.writable || (socket.bytesWritten ?? 0) > 0) {
    socket.destroy();
    return;
  }
  refuse(socket, logger, {
    ...describeClientError(server, error),
    requestId: randomUUID(),
    logged: { parser_error: error.code },
  });
}

function describeClientError(server: Server, error: NodeJS.ErrnoException) {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    const limit = (server as { maxHeaderSize?: number }).maxHeaderSize ?? maxHeaderSize;
    return {
      status: 431,
      apiError: requestError(
        'The request line and headers are too large',
        `request line and headers together must not exceed ${limit} bytes`,
      ),
    };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return {
      status: 408,
      apiError: requestError('The request was not received in time', 'was not complete in time'),
    };
  }
  return {
    status: 400,
    apiError: requestError('The request is not valid HTTP', 'is not a valid HTTP/1.1 request'),
  };
}

function requestError(message: string, issue: string): ApiError {
  const detail: ErrorDetail = { field: 'request', location: 'header', issue };
  return ApiError.validation([detail], message);
}

function answerConnect(
  request: IncomingMessage,
  socket: Duplex,
  logger: ConnectionLogger,
  methodPolicy: MethodPolicy,
): void {
  const requestId = resolveRequestId(request.headers['x-request-id']);
  const target = request.url ?? '';
  const apiError =
    methodPolicy.refusal('CONNECT', target.split('?')[0]) ??
    ApiError.notFound('No such resource for CONNECT');
  refuse(socket, logger, {
    status: apiError.status,
    apiError,
    requestId,
    logged: { method: 'CONNECT' },
    headers: apiError.headers,
  });
}

interface Refusal {
  status: number;
  apiError: ApiError;
  requestId: string;
  /** Fields of the log line besides the id, status and code. */
  logged: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Logs a request answered before routing and writes its answer to the socket. */
function refuse(socket: Duplex, logger: ConnectionLogger, refusal: Refusal): void {
  const { status, apiError, requestId, logged, headers = {} } = refusal;
  logger.warn(
    { request_id: requestId, status, error_code: apiError.code, ...logged },
    'request refused before routing',
  );
  respond(socket, status, apiError, requestId, headers);
}

/** Writes a whole HTTP/1.1 response to a socket Node has handed over, then closes it. */
function respond(
  socket: Duplex,
  status: number,
  apiError: ApiError,
  requestId: string,
  headers: Record<string, string>,
): void {
  const body = JSON.stringify(errorBody(apiError.code, apiError.message, apiError.details, requestId));
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
}
