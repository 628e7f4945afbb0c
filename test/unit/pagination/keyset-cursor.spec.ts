import { createHash, createHmac } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ApiError } from '../../../src/common/http/api-error';
import {
  cursorCodecFor,
  filterFingerprint,
  KeysetCursorCodec,
} from '../../../src/common/pagination/keyset-cursor';

describe('KeysetCursorCodec', () => {
  const codec = KeysetCursorCodec.fromSecret('secret-one');
  const fingerprint = filterFingerprint({ organization: 'org-a', status: 'running' });
  const position = { key: '2026-11-20 10:15:00.123456+00', id: 'wl-42' };

  function rejection(action: () => unknown): ApiError {
    try {
      action();
    } catch (error) {
      return error as ApiError;
    }
    throw new Error('expected a rejection');
  }

  it('round-trips a position for the same filters', () => {
    expect(codec.decode(codec.encode(position, fingerprint), fingerprint)).toEqual(position);
  });

  it('is accepted by another replica with the same secret, refused with another, saying so', () => {
    const token = codec.encode(position, fingerprint);
    expect(KeysetCursorCodec.fromSecret('secret-one').decode(token, fingerprint)).toEqual(position);
    const error = rejection(() => KeysetCursorCodec.fromSecret('secret-two').decode(token, fingerprint));
    expect(error.status).toBe(400);
    expect(error.details).toEqual([expect.objectContaining({ field: 'next_token', location: 'query' })]);
    expect(error.details[0].issue).toMatch(/^this next_token was signed with another CURSOR_SECRET/);
  });

  it('carries a key id that reveals nothing of the key, and is signed over it', () => {
    const token = codec.encode(position, fingerprint);
    const [, keyId] = token.split('.');
    expect(token.split('.')).toHaveLength(3);
    expect(keyId).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(KeysetCursorCodec.fromSecret('secret-two').encode(position, fingerprint).split('.')[1]).not.toBe(
      keyId,
    );
  });

  it('reads a token of the former form (no key id) signed with the same key', () => {
    const payload = Buffer.from(JSON.stringify([position.key, position.id, fingerprint])).toString(
      'base64url',
    );
    const key = createHash('sha256').update('gpucap-cursor:secret-one').digest();
    const signature = createHmac('sha256', key)
      .update(payload)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    expect(codec.decode(`${payload}.${signature}`, fingerprint)).toEqual(position);
    expect(rejection(() => codec.decode(`${payload}.${signature}x`, fingerprint)).details[0].issue).toBe(
      'is not a token issued by this service',
    );
  });

  it.each(['', 'x', 'a.b', 'a.b.c', '%%%.%%%', 'a.b.c.d'])(
    'refuses garbage %j as a validation error',
    (token) => {
      const error = rejection(() => codec.decode(token, fingerprint));
      expect(error).toBeInstanceOf(ApiError);
      expect(error.status).toBe(400);
      expect(error.details[0].issue).toBe('is not a token issued by this service');
    },
  );

  it('refuses an edited payload under the right key id as not issued here (an alteration, not a restart)', () => {
    const [, keyId, signature] = codec.encode(position, fingerprint).split('.');
    const forged = Buffer.from(JSON.stringify(['2030-01-01 00:00:00+00', 'wl-1', fingerprint])).toString(
      'base64url',
    );
    const error = rejection(() => codec.decode(`${forged}.${keyId}.${signature}`, fingerprint));
    expect(error.status).toBe(400);
    expect(error.details[0]).toMatchObject({
      field: 'next_token',
      issue: 'is not a token issued by this service',
    });
  });

  it('refuses a token issued for other filters', () => {
    const token = codec.encode(position, fingerprint);
    const other = filterFingerprint({ organization: 'org-a', status: 'failed' });
    const error = rejection(() => codec.decode(token, other));
    expect(error.details[0].issue).toMatch(/other filters/);
  });
});

describe('KeysetCursorCodec positions', () => {
  const codec = KeysetCursorCodec.fromSecret('secret-one');
  const fingerprint = filterFingerprint({ organization: 'org-a' });
  const decodeSigned = (key: string, id = 'wl-1') =>
    codec.decode(codec.encode({ key, id }, fingerprint), fingerprint);

  it.each([
    '2026-11-20 10:15:00+00',
    '2026-11-20 10:15:00.5+05:30',
    '2026-11-20 10:15:00.123456-03:30:15',
    '0001-01-01 00:00:00+00',
    '10000-01-01 04:00:00+00',
  ])('accepts the PostgreSQL timestamp %s', (key) => {
    expect(decodeSigned(key)).toEqual({ key, id: 'wl-1' });
  });

  it.each([
    'yesterday',
    '',
    '2026-11-20T10:15:00Z',
    '0000-01-01 00:00:00+00',
    '2026-02-30 00:00:00+00',
    '2026-13-01 00:00:00+00',
    '2026-11-20 24:00:00+00',
    '2026-11-20 10:60:00+00',
    '2026-11-20 10:15:00+16',
    '2026-11-20 10:15:00.1234567+00',
    '294277-01-01 00:00:00+00',
  ])('refuses the signed but malformed key %j as a validation error on next_token', (key) => {
    expect(() => decodeSigned(key)).toThrow(ApiError);
    try {
      decodeSigned(key);
    } catch (error) {
      expect((error as ApiError).status).toBe(400);
      expect((error as ApiError).details[0]).toMatchObject({ field: 'next_token', location: 'query' });
    }
  });

  it.each(['', 'wl 1', 'x'.repeat(129), "wl'--"])('refuses the signed but malformed id %j', (id) => {
    expect(() => decodeSigned('2026-11-20 10:15:00+00', id)).toThrow(ApiError);
  });
});

describe('cursorCodecFor', () => {
  const fingerprint = filterFingerprint({ organization: 'org-a' });
  const position = { key: '2026-11-20 10:15:00+00', id: 'wl-1' };

  it("uses CURSOR_SECRET when set, so every replica accepts the others' tokens", () => {
    const token = cursorCodecFor('shared').encode(position, fingerprint);
    expect(KeysetCursorCodec.fromSecret('shared').decode(token, fingerprint)).toEqual(position);
  });

  it('without CURSOR_SECRET, keys the process at random, never from a constant, and warns once', () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const token = cursorCodecFor(undefined).encode(position, fingerprint);
    expect(cursorCodecFor(undefined).decode(token, fingerprint)).toEqual(position);
    const formerConstant = KeysetCursorCodec.fromSecret('gpucap-default-cursor-key');
    expect(() => formerConstant.decode(token, fingerprint)).toThrow(ApiError);
    const warnings = warn.mock.calls.filter(([message]) => String(message).includes('CURSOR_SECRET'));
    expect(warnings).toHaveLength(1);
    warn.mockRestore();
  });

  it('without CURSOR_SECRET, gives another process another key, and says a restart lost the token', () => {
    const token = cursorCodecFor(undefined).encode(position, fingerprint);
    let otherProcess: KeysetCursorCodec | undefined;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const fresh = require('../../../src/common/pagination/keyset-cursor') as {
        cursorCodecFor: typeof cursorCodecFor;
      };
      otherProcess = fresh.cursorCodecFor(undefined);
    });
    let refusal: ApiError | undefined;
    try {
      otherProcess?.decode(token, fingerprint);
    } catch (error) {
      refusal = error as ApiError;
    }
    // The isolated registry has an ApiError class of its own: checked by shape.
    expect(refusal?.status).toBe(400);
    expect(refusal?.details[0]).toMatchObject({ field: 'next_token', location: 'query' });
    expect(refusal?.details[0].issue).toBe(
      'this next_token was issued before the service restarted (or by another replica): page tokens last ' +
        'only as long as the process unless CURSOR_SECRET is set on every replica; start from the first page',
    );
  });
});

describe('filterFingerprint', () => {
  it('ignores key order and absent values, and tells different values apart', () => {
    const date = new Date('2026-11-01T00:00:00Z');
    expect(filterFingerprint({ a: 'x', b: undefined, start: date })).toBe(
      filterFingerprint({ start: new Date(date), a: 'x' }),
    );
    expect(filterFingerprint({ managed: true })).not.toBe(filterFingerprint({ managed: false }));
    expect(filterFingerprint({ organization: 'org-a' })).not.toBe(
      filterFingerprint({ organization: 'org-b' }),
    );
  });
});
