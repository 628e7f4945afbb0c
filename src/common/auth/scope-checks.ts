import { ApiError } from '../http/api-error';
import type { AuthScope } from './auth-scope';

/** A filter naming an initiative outside the caller's access is 403 (contract §3). */
export function assertInitiativeInScope(scope: AuthScope, initiativeId: string | undefined): void {
  if (initiativeId === undefined || scope.initiativeIds === 'all') return;
  if (!scope.initiativeIds.includes(initiativeId)) {
    throw ApiError.forbidden(`Initiative '${initiativeId}' is outside your access`);
  }
}

/** An `organization_id` filter must name the organization of the X-Organization-Id header. */
export function assertOrganizationInScope(scope: AuthScope, organizationId: string | undefined): void {
  if (organizationId !== undefined && organizationId !== scope.organizationId) {
    throw ApiError.forbidden(`Organization '${organizationId}' is outside your access`);
  }
}
