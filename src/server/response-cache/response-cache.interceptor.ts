import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request, Response } from 'express';
import { from, lastValueFrom, map, Observable } from 'rxjs';
import type { RequestWithScope } from '../../common/auth/auth-scope.decorator';
import type { RequestWithReadTarget } from '../../database/read-target';
import { Clock } from '../../common/clock';
import { AppConfig } from '../../core/config/app-config';
import { prefersCsv } from '../../common/http/csv/csv-table';
import { requestIdOf } from '../../common/http/request-id';
import { answerBody, type CachedAnswer, cachedAnswer, type Envelope } from './cached-answer';
import { cacheKey } from './cache-key';
import { ResponseCache } from './response-cache';

/**
 * Serves repeated JSON reads from memory and labels every JSON answer for HTTP caches: an ETag
 * (Express answers a matching If-None-Match with 304 and no body) and `Cache-Control: private`
 * with the seconds the answer stays valid. Runs outside the envelope interceptor, after
 * authentication: only answers to an authenticated scope are kept, and only for that scope.
 * CSV exports stream and are never kept.
 */
@Injectable()
export class ResponseCacheInterceptor implements NestInterceptor {
  private readonly ttlMs: number;

  constructor(
    private readonly cache: ResponseCache,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.ttlMs = config.RESPONSE_CACHE_TTL_SECONDS * 1000;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request & RequestWithScope & RequestWithReadTarget>();
    const scope = request.authScope;
    const target = request.readTarget;
    if (!scope || !target || prefersCsv(request)) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    const key = cacheKey(request, scope);
    const { version, server } = target;
    // Keyed by the version read on the server the request was routed to: never an older answer than it.
    return from(
      this.cache.answer(
        key,
        version,
        this.clock.now().getTime(),
        () => this.compute(key, version, next),
        server,
      ),
    ).pipe(
      map(({ answer }) => {
        this.label(response, answer);
        return answerBody(answer, requestIdOf(request));
      }),
    );
  }

  private async compute(key: string, version: string, next: CallHandler): Promise<CachedAnswer> {
    const envelope = await lastValueFrom(next.handle());
    if (envelope instanceof StreamableFile) throw new Error('a JSON request was answered with a file');
    const asOf = Date.parse((envelope as Envelope).metadata.as_of);
    return cachedAnswer(key, version, envelope as Envelope, { from: asOf, to: asOf + this.ttlMs });
  }

  private label(response: Response, answer: CachedAnswer): void {
    const remainingSeconds = Math.max(0, Math.floor((answer.expiresAt - this.clock.now().getTime()) / 1000));
    response.setHeader('ETag', answer.etag);
    if (answer.dataAsOf) response.setHeader('X-Data-As-Of', answer.dataAsOf);
    response.setHeader('Cache-Control', `private, max-age=${remainingSeconds}`);
    // Accept-Encoding too: the compression middleware, which would add it, skips requests without one.
    response.setHeader('Vary', 'Authorization, X-Organization-Id, Accept, Accept-Encoding');
    response.type('application/json');
  }
}
