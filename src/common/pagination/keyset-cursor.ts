import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ApiError } from '../http/api-error';
import { IDENTIFIER_PATTERN } from '../../core/identifier';
import { currentReadTarget } from '../../database/read-target';

/** Where the next page starts: the sort key and the id of the last item of the previous page. */
export interface KeysetPosition {
  /** The sort key as PostgreSQL printed it (microseconds kept; a JS Date would drop them). */
  key: string;
  id: string;
}

const SIGNATURE_BYTES = 16;
const KEY_ID_BYTES = 6;
/** Base64url of KEY_ID_BYTES bytes. */
const KEY_ID_PATTERN = /^[A-Za-z0-9_-]{8}$/;
const FIELD = 'next_token';
const NOT_ISSUED_HERE = 'is not a token issued by this service';
const ISSUED_BEFORE_RESTART =
  'this next_token was issued before the service restarted (or by another replica): page tokens last ' +
  'only as long as the process unless CURSOR_SECRET is set on every replica; start from the first page';
const ISSUED_UNDER_OTHER_SECRET =
  'this next_token was signed with another CURSOR_SECRET (it changed, or the replicas do not share ' +
  'one): set the same CURSOR_SECRET on every replica; start from the first page';
/** `submitted_at::text` as PostgreSQL prints it (DateStyle ISO): `2026-11-20 10:15:00.123456+00`. */
const POSTGRES_TIMESTAMP =
  /^(\d{4,5})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?[+-](\d{2})(?::(\d{2})(?::(\d{2}))?)?$/;

let processKey: Buffer | undefined;

/**
 * The codec of this process: keyed by CURSOR_SECRET, which every replica must share. Without it the
 * key is random, made once per process (never derived from anything in the source, which would let
 * anyone forge positions): tokens are then refused after a restart and by other replicas.
 */
export function cursorCodecFor(secret: string | undefined): KeysetCursorCodec {
  if (secret) return KeysetCursorCodec.fromSecret(secret);
  if (!processKey) {
    processKey = randomBytes(32);
    new Logger('KeysetCursor').warn(
      'CURSOR_SECRET is unset: page tokens are signed with a random key of this process and are ' +
        'refused after a restart and by other replicas; set CURSOR_SECRET on every replica',
    );
  }
  return new KeysetCursorCodec(processKey);
}

/**
 * Opaque, tamper-evident keyset cursors. The token carries the position and a fingerprint of the
 * filters (and organization) it was issued for, signed with HMAC-SHA256: an edited token, or one sent
 * with other filters, is a VALIDATION_ERROR on `next_token`, never a 500 or a different result.
 * The key only needs to be shared by every replica; the token's content is not secret.
 *
 * `payload.keyId.signature`: the key id (the first bytes of an HMAC of a fixed label under the key,
 * which reveals nothing of the key) tells a token signed under another key (a restarted process, a
 * replica without the shared secret, a changed CURSOR_SECRET) from an altered one, without the old
 * key. Either way it is refused; only the message differs. Tokens of the former `payload.signature`
 * form are still read.
 */
export class KeysetCursorCodec {
  private readonly keyId: string;

  constructor(
    private readonly key: Buffer,
    /** Whether the key comes from CURSOR_SECRET (else: random per process), for the refusal's wording. */
    private readonly fromSharedSecret = false,
  ) {
    this.keyId = createHmac('sha256', key)
      .update('gpucap-cursor-key-id')
      .digest()
      .subarray(0, KEY_ID_BYTES)
      .toString('base64url');
  }

  static fromSecret(secret: string): KeysetCursorCodec {
    return new KeysetCursorCodec(createHash('sha256').update(`gpucap-cursor:${secret}`).digest(), true);
  }

  encode(position: KeysetPosition, fingerprint: string): string {
    // The data version the page was read at, where replicas serve reads: the next page is read on a
    // server at least that fresh (pageTokenVersion), so paging never steps back to older data.
    const version = currentReadTarget()?.version;
    const parts = [position.key, position.id, fingerprint, ...(version === undefined ? [] : [version])];
    const payload = Buffer.from(JSON.stringify(parts)).toString('base64url');
    const signed = `${payload}.${this.keyId}`;
    return `${signed}.${this.sign(signed)}`;
  }

  /**
   * The position in `token`, which must have been issued for `fingerprint`; throws a 400 otherwise.
   * `isKey` tells a sort key the list can take back (a timestamp unless it sorts by something else).
   */
  decode(
    token: string,
    fingerprint: string,
    isKey: (key: string) => boolean = isPostgresTimestamp,
  ): KeysetPosition {
    const parts = token.split('.');
    const [payload] = parts;
    if (parts.length === 3 && payload && KEY_ID_PATTERN.test(parts[1]) && parts[1] !== this.keyId) {
      throw ApiError.invalidField(
        FIELD,
        'query',
        this.fromSharedSecret ? ISSUED_UNDER_OTHER_SECRET : ISSUED_BEFORE_RESTART,
        token,
      );
    }
    // Three parts: signed with the key id; two: a token of the former form, signed without one.
    const signed = parts.length === 3 ? `${payload}.${parts[1]}` : payload;
    const signature = parts.at(-1);
    if (parts.length < 2 || parts.length > 3 || !payload || !signature || !this.verify(signed, signature)) {
      throw ApiError.invalidField(FIELD, 'query', NOT_ISSUED_HERE, token);
    }
    // Checked even though signed: a leaked CURSOR_SECRET must not turn into 500s from the database.
    const decoded = parsePayload(payload);
    if (!decoded || !isKey(decoded[0]) || !IDENTIFIER_PATTERN.test(decoded[1])) {
      throw ApiError.invalidField(FIELD, 'query', NOT_ISSUED_HERE, token);
    }
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

/**
 * The data version a page token was issued at, read before routing and unverified: a forged one can
 * only send its request to a fresher server. Undefined for a token without one.
 */
export function pageTokenVersion(token: unknown): string | undefined {
  if (typeof token !== 'string') return undefined;
  const version = parsePayload(token.split('.')[0] ?? '')?.[3];
  return version !== undefined && /^\d{1,19}$/.test(version) ? version : undefined;
}

function parsePayload(payload: string): [string, string, string, string?] | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const length = Array.isArray(value) ? value.length : 0;
    if ((length === 3 || length === 4) && (value as unknown[]).every((part) => typeof part === 'string')) {
      return value as [string, string, string, string?];
    }
  } catch {
    // Only reached with a payload signed by a leaked key: refused like any other forgery.
  }
  return null;
}

/** A timestamp PostgreSQL will take back as timestamptz: a real calendar date from year 1. */
function isPostgresTimestamp(text: string): boolean {
  const match = POSTGRES_TIMESTAMP.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes, offsetSeconds] = match
    .slice(1)
    .map((part) => Number(part ?? 0));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const realDate =
    year >= 1 &&
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day;
  const realTime = hour <= 23 && minute <= 59 && second <= 59;
  return realDate && realTime && offsetHours <= 15 && offsetMinutes <= 59 && offsetSeconds <= 59;
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
