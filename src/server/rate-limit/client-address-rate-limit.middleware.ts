import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { requestIdOf } from '../../common/http/request-id';
import { writeError } from '../../common/http/write-error';
import { RateLimiter, rateLimitedError, setRateLimitHeaders } from '../../common/rate-limit/rate-limiter';

/** Health answers orchestrators and load balancers, which poll it from a handful of addresses. */
const NEVER_LIMITED = /^\/v1\/health(\/|$)/;

/**
 * A budget per client address, spent before authentication: a flood of bad or unknown tokens is
 * refused here, before each one costs a database lookup. The address is the socket's, or the
 * X-Forwarded-For hop that the first untrusted proxy saw (Express `trust proxy`, TRUSTED_PROXIES).
 */
export function clientAddressRateLimit(limiter: RateLimiter, limit: number): RequestHandler {
  return (request: Request, response: Response, next: NextFunction): void => {
    if (NEVER_LIMITED.test(request.path)) return next();
    limiter.consume('address', request.ip ?? 'unknown', limit).then((state) => {
      setRateLimitHeaders(response, state);
      if (!state.exceeded) return next();
      const error = rateLimitedError(state, 'Too many requests from this client address; retry later');
      writeError(response, error, requestIdOf(request));
    }, next);
  };
}
