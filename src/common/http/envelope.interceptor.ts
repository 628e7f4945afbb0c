import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request } from 'express';
import { map, Observable } from 'rxjs';
import type { RequestWithScope } from '../auth/auth-scope.decorator';
import { Clock } from '../clock';
import type { RequestWithReadTarget } from '../../database/read-target';
import type { RequestWithAsOf } from './as-of.decorator';
import { WithMetadata } from './envelope';
import { requestIdOf } from './request-id';

/**
 * Wraps every successful response in `{data, metadata?, request_id}` (contract §1). Answers about an
 * organization's data carry `metadata.as_of`, the instant they describe (read once, before the
 * handler runs, which computes at that same instant: `@AsOf()`) and `metadata.data_as_of`, the instant
 * up to which every write is in the data of the server it was routed to; health keeps the exact shape the
 * contract gives it. A CSV export (a StreamableFile) is its own body.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly clock: Clock) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context
      .switchToHttp()
      .getRequest<Request & RequestWithScope & RequestWithAsOf & RequestWithReadTarget>();
    request.asOf = this.clock.now();
    const dataAsOf = request.readTarget?.dataAsOf.toISOString();
    const asOf = request.authScope
      ? { as_of: request.asOf.toISOString(), ...(dataAsOf === undefined ? {} : { data_as_of: dataAsOf }) }
      : null;
    return next.handle().pipe(
      map((result: unknown) => {
        if (result instanceof StreamableFile) return result;
        const requestId = requestIdOf(request);
        if (result instanceof WithMetadata) {
          return { data: result.data, metadata: { ...result.metadata, ...asOf }, request_id: requestId };
        }
        if (asOf) return { data: result, metadata: asOf, request_id: requestId };
        return { data: result, request_id: requestId };
      }),
    );
  }
}
