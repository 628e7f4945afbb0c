import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../http/api-error';

/** Where the next page starts: the sort key and the id of the last item of the previous page. */
export interface KeysetPosition {
  /** The sort key as PostgreSQL printed it (microseconds kept; a JS Date would drop them). */
  key: string;
  id: string;
}

const SIGNATURE_BYTES = 16;
const FIELD = 'next_token';

/**
 * Opaque, tamper-evident keyset cursors. The token carries the position and a fingerprint of the
 * filters (and organization) it was issued for, signed with HMAC-SHA256: an edited token, or one sent
 * with other filters, is a VALIDATION_ERROR on `next_token`, never a 500 or a different result.
 * The key only needs to be shared by every replica; the token's content is not secret.
 */
export class KeysetCursorCodec {
  constructor(private readonly key: Buffer) {}

  static fromSecret(secret: string): KeysetCursorCodec {
    return new KeysetCursorCodec(createHash('sha256').update(`gpucap-cursor:${secret}`).digest());
  }

  encode(position: KeysetPosition, fingerprint: string): string {
    const payload = Buffer.from(JSON.stringify([position.key, position.id, fingerprint])).toString(
      'base64url',
    );
    return `${payload}.${this.sign(payload)}`;
  }

  /** The position in `token`, which must have been issued for `fingerprint`; throws a 400 otherwise. */
  decode(token: string, fingerprint: string): KeysetPosition {
    const [payload, signature, extra] = token.split('.');
    if (extra !== undefined || !payload || !signature || !this.verify(payload, signature)) {
      throw ApiError.invalidField(FIELD, 'query', 'is not a token issued by this service', token);
    }
    const decoded = parsePayload(payload);
    if (!decoded) throw ApiError.invalidField(FIELD, 'query', 'is not a token issued by this service', token);
    if (decoded[2] !== fingerprint) {
      throw ApiError.invalidField(
        FIELD,
        'query',
        'was issued for other filters; send it with the filters of the request that returned it',
        token,
      );
    }
    return { key: decoded[0], id: decoded[1] };
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.key)
      .update(payload)
      .digest()
      .subarray(0, SIGNATURE_BYTES)
      .toString('base64url');
  }

  private verify(payload: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

function parsePayload(payload: string): [string, string, string] | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string')) {
      return value as [string, string, string];
    }
  } catch {
    // A signed payload always parses; this is only reached with a forged signature match (never).
  }
  return null;
}

/**
 * A short digest of the request's filters (not the limit, which may change between pages). Values are
 * canonicalised (keys sorted, absent and undefined alike, dates as ISO) so equal filters give equal prints.
 */
export function filterFingerprint(
  filters: Record<string, string | number | boolean | Date | undefined | null>,
) {
  const canonical = Object.keys(filters)
    .sort()
    .filter((name) => filters[name] !== undefined && filters[name] !== null)
    .map((name) => {
      const value = filters[name];
      return [name, value instanceof Date ? value.toISOString() : value];
    });
  return createHash('sha256')
    .update(JSON.stringify(canonical))
    .digest()
    .subarray(0, 12)
    .toString('base64url');
}
