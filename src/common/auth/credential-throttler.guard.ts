import { Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import type { RequestWithScope } from './auth-scope.decorator';

/** Rate limits per credential (API token or JWT subject), not per IP: many callers share a gateway. */
@Injectable()
export class CredentialThrottlerGuard extends ThrottlerGuard {
  protected override async getTracker(request: Record<string, unknown>): Promise<string> {
    const scoped = request as RequestWithScope & { ip?: string };
    return scoped.authScope?.credentialKey ?? `ip:${scoped.ip ?? 'unknown'}`;
  }
}
