import type { Request } from 'express';
import { type AuthScope, scopedInitiativeIds } from '../../common/auth/auth-scope';

/**
 * What an answer depends on besides the data: the caller's organization, role and exact initiative
 * scope, the path and the query with its parameters in a fixed order. Two callers share an entry
 * only when they would be given the same rows.
 */
export function cacheKey(request: Request, scope: AuthScope): string {
  const initiatives = scopedInitiativeIds(scope);
  const query = new URLSearchParams(request.originalUrl.split('?')[1] ?? '');
  query.sort();
  return [
    scope.organizationId,
    scope.role,
    initiatives === null ? '*' : [...initiatives].sort().join(','),
    request.path,
    query.toString(),
  ].join('\n');
}
