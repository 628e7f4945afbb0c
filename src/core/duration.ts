const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The one reading of a duration such as `30s`, `5m`, `12h` or `90d`, in milliseconds; null when it is
 * not a positive whole number followed by one of those units. Callers add their own bounds (a series
 * step in whole minutes, a token's expiry) and their own message naming the flag or parameter.
 */
export function parseDurationMs(text: string): number | null {
  const match = /^([1-9]\d{0,5})([smhd])$/.exec(text);
  if (!match) return null;
  return Number(match[1]) * UNIT_MS[match[2]];
}
