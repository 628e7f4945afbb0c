import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { passportJwtSecret } from 'jwks-rsa';
import { ExtractJwt, Strategy, StrategyOptionsWithoutRequest } from 'passport-jwt';
import type { Algorithm } from 'jsonwebtoken';
import { AppConfig } from '../../core/config/app-config';
import { loggableError } from '../logging/loggable-error';

export interface JwtIdentity {
  subject: string;
}

export const JWT_CLOCK_TOLERANCE_SECONDS = 30;
/** A JWKS endpoint that hangs must not hold requests for jwks-rsa's default 30 s. */
const JWKS_TIMEOUT_MS = 5_000;
const logger = new Logger('JwtStrategy');
const ASYMMETRIC_ALGORITHMS: Algorithm[] = [
  'RS256',
  'RS384',
  'RS512',
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
];

/** Whether any JWT verification key is configured; without one only API tokens are accepted. */
export function jwtConfigured(config: AppConfig): boolean {
  return Boolean(config.JWT_SECRET || config.JWT_PUBLIC_KEY || config.JWT_JWKS_URI);
}

/**
 * Only the configured algorithm family is accepted, which refuses `alg: none` and the classic
 * confusion of an RSA public key used as an HMAC secret.
 */
function keyOptions(config: AppConfig): Partial<StrategyOptionsWithoutRequest> {
  if (config.JWT_JWKS_URI) {
    return {
      secretOrKeyProvider: passportJwtSecret({
        jwksUri: config.JWT_JWKS_URI,
        cache: true,
        rateLimit: true,
        jwksRequestsPerMinute: 10,
        timeout: JWKS_TIMEOUT_MS,
        handleSigningKeyError: logJwksFailure,
      }),
      algorithms: ['RS256', 'ES256'],
    };
  }
  if (config.JWT_PUBLIC_KEY) {
    return { secretOrKey: config.JWT_PUBLIC_KEY.replace(/\\n/g, '\n'), algorithms: ASYMMETRIC_ALGORITHMS };
  }
  // Without any configured key, an unguessable secret makes every JWT fail verification.
  return { secretOrKey: config.JWT_SECRET ?? randomBytes(32).toString('base64'), algorithms: ['HS256'] };
}

/**
 * An unknown `kid` is the caller's problem (no key, so the token fails); anything else means the
 * keys could not be fetched, which the operator must see. Logged without the message, which names
 * the JWKS host ("getaddrinfo ENOTFOUND idp.internal").
 */
function logJwksFailure(error: Error | null, callback: (error: Error | null) => void): void {
  if (error && error.name !== 'SigningKeyNotFoundError') {
    logger.warn(
      { error: loggableError(error, false) },
      'could not fetch the JWKS signing keys; JWTs are refused',
    );
    callback(error);
    return;
  }
  callback(null);
}

/** A subject is looked up in PostgreSQL text columns, which cannot hold NUL; imports refuse control characters. */
function hasControlOrDeleteCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 32 || code === 127) return true;
  }
  return false;
}

@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(config: AppConfig) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      ignoreExpiration: false,
      issuer: config.JWT_ISSUER,
      audience: config.JWT_AUDIENCE,
      // complete: validate() sees the header too, to refuse critical extensions it does not know.
      jsonWebTokenOptions: { clockTolerance: JWT_CLOCK_TOLERANCE_SECONDS, complete: true },
      ...keyOptions(config),
    } as StrategyOptionsWithoutRequest);
  }

  /**
   * Role or initiative claims are ignored on purpose: membership records decide access. A token must
   * expire (an `exp` like 1e400 reads as Infinity), and one naming critical header parameters is
   * refused: this service understands none, and RFC 7515 §4.1.11 says such a token is invalid.
   */
  validate({
    header,
    payload,
  }: {
    header: { crit?: unknown };
    payload: { sub?: unknown; exp?: unknown };
  }): JwtIdentity | false {
    if (header.crit !== undefined) return false;
    if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) return false;
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) return false;
    if (hasControlOrDeleteCharacter(payload.sub)) return false;
    return { subject: payload.sub };
  }
}
