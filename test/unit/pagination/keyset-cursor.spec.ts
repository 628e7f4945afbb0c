import { ApiError } from '../../../src/common/http/api-error';
import { filterFingerprint, KeysetCursorCodec } from '../../../src/common/pagination/keyset-cursor';

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

  it('is accepted by another replica with the same secret, refused with another', () => {
    const token = codec.encode(position, fingerprint);
    expect(KeysetCursorCodec.fromSecret('secret-one').decode(token, fingerprint)).toEqual(position);
    const error = rejection(() => KeysetCursorCodec.fromSecret('secret-two').decode(token, fingerprint));
    expect(error.details).toEqual([expect.objectContaining({ field: 'next_token', location: 'query' })]);
  });

  it.each(['', 'x', 'a.b', 'a.b.c', '%%%.%%%'])('refuses garbage %j as a validation error', (token) => {
    const error = rejection(() => codec.decode(token, fingerprint));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
  });

  it('refuses an edited payload', () => {
    const [, signature] = codec.encode(position, fingerprint).split('.');
    const forged = Buffer.from(JSON.stringify(['2030-01-01 00:00:00+00', 'wl-1', fingerprint])).toString(
      'base64url',
    );
    expect(rejection(() => codec.decode(`${forged}.${signature}`, fingerprint)).status).toBe(400);
  });

  it('refuses a token issued for other filters', () => {
    const token = codec.encode(position, fingerprint);
    const other = filterFingerprint({ organization: 'org-a', status: 'failed' });
    const error = rejection(() => codec.decode(token, other));
    expect(error.details[0].issue).toMatch(/other filters/);
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
