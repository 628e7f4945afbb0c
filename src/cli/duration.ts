import { UsageError } from './usage-error';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `90d`, `12h`, `30m` into milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d{1,6})([mhd])$/.exec(text);
  if (!match || Number(match[1]) === 0) {
    throw new UsageError(`${flag} must be a positive duration such as 90d, 12h or 30m (got '${text}')`);
  }
  return Number(match[1]) * UNIT_MS[match[2]];
}
