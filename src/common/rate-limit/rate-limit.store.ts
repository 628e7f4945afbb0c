/** How many hits a key has in its current fixed window, and how long until that window ends. */
export interface WindowCount {
  hits: number;
  resetMs: number;
}

/** Counts one more hit for a key in fixed windows that start at the key's first hit. */
export interface RateLimitStore {
  hit(key: string, windowMs: number): Promise<WindowCount>;
}

export const RATE_LIMIT_STORE = Symbol('RateLimitStore');
