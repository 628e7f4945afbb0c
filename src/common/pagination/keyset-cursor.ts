import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ApiError } from '../http/api-error';
import { IDENTIFIER_PATTERN } from '../validation/identifier';

/** Where the next page starts: the sort key and the id of the last item of the previous page. */
export interface KeysetPosition {
  /** The sort key as PostgreSQL printed it (microseconds kept; a JS Date would drop them). */
  key: string;
  id: string;
}

const SIGNATURE_BYTES = 16;
const FIELD = 'next_token';
const NOT_ISSUED_HERE = 'is not a token issued by this service';
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
      throw ApiError.invalidField(FIELD, 'query', NOT_ISSUED_HERE, token);
    }
    // Checked even though signed: a leaked CURSOR_SECRET must not turn into 500s from the database.
    const decoded = parsePayload(payload);
    if (!decoded || !isPostgresTimestamp(decoded[0]) || !IDENTIFIER_PATTERN.test(decoded[1])) {
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

function parsePayload(payload: string): [string, string, string] | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string')) {
      return value as [string, string, string];
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
