import { parseDurationMs } from '../core/duration';
import { UsageError } from './usage-error';

/** A flag's duration (`90d`, `12h`, `30m`) in milliseconds, or the usage error naming the flag. */
export function parseDurationFlag(text: string, flag: string): number {
  const ms = parseDurationMs(text);
  if (ms === null || ms < 60_000) {
    throw new UsageError(`${flag} must be a positive duration such as 90d, 12h or 30m (got '${text}')`);
  }
  return ms;
}
