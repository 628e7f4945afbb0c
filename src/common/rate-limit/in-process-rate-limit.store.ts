import type { OnModuleDestroy } from '@nestjs/common';
import type { RateLimitStore, WindowCount } from './rate-limit.store';

interface Window {
  hits: number;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * In-process counters with the same fixed-window semantics as the Redis store's script (INCR with
 * a TTL set on the first hit), so a single replica and a Redis-backed fleet limit alike.
 *
 * One counter per key, not one timestamp per hit (@nestjs/throttler's default storage): O(1) per
 * request even at a few thousand requests a second per credential.
 */
export class InProcessRateLimitStore implements RateLimitStore, OnModuleDestroy {
  private readonly windows = new Map<string, Window>();
  private readonly sweeper = setInterval(() => this.evictExpired(this.clock()), SWEEP_INTERVAL_MS);

  constructor(private readonly clock: () => number = Date.now) {
    this.sweeper.unref();
  }

  hit(key: string, windowMs: number): Promise<WindowCount> {
    const now = this.clock();
    let window = this.windows.get(key);
    if (!window || window.expiresAt <= now) {
      window = { hits: 0, expiresAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.hits += 1;
    return Promise.resolve({ hits: window.hits, resetMs: window.expiresAt - now });
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  private evictExpired(now: number): void {
    for (const [key, window] of this.windows) {
      if (window.expiresAt <= now) this.windows.delete(key);
    }
  }
}
