import { parseContractDate, parseContractTimestamp } from '../../../src/common/validation/contract-date';

const iso = (text: string) => parseContractDate(text)?.toISOString() ?? null;

describe('parseContractDate', () => {
  it('reads plain dates and timestamps with an offset, and nothing else', () => {
    expect(iso('2026-11-20')).toBe('2026-11-20T00:00:00.000Z');
    expect(iso('2026-11-20T10:15:00+02:00')).toBe('2026-11-20T08:15:00.000Z');
    expect(iso('2026-11-20T10:15:00')).toBeNull();
    expect(iso('2026-02-30')).toBeNull();
  });

  it('rounds a bound up past digits below the millisecond, so >= and < hold as written', () => {
    expect(iso('2026-11-20T08:00:00.0009Z')).toBe('2026-11-20T08:00:00.001Z');
    expect(iso('2026-10-31T23:59:59.9991Z')).toBe('2026-11-01T00:00:00.000Z');
    expect(iso('2026-11-20T08:00:00.123000Z')).toBe('2026-11-20T08:00:00.123Z');
    expect(iso('2026-11-20T08:00:00.5Z')).toBe('2026-11-20T08:00:00.500Z');
  });

  it('accepts the years 1 to 99 as the dates they are', () => {
    expect(iso('0099-01-01')).toBe('0099-01-01T00:00:00.000Z');
    expect(iso('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000Z');
    expect(iso('0099-02-29')).toBeNull();
  });
});

describe('parseContractTimestamp (imported records)', () => {
  it('takes only the timestamp form and keeps the millisecond it names', () => {
    expect(parseContractTimestamp('2026-11-20')).toBeNull();
    expect(parseContractTimestamp('2026-11-20T08:00:00.0009Z')?.toISOString()).toBe(
      '2026-11-20T08:00:00.000Z',
    );
  });
});
