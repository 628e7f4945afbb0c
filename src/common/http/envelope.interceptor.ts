import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request } from 'express';
import { map, Observable } from 'rxjs';
import { WithMetadata } from './envelope';
import { requestIdOf } from './request-id';

/**
 * Wraps every successful response in `{data, metadata?, request_id}` (contract §1); a CSV export
 * (a StreamableFile) is its own body.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    return next.handle().pipe(
      map((result: unknown) => {
        if (result instanceof StreamableFile) return result;
        const requestId = requestIdOf(request);
        if (result instanceof WithMetadata) {
          return { data: result.data, metadata: result.metadata, request_id: requestId };
        }
        return { data: result, request_id: requestId };
      }),
    );
  }
}
