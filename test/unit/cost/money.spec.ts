import {
  currencyMinorUnits,
  decimalText,
  isCurrency,
  roundedAmount,
  scaledDecimal,
} from '../../../src/common/money';

describe('money', () => {
  it('knows ISO 4217 codes and their minor units from ICU', () => {
    expect(['EUR', 'USD', 'JPY', 'BHD'].map(isCurrency)).toEqual([true, true, true, true]);
    expect(['EURO', 'eur', 'XYZ'].map(isCurrency)).toEqual([false, false, false]);
    expect(['EUR', 'JPY', 'BHD'].map(currencyMinorUnits)).toEqual([2, 0, 3]);
  });

  it.each([
    ['2.50', '2.50'],
    [2.5, '2.5'],
    [0, '0'],
    ['0', '0'],
    [0.1, '0.1'],
    ['123456789012.0123456789', '123456789012.0123456789'],
  ])('takes the price %p as %p', (raw, text) => {
    expect(decimalText(raw)).toBe(text);
  });

  it.each([
    -1,
    '-1',
    '1e3',
    1e21,
    1e-7,
    '01.5',
    '.5',
    '1.',
    'NaN',
    Number.NaN,
    Infinity,
    '1234567890123',
    null,
  ])('refuses the price %p', (raw) => {
    expect(decimalText(raw)).toBeNull();
  });

  it('scales numeric text exactly and rounds once, half away from zero', () => {
    expect(scaledDecimal('12.5', 3)).toBe(12_500n);
    expect(scaledDecimal('7', 2)).toBe(700n);
    expect(roundedAmount(1234565n, 1000n, 2)).toBe('1234.57');
    expect(roundedAmount(1234564n, 1000n, 2)).toBe('1234.56');
    expect(roundedAmount(5n, 10n, 0)).toBe('1');
    expect(roundedAmount(4n, 10n, 0)).toBe('0');
    expect(roundedAmount(0n, 7n, 2)).toBe('0.00');
    expect(roundedAmount(1n, 1000n, 3)).toBe('0.001');
    // Three parts of 0.004 round to 0.00 each; their exact sum, 0.012, is what is rounded: 0.01.
    expect(roundedAmount(4n, 1000n, 2)).toBe('0.00');
    expect(roundedAmount(3n * 4n, 1000n, 2)).toBe('0.01');
  });
});
