import { CallHandler, ExecutionContext, HttpException, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { catchError, from, Observable, switchMap, throwError } from 'rxjs';
import type { RequestWithScope } from '../../common/auth/auth-scope.decorator';
import { ApiError } from '../../common/http/api-error';
import { pageTokenVersion } from '../../common/pagination/keyset-cursor';
import { isDatabaseUnavailable } from '../../database/database-unavailable';
import { ReadReplicas } from '../../database/read-replicas';
import { type ReadTarget, type RequestWithReadTarget, runOnReadTarget } from '../../database/read-target';
import { ReadRouter } from './read-router';

type RoutedRequest = Request & RequestWithScope & RequestWithReadTarget;

/**
 * Routes each authenticated request, whole, to one server (ReadRouter) before the response cache and
 * the handler run: its data version read and every statement run there, and `X-Data-As-Of` names
 * what that server's data includes. A request a replica could not answer (a statement cancelled by
 * a recovery conflict, the replica gone mid-request, or a 404 the replica may only be too old to
 * know) is run again, whole, on the primary, once.
 */
@Injectable()
export class ReadRoutingInterceptor implements NestInterceptor {
  constructor(
    private readonly router: ReadRouter,
    private readonly replicas: ReadReplicas,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<RoutedRequest>();
    const scope = request.authScope;
    if (!scope) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    const floor = pageTokenVersion(request.query.next_token);
    return from(this.router.route(scope.organizationId, floor)).pipe(
      switchMap((target) =>
        this.handleOn(target, request, response, next).pipe(
          catchError((error: unknown) => {
            if (target.pool === undefined || !this.askPrimary(error)) return throwError(() => error);
            if (isRecoveryConflict(error)) this.replicas.conflictsRetried += 1;
            return from(this.router.primary(scope.organizationId)).pipe(
              switchMap((primary) => this.handleOn(primary, request, response, next)),
            );
          }),
        ),
      ),
    );
  }

  private handleOn(
    target: ReadTarget,
    request: RoutedRequest,
    response: Response,
    next: CallHandler,
  ): Observable<unknown> {
    request.readTarget = target;
    response.setHeader('X-Data-As-Of', target.dataAsOf.toISOString());
    // Nest binds the handler's async context where handle() is called: every statement sees the target.
    return this.replicas.configured ? runOnReadTarget(target, () => next.handle()) : next.handle();
  }

  private askPrimary(error: unknown): boolean {
    if (isRecoveryConflict(error) || isDatabaseUnavailable(error)) return true;
    const status =
      error instanceof ApiError ? error.status : error instanceof HttpException ? error.getStatus() : 0;
    return status === 404;
  }
}

/** `canceling statement due to conflict with recovery` (max_standby_streaming_delay), on a replica only. */
function isRecoveryConflict(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === '40001' || (typeof message === 'string' && message.includes('conflict with recovery'));
}
