const PLAIN_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses a request date (contract §1): a full ISO 8601 timestamp with an offset, or a plain
 * YYYY-MM-DD meaning 00:00 UTC of that day. Returns null for anything else, including impossible
 * calendar dates such as 2026-02-30 and timestamps without an offset.
 */
export function parseContractDate(text: string): Date | null {
  const plain = PLAIN_DATE.exec(text);
  if (plain) return calendarDate(plain[1], plain[2], plain[3]) ? new Date(`${text}T00:00:00.000Z`) : null;

  const stamp = TIMESTAMP_WITH_OFFSET.exec(text);
  if (!stamp) return null;
  const [, year, month, day, hour, minute, second = '00'] = stamp;
  if (!calendarDate(year, month, day)) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  const parsed = new Date(text);
  return Number.isNaN(parsed.getTime()) ? null : parsed;
}

/** Only the full-timestamp form (with an offset) of a contract date: what imported records carry. */
export function parseContractTimestamp(text: string): Date | null {
  return TIMESTAMP_WITH_OFFSET.test(text) ? parseContractDate(text) : null;
}

function calendarDate(year: string, month: string, day: string): boolean {
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  return (
    date.getUTCFullYear() === Number(year) &&
    date.getUTCMonth() === Number(month) - 1 &&
    date.getUTCDate() === Number(day)
  );
}
