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

/** The currency's decimals, ICU's (EUR 2, JPY 0, BHD 3). */
export function currencyMinorUnits(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
    .maximumFractionDigits as number;
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
 * One GPU-hour in share-unit-seconds: a cost is Σ share units × seconds × price ÷ this, divided
 * once, after summing (see docs/architecture.md, "Cost").
 */
export const UNIT_SECONDS_PER_GPU_HOUR = 5040 * 3600;
