import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request } from 'express';
import { map, Observable } from 'rxjs';
import { Clock } from '../clock';
import { WithMetadata } from './envelope';
import { requestIdOf } from './request-id';

/**
 * Wraps every successful response in `{data, metadata, request_id}` (contract §1); `metadata.as_of`
 * is the instant the answer describes (read before the handler runs, so no figure is newer). A CSV
 * export (a StreamableFile) is its own body.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly clock: Clock) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const asOf = this.clock.now().toISOString();
    return next.handle().pipe(
      map((result: unknown) => {
        if (result instanceof StreamableFile) return result;
        const requestId = requestIdOf(request);
        if (result instanceof WithMetadata) {
          return { data: result.data, metadata: { ...result.metadata, as_of: asOf }, request_id: requestId };
        }
        return { data: result, metadata: { as_of: asOf }, request_id: requestId };
      }),
    );
  }
}
