import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { AuthScope } from './auth-scope';

export interface RequestWithScope {
  authScope?: AuthScope;
}

/**
 * The caller's resolved scope. Fails loudly (500, logged) if no guard set it, so a route wired
 * without authentication can never silently answer for the whole organization.
 */
export const Scope = createParamDecorator((_data: unknown, context: ExecutionContext): AuthScope => {
  const request = context.switchToHttp().getRequest<RequestWithScope>();
  if (!request.authScope)
    throw new Error('AuthScope requested on a route the credential guard did not resolve');
  return request.authScope;
});
