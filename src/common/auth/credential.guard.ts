import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppConfig } from '../../core/config/app-config';
import { ApiError } from '../http/api-error';
import { routeParameterIssues } from '../http/route-parameter-issues';
import { IDENTIFIER_ISSUE, IDENTIFIER_PATTERN } from '../../core/identifier';
import type { AuthScope } from './auth-scope';
import type { RequestWithScope } from './auth-scope.decorator';
import { isApiTokenShaped } from './api-token-format';
import { ApiTokenService } from './api-token.service';
import { JwtIdentity, jwtConfigured } from './jwt.strategy';
import { MembershipService } from './membership.service';
import { IS_PUBLIC } from './public.decorator';

type GuardedRequest = Request & RequestWithScope & { user?: JwtIdentity };

const TOKEN_FAILURE_MESSAGES: Record<string, string> = {
  malformed: 'The API token is malformed',
  unknown: 'The API token is not valid',
  revoked: 'The API token has been revoked',
  expired: 'The API token has expired',
};

/**
 * The one global, default-deny guard. It authenticates the bearer token (API token or JWT), then
 * resolves the caller's role and initiatives in the organization named by X-Organization-Id and
 * leaves them on the request as `authScope`.
 */
@Injectable()
export class CredentialGuard extends AuthGuard('jwt') {
  constructor(
    private readonly reflector: Reflector,
    private readonly config: AppConfig,
    private readonly apiTokens: ApiTokenService,
    private readonly memberships: MembershipService,
  ) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;

    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const token = requestBearerToken(request);
    if (isApiTokenShaped(token)) {
      request.authScope = await this.scopeFromApiToken(token, context);
    } else {
      if (!jwtConfigured(this.config)) {
        throw ApiError.unauthenticated(
          'JWT authentication is not configured on this server; use an API token',
        );
      }
      await super.canActivate(context);
      request.authScope = await this.scopeFromMembership(request.user as JwtIdentity, context);
    }
    return true;
  }

  /** Called by passport with the outcome of JWT verification; every failure is a 401. */
  override handleRequest<TUser>(error: unknown, user: TUser, info: unknown): TUser {
    if (error || !user) throw ApiError.unauthenticated(describeJwtFailure(info ?? error));
    return user;
  }

  private async scopeFromApiToken(token: string, context: ExecutionContext): Promise<AuthScope> {
    const check = await this.apiTokens.verify(token);
    if (!check.ok) throw ApiError.unauthenticated(TOKEN_FAILURE_MESSAGES[check.reason]);
    const organizationId = await organizationHeader(context);
    if (check.token.organizationId !== organizationId) {
      throw ApiError.forbidden(`This credential does not belong to organization '${organizationId}'`);
    }
    return {
      organizationId,
      role: check.token.role,
      initiativeIds: check.token.role === 'ORG_ADMIN' ? 'all' : check.token.initiativeIds,
      credentialKey: `token:${check.token.tokenId}`,
      subject: `token:${check.token.tokenId}`,
    };
  }

  private async scopeFromMembership(identity: JwtIdentity, context: ExecutionContext): Promise<AuthScope> {
    const organizationId = await organizationHeader(context);
    const member = await this.memberships.find(organizationId, identity.subject);
    if (!member) throw ApiError.forbidden(`You are not a member of organization '${organizationId}'`);
    return {
      organizationId,
      role: member.role,
      initiativeIds: member.role === 'ORG_ADMIN' ? 'all' : member.initiativeIds,
      credentialKey: `sub:${identity.subject}`,
      subject: identity.subject,
    };
  }
}

function requestBearerToken(request: Request): string {
  const header = request.headers.authorization;
  if (!header) throw ApiError.unauthenticated('Missing bearer token: send Authorization: Bearer <token>');
  // Node keeps the first of several; a proxy in front may have checked another. Ambiguous: refused.
  if (authorizationHeaderCount(request.rawHeaders) > 1) {
    throw ApiError.unauthenticated('Send one Authorization header, not several');
  }
  const match = /^Bearer +(\S+) *$/i.exec(header);
  if (!match) throw ApiError.unauthenticated('Malformed Authorization header: expected Bearer <token>');
  return match[1];
}

function authorizationHeaderCount(rawHeaders: string[]): number {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index].toLowerCase() === 'authorization') count += 1;
  }
  return count;
}

/** The organization named by the header; refused together with every other offending parameter. */
async function organizationHeader(context: ExecutionContext): Promise<string> {
  const value = context.switchToHttp().getRequest<Request>().headers['x-organization-id'];
  if (typeof value === 'string' && IDENTIFIER_PATTERN.test(value)) return value;
  const refused =
    value === undefined || value === ''
      ? ApiError.invalidField('X-Organization-Id', 'header', 'is required')
      : ApiError.invalidField('X-Organization-Id', 'header', IDENTIFIER_ISSUE, value);
  const others = await routeParameterIssues(context);
  throw others.length === 0 ? refused : ApiError.validation([...refused.details, ...others]);
}

/**
 * Fixed messages only: jsonwebtoken's own ("jwt issuer invalid. expected: https://idp.internal…")
 * would tell any caller which identity provider, audience and algorithms the service trusts.
 */
function describeJwtFailure(info: unknown): string {
  const name = (info as { name?: unknown } | undefined)?.name;
  if (name === 'TokenExpiredError') return 'The token has expired';
  if (name === 'NotBeforeError') return 'The token is not valid yet';
  return 'The token is not valid';
}
