import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Role } from './auth-scope';
import { generateApiToken, hashSecret, parseApiToken, secretMatches } from './api-token-format';
import { ApiToken } from './entities/api-token.entity';

export interface NewApiToken {
  organizationId: string;
  role: Role;
  initiativeIds: string[];
  name: string;
  expiresAt: Date | null;
}

export type TokenCheck =
  { ok: true; token: ApiToken } | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

/** Bounds writes of last_used_at to one per token per minute, whatever the request rate. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** Compared against when the token id is unknown, so both paths cost one hash comparison. */
const DECOY_HASH = hashSecret('decoy');

@Injectable()
export class ApiTokenService {
  constructor(@InjectRepository(ApiToken) private readonly tokens: Repository<ApiToken>) {}

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
    const token = await this.tokens
      .createQueryBuilder('token')
      .addSelect('token.secretHash')
      .where('token.token_id = :tokenId', { tokenId: parsed.tokenId })
      .getOne();
    if (!secretMatches(parsed.secret, token?.secretHash ?? DECOY_HASH) || !token) {
      return { ok: false, reason: 'unknown' };
    }
    if (token.revokedAt) return { ok: false, reason: 'revoked' };
    if (token.expiresAt && token.expiresAt.getTime() <= now.getTime())
      return { ok: false, reason: 'expired' };
    this.touch(token, now);
    return { ok: true, token };
  }

  private touch(token: ApiToken, now: Date): void {
    if (token.lastUsedAt && now.getTime() - token.lastUsedAt.getTime() < LAST_USED_RESOLUTION_MS) return;
    // Best effort and off the request path: a failed bookkeeping write must not fail the request.
    this.tokens.update({ tokenId: token.tokenId }, { lastUsedAt: now }).catch(() => undefined);
  }
}
