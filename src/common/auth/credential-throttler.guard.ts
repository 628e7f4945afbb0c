import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { RequestWithScope } from './auth-scope.decorator';
import { IS_PUBLIC } from './public.decorator';

/** Rate limits per credential (API token or JWT subject), not per IP: many callers share a gateway. */
@Injectable()
export class CredentialThrottlerGuard extends ThrottlerGuard {
  /** Public routes (health) carry no credential and are never limited (contract §6). */
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return (
      this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]) ??
      false
    );
  }

  protected override async getTracker(request: Record<string, unknown>): Promise<string> {
    const scoped = request as RequestWithScope & { ip?: string };
    return scoped.authScope?.credentialKey ?? `ip:${scoped.ip ?? 'unknown'}`;
  }
}
