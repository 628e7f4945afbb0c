import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import type { RequestWithScope } from '../../common/auth/auth-scope.decorator';
import { AppConfig } from '../../core/config/app-config';
import { RateLimiter, rateLimitedError, setRateLimitHeaders } from '../../common/rate-limit/rate-limiter';

/**
 * The per-credential budget (API token or JWT subject, not address: many callers share a gateway),
 * one for all routes. Runs after the credential guard; a route without a resolved scope is public
 * (health) and never limited.
 */
@Injectable()
export class CredentialRateLimitGuard implements CanActivate {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const credentialKey = context.switchToHttp().getRequest<RequestWithScope>().authScope?.credentialKey;
    if (!credentialKey) return true;
    const state = await this.limiter.consume('credential', credentialKey, this.config.RATE_LIMIT_PER_MINUTE);
    setRateLimitHeaders(context.switchToHttp().getResponse<Response>(), state);
    if (state.exceeded) throw rateLimitedError(state, 'Too many requests for this credential; retry later');
    return true;
  }
}
