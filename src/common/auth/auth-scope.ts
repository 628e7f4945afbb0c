import type { Role } from '../../core/roles';

/**
 * What the caller may see, resolved once per request by the global guard from the membership
 * records (JWT) or the API token. Every service and query takes it as its first argument.
 */
export interface AuthScope {
  organizationId: string;
  role: Role;
  /** 'all' for ORG_ADMIN; otherwise the initiatives the caller belongs to (possibly none). */
  initiativeIds: readonly string[] | 'all';
  /** Stable key of the credential, used for rate limiting: `token:<id>` or `sub:<subject>`. */
  credentialKey: string;
  subject: string;
}

/** The initiative ids a query must be limited to, or null when the caller sees the whole organization. */
export function scopedInitiativeIds(scope: AuthScope): readonly string[] | null {
  return scope.initiativeIds === 'all' ? null : scope.initiativeIds;
}
