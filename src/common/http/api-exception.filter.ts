import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDatabaseUnavailable } from '../../database/database-unavailable';
import { loggableError } from '../logging/loggable-error';
import { ApiError } from './api-error';
import { ErrorCode } from './error-codes';
import { requestIdOf } from './request-id';
import { writeError } from './write-error';

const CODE_OF_HTTP_STATUS: Record<number, ErrorCode> = {
  401: ErrorCode.UNAUTHENTICATED,
  403: ErrorCode.FORBIDDEN,
  404: ErrorCode.NOT_FOUND,
  405: ErrorCode.METHOD_NOT_ALLOWED,
  429: ErrorCode.RATE_LIMITED,
};

/** Express's message when a path parameter is not valid percent-encoding (it refuses before any route runs). */
const UNDECODABLE_PARAMETER = 'Failed to decode param';
/** The routes with a path parameter: each names it workload_id. */
const WORKLOAD_PATH = /^\/v1\/workloads\/([^/]*)(?:\/metrics)?$/;

function undecodablePathParameter(request: Request): ApiError {
  const workload = WORKLOAD_PATH.exec(request.path);
  return workload
    ? ApiError.invalidField('workload_id', 'path', 'is not valid percent-encoding', workload[1])
    : ApiError.invalidField('path', 'path', 'is not valid percent-encoding', request.path);
}

/**
 * The answer to an error not raised on purpose, logged with the request id: 503 when the database
 * cannot answer now, else 500 without detail. Also for a CSV export that fails before its first row.
 */
export function failureAnswer(exception: unknown, requestId: string, logger: Logger): ApiError {
  if (isDatabaseUnavailable(exception)) {
    logger.warn({ request_id: requestId, error: loggableError(exception, false) }, 'database unavailable');
    return ApiError.databaseUnavailable();
  }
  logger.error({ request_id: requestId, error: loggableError(exception) }, 'unexpected error');
  return ApiError.internal();
}

/**
 * The one place an error becomes a response body. Anything not raised on purpose is logged with the
 * request id and answered as INTERNAL_ERROR without detail, so no stack, SQL or host ever leaks.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const requestId = requestIdOf(request);
    const error = this.toApiError(exception, request, requestId);

    if (response.headersSent) return;
    if (error.code === ErrorCode.RATE_LIMITED && !response.getHeader('Retry-After')) {
      response.setHeader('Retry-After', '60');
    }
    writeError(response, error, requestId);
  }

  private toApiError(exception: unknown, request: Request, requestId: string): ApiError {
    if (exception instanceof ApiError) return exception;
    if (exception instanceof HttpException) return this.fromHttpException(exception, request);
    return failureAnswer(exception, requestId, this.logger);
  }

  private fromHttpException(exception: HttpException, request: Request): ApiError {
    const status = exception.getStatus();
    if (status === 404) {
      return ApiError.notFound(`No such resource: ${request.method} ${request.path}`);
    }
    const code = CODE_OF_HTTP_STATUS[status];
    if (code) return new ApiError(code, exception.message);
    if (status === 400 && exception.message.startsWith(UNDECODABLE_PARAMETER)) {
      return undecodablePathParameter(request);
    }
    if (status >= 400 && status < 500) {
      // Body parser and similar framework rejections of the request itself.
      return new ApiError(ErrorCode.VALIDATION_ERROR, exception.message, [
        { field: 'request', location: 'header', issue: exception.message },
      ]);
    }
    this.logger.error(
      { request_id: requestIdOf(request), error: loggableError(exception) },
      'unexpected http exception',
    );
    return ApiError.internal();
  }
}
