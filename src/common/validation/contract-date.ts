const PLAIN_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses a request date (contract §1): a full ISO 8601 timestamp with an offset, or a plain
 * YYYY-MM-DD meaning 00:00 UTC of that day. Returns null for anything else, including impossible
 * calendar dates such as 2026-02-30 and timestamps without an offset.
 *
 * Stored times are whole milliseconds (contract §1), and a bound's digits below the millisecond are
 * rounded up: for millisecond times, `t >= x` and `t < x` then hold exactly as for the bound as
 * written (a plain Date would truncate, so `end_date=…08:00:00.0009Z` excluded a run at 08:00:00.000).
 */
export function parseContractDate(text: string): Date | null {
  const plain = PLAIN_DATE.exec(text);
  if (plain) return calendarDate(plain[1], plain[2], plain[3]) ? new Date(`${text}T00:00:00.000Z`) : null;
  const stamp = parseStamp(text);
  if (!stamp) return null;
  const belowMillisecond = /[1-9]/.test(stamp.fraction.slice(3));
  return belowMillisecond ? new Date(stamp.date.getTime() + 1) : stamp.date;
}

/** Only the full-timestamp form (with an offset) of a contract date: what imported records carry. */
export function parseContractTimestamp(text: string): Date | null {
  return parseStamp(text)?.date ?? null;
}

/** A timestamp with an offset, and the digits of its fraction of a second as written. */
function parseStamp(text: string): { date: Date; fraction: string } | null {
  const stamp = TIMESTAMP_WITH_OFFSET.exec(text);
  if (!stamp) return null;
  const [, year, month, day, hour, minute, second = '00', fraction = ''] = stamp;
  if (!calendarDate(year, month, day)) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : { date, fraction };
}

function calendarDate(year: string, month: string, day: string): boolean {
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  return (
    date.getUTCFullYear() === Number(year) &&
    date.getUTCMonth() === Number(month) - 1 &&
    date.getUTCDate() === Number(day)
  );
}
