import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_TOKEN_PREFIX = 'gpucap_';
const TOKEN_PATTERN = /^gpucap_([a-z0-9]{16})_([A-Za-z0-9_-]{43})$/;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export interface ParsedApiToken {
  tokenId: string;
  secret: string;
}

/** `gpucap_<16-char id>_<43-char base64url secret>`: the id finds the row, the secret is compared by hash. */
export function generateApiToken(): ParsedApiToken & { token: string } {
  const idBytes = randomBytes(16);
  const tokenId = Array.from(idBytes, (byte) => ID_ALPHABET[byte % ID_ALPHABET.length]).join('');
  const secret = randomBytes(32).toString('base64url');
  return { tokenId, secret, token: `${API_TOKEN_PREFIX}${tokenId}_${secret}` };
}

/** Anything that looks like a token's secret part, wherever it sits in a text (a URL, a value). */
const EMBEDDED_SECRET = /(gpucap_[a-z0-9]{16}_)[A-Za-z0-9_-]+/g;

/**
 * The text with every embedded API token's secret replaced: for what is logged or echoed back, so a
 * token a caller put where it does not belong (`?access_token=…`) is never written out whole.
 */
export function redactApiTokens(text: string): string {
  return text.includes(API_TOKEN_PREFIX) ? text.replace(EMBEDDED_SECRET, '$1[redacted]') : text;
}

export function isApiTokenShaped(token: string): boolean {
  return token.startsWith(API_TOKEN_PREFIX);
}

export function parseApiToken(token: string): ParsedApiToken | null {
  const match = TOKEN_PATTERN.exec(token);
  return match ? { tokenId: match[1], secret: match[2] } : null;
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Constant-time comparison of the presented secret with the stored hash. */
export function secretMatches(secret: string, storedHash: Buffer): boolean {
  const presented = hashSecret(secret);
  return storedHash.length === presented.length && timingSafeEqual(presented, storedHash);
}
