import { GPU_SHARE_UNITS } from './gpu-sharing';

/**
 * Currencies and amounts. Amounts are exact decimals computed in PostgreSQL (numeric) and rounded once,
 * at the end, to the currency's minor units; they travel as strings such as "1234.57", never as floats.
 */

/** How a price was agreed (the import's `pricing_model`). */
export const PRICING_MODELS = ['on_demand', 'reserved', 'spot', 'internal'] as const;
export type PricingModel = (typeof PRICING_MODELS)[number];

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** An ISO 4217 code that ICU knows (the list Intl.supportedValuesOf gives). */
export function isCurrency(code: string): boolean {
  return CURRENCIES.has(code);
}

/**
 * Decimals per currency code (three letters: a bounded map): a formatter costs tens of microseconds
 * to build, and one answer rounds many amounts.
 */
const MINOR_UNITS = new Map<string, number>();

/** The currency's decimals, ICU's (EUR 2, JPY 0, BHD 3). */
export function currencyMinorUnits(currency: string): number {
  const known = MINOR_UNITS.get(currency);
  if (known !== undefined) return known;
  const minorUnits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
    .maximumFractionDigits as number;
  MINOR_UNITS.set(currency, minorUnits);
  return minorUnits;
}

/** A price as the import takes it: a decimal string or a number, at least 0, at most 12 + 10 digits. */
const DECIMAL = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,10})?$/;

/** The canonical decimal text of a price, or null when it is not one. */
export function decimalText(raw: unknown): string | null {
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw) || raw < 0) return null;
    // A number's shortest round-trip form is the decimal the author wrote (2.5, not 2.4999…).
    const text = String(raw);
    return DECIMAL.test(text) ? text : null;
  }
  return typeof raw === 'string' && DECIMAL.test(raw) ? raw : null;
}

/**
 * One GPU-hour in share-unit-microseconds: a cost is Σ share units × microseconds × price ÷ this,
 * divided once, after summing (see docs/architecture.md, "Cost").
 */
export const UNIT_MICROSECONDS_PER_GPU_HOUR = GPU_SHARE_UNITS * 3_600_000_000;

/** A non-negative numeric text ("1234.5600") as an integer of 10^-scale units, exactly. */
export function scaledDecimal(text: string, scale: number): bigint {
  const [whole, fraction = ''] = text.split('.');
  if (fraction.length > scale) throw new Error(`${text} has more than ${scale} decimals`);
  return BigInt(whole) * 10n ** BigInt(scale) + BigInt(fraction.padEnd(scale, '0') || '0');
}

/**
 * numerator ÷ denominator (both ≥ 0) rounded half away from zero to `minorUnits` decimals, as text:
 * the one rounding of an exact total (PostgreSQL's numeric round rounds the same way).
 */
export function roundedAmount(numerator: bigint, denominator: bigint, minorUnits: number): string {
  const scaled = numerator * 10n ** BigInt(minorUnits);
  let units = scaled / denominator;
  if ((scaled % denominator) * 2n >= denominator) units += 1n;
  const digits = units.toString().padStart(minorUnits + 1, '0');
  return minorUnits === 0 ? digits : `${digits.slice(0, -minorUnits)}.${digits.slice(-minorUnits)}`;
}

/**
 * An exact sum of numeric texts of any scale (a sum of prices has their 10 decimals, a busy part
 * is a numeric quotient with many), kept as an integer at the largest scale seen and rounded once.
 */
export class ExactSum {
  private units = 0n;
  private scale = 0;

  add(text: string): void {
    // A sum of signed edge cuts can come out a hair below zero where nothing was used.
    const negative = text.startsWith('-');
    const magnitude = negative ? text.slice(1) : text;
    const scale = magnitude.split('.')[1]?.length ?? 0;
    if (scale > this.scale) {
      this.units *= 10n ** BigInt(scale - this.scale);
      this.scale = scale;
    }
    const units = scaledDecimal(magnitude, this.scale);
    this.units += negative ? -units : units;
  }

  /** The sum (0 if below) ÷ `denominator`, rounded half away from zero to `minorUnits` decimals. */
  rounded(denominator: bigint, minorUnits: number): string {
    const units = this.units < 0n ? 0n : this.units;
    return roundedAmount(units, denominator * 10n ** BigInt(this.scale), minorUnits);
  }
}
