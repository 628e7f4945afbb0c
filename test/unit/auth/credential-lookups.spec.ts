import type { Repository } from 'typeorm';
import { generateApiToken, hashSecret } from '../../../src/common/auth/api-token-format';
import { ApiTokenService, VERIFIED_TOKEN_TTL_MS } from '../../../src/common/auth/api-token.service';
import type { ApiToken } from '../../../src/database/entities/api-token.entity';
import { MembershipService } from '../../../src/common/auth/membership.service';
import type { DatabaseStallWatch } from '../../../src/database/database-stall-watch';
import type { Member } from '../../../src/database/entities/member.entity';

/*
 * When a credential's verification expires (every second under load), the requests of that moment
 * share one database lookup instead of making one each.
 */

const passThroughWatch = { watch: <T>(work: () => Promise<T>) => work() } as DatabaseStallWatch;

/** A lookup the test answers when it wants, counting how many were made. */
function pendingLookups<T>() {
  const answers: ((value: T) => void)[] = [];
  return {
    made: () => answers.length,
    lookup: () => new Promise<T>((resolve) => answers.push(resolve)),
    answerAll: (value: T) => answers.forEach((answer) => answer(value)),
  };
}

describe('credential lookups', () => {
  it('verifies an API token once for the requests that arrive while it is being looked up', async () => {
    const generated = generateApiToken();
    const stored = {
      tokenId: generated.tokenId,
      secretHash: hashSecret(generated.secret),
      organizationId: 'org-a',
      role: 'ORG_ADMIN',
      initiativeIds: [],
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: new Date(),
    } as unknown as ApiToken;
    const lookups = pendingLookups<ApiToken | null>();
    const queryBuilder = { addSelect: () => queryBuilder, where: () => queryBuilder, getOne: lookups.lookup };
    const repository = { createQueryBuilder: () => queryBuilder } as unknown as Repository<ApiToken>;
    const service = new ApiTokenService(repository);
    const start = new Date('2026-11-25T12:00:00Z');

    const checks = Array.from({ length: 5 }, () => service.verify(generated.token, start));
    expect(lookups.made()).toBe(1);
    lookups.answerAll(stored);
    for (const check of await Promise.all(checks)) expect(check).toEqual({ ok: true, token: stored });

    await service.verify(generated.token, new Date(start.getTime() + VERIFIED_TOKEN_TTL_MS - 1));
    expect(lookups.made()).toBe(1);
    const later = new Date(start.getTime() + VERIFIED_TOKEN_TTL_MS);
    const again = [service.verify(generated.token, later), service.verify(generated.token, later)];
    expect(lookups.made()).toBe(2);
    lookups.answerAll({ ...stored, revokedAt: later });
    expect(await Promise.all(again)).toEqual([
      { ok: false, reason: 'revoked' },
      { ok: false, reason: 'revoked' },
    ]);
  });

  it('looks a membership up once for the requests that arrive while it is being looked up', async () => {
    const lookups = pendingLookups<Member | null>();
    const repository = { findOne: lookups.lookup } as unknown as Repository<Member>;
    const service = new MembershipService(repository, passThroughWatch);
    const member = { organizationId: 'org-a', subject: 'ana', role: 'ORG_ADMIN' } as unknown as Member;

    const found = Array.from({ length: 4 }, () => service.find('org-a', 'ana'));
    const other = service.find('org-a', 'bo');
    expect(lookups.made()).toBe(2);
    lookups.answerAll(member);
    expect(await Promise.all([...found, other])).toEqual([member, member, member, member, member]);
    expect(await service.find('org-a', 'ana')).toBe(member);
    expect(lookups.made()).toBe(2);
  });
});
