/** A source could not be read; the message is one line, its URLs without credentials or query. */
export class SourceUnavailableError extends Error {}

const NETWORK_CODES = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'EPIPE',
];

/** The network reason of a failed request (`ECONNREFUSED`), looked up through nested causes. */
export function networkReason(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && NETWORK_CODES.includes(code)) return code;
    const named =
      typeof message === 'string' ? NETWORK_CODES.find((name) => message.includes(name)) : undefined;
    if (named) return named;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Rejects with `SourceUnavailableError(message)` when `work` takes longer than `seconds`. */
export async function withDeadline<T>(work: Promise<T>, seconds: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SourceUnavailableError(message)), seconds * 1000);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A URL as a report may show it: scheme, host, port and path, never the user, password, query or
 * fragment (where tokens travel).
 */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '<url>';
  }
}

/** One line for a report: the first line of the message, its URLs as `safeUrl` shows them. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text
    .split('\n')[0]
    .replace(/https?:\/\/[^\s'"()]+/g, (url) => safeUrl(url))
    .slice(0, 400);
}
