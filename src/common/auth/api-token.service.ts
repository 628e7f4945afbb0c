import { LRUCache } from 'lru-cache';
import { Injectable, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Role } from '../../core/roles';
import { generateApiToken, hashSecret, parseApiToken, secretMatches } from './api-token-format';
import { ApiToken } from '../../database/entities/api-token.entity';
import { DatabaseStallWatch } from '../../database/database-stall-watch';
import { ReadReplicas } from '../../database/read-replicas';
import { SingleFlight } from '../single-flight';

export interface NewApiToken {
  organizationId: string;
  role: Role;
  initiativeIds: string[];
  name: string;
  expiresAt: Date | null;
}

export type TokenCheck =
  { ok: true; token: ApiToken } | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

/**
 * A verified token is trusted for this long before it is looked up again, which takes a database
 * round trip off nearly every request under load. Revocation therefore takes effect within a second.
 */
export const VERIFIED_TOKEN_TTL_MS = 1_000;
const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

/** Bounds writes of last_used_at to one per token per minute, whatever the request rate. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** Compared against when the token id is unknown, so both paths cost one hash comparison. */
const DECOY_HASH = hashSecret('decoy');

@Injectable()
export class ApiTokenService {
  private readonly verified = new LRUCache<string, { token: ApiToken; checkedAt: number }>({
    max: VERIFIED_TOKEN_CACHE_SIZE,
  });
  /**
   * Lookups in flight by cache key: when a verification expires, the requests of that moment share
   * one lookup instead of making one each (a dashboard's concurrent requests all arrive at once).
   */
  private readonly lookups = new SingleFlight<string, TokenCheck>();

  constructor(
    @InjectRepository(ApiToken) private readonly tokens: Repository<ApiToken>,
    // The service's watch; the command line's token commands have none and wait out their own bounds.
    @Optional() private readonly stallWatch?: DatabaseStallWatch,
    @Optional() private readonly readReplicas?: ReadReplicas,
  ) {}

  /** Stores only the hash; the returned token text is the one time the secret is seen. */
  async create(input: NewApiToken): Promise<{ token: string; record: ApiToken }> {
    const generated = generateApiToken();
    const record = this.tokens.create({
      ...input,
      tokenId: generated.tokenId,
      secretHash: hashSecret(generated.secret),
      createdAt: new Date(),
      revokedAt: null,
      lastUsedAt: null,
    });
    await this.tokens.insert(record);
    return { token: generated.token, record };
  }

  list(organizationId: string): Promise<ApiToken[]> {
    return this.tokens.find({ where: { organizationId }, order: { createdAt: 'ASC', tokenId: 'ASC' } });
  }

  /** Returns false when no such token exists. Revoking twice keeps the first revocation time. */
  async revoke(tokenId: string): Promise<boolean> {
    const existing = await this.tokens.findOne({ where: { tokenId } });
    if (!existing) return false;
    if (!existing.revokedAt) await this.tokens.update({ tokenId }, { revokedAt: new Date() });
    return true;
  }

  async verify(presented: string, now = new Date()): Promise<TokenCheck> {
    const parsed = parseApiToken(presented);
    if (!parsed) return { ok: false, reason: 'malformed' };
    const cacheKey = `${parsed.tokenId}:${hashSecret(parsed.secret).toString('base64')}`;
    const cached = this.verified.get(cacheKey);
    if (cached && now.getTime() - cached.checkedAt < VERIFIED_TOKEN_TTL_MS && !expired(cached.token, now)) {
      return { ok: true, token: cached.token };
    }
    return this.sharedLookup(cacheKey, parsed.tokenId, parsed.secret, now);
  }

  private sharedLookup(cacheKey: string, tokenId: string, secret: string, now: Date): Promise<TokenCheck> {
    return this.lookups.run(cacheKey, async () => {
      const check = await this.lookup(tokenId, secret, now);
      if (check.ok) this.remember(cacheKey, check.token, now);
      else this.verified.delete(cacheKey);
      return check;
    });
  }

  private async lookup(tokenId: string, secret: string, now: Date): Promise<TokenCheck> {
    const read = (tokens: Repository<ApiToken>) => () =>
      tokens
        .createQueryBuilder('token')
        .addSelect('token.secretHash')
        .where('token.token_id = :tokenId', { tokenId })
        .getOne();
    const watched = (tokens: Repository<ApiToken>) =>
      this.stallWatch ? this.stallWatch.watch(read(tokens)) : read(tokens)();
    const token = await (this.readReplicas?.readCredentials(
      () => watched(this.tokens),
      (replica) => watched(replica.getRepository(ApiToken)),
    ) ?? watched(this.tokens));
    if (!secretMatches(secret, token?.secretHash ?? DECOY_HASH) || !token) {
      return { ok: false, reason: 'unknown' };
    }
    if (token.revokedAt) return { ok: false, reason: 'revoked' };
    if (expired(token, now)) return { ok: false, reason: 'expired' };
    this.touch(token, now);
    return { ok: true, token };
  }

  private remember(cacheKey: string, token: ApiToken, now: Date): void {
    this.verified.set(cacheKey, { token, checkedAt: now.getTime() });
  }

  private touch(token: ApiToken, now: Date): void {
    if (token.lastUsedAt && now.getTime() - token.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    // Best effort and off the request path: a failed bookkeeping write must not fail the request.
    this.tokens.update({ tokenId: token.tokenId }, { lastUsedAt: now }).catch(() => undefined);
  }
}

function expired(token: ApiToken, now: Date): boolean {
  return token.expiresAt !== null && token.expiresAt.getTime() <= now.getTime();
}
