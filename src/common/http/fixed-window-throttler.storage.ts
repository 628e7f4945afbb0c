import type { OnModuleDestroy } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

interface Window {
  hits: number;
  expiresAt: number;
  blockedUntil: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * In-process counters with the same fixed-window semantics as the Redis storage's script (INCR with
 * a TTL, then a block once over the limit), so a single replica and a Redis-backed fleet limit alike.
 *
 * Replaces @nestjs/throttler's default storage, which keeps one timestamp per hit and filters that
 * list on every request: O(hits in the window) per request, which at a few thousand requests a
 * second per credential costs more than the request itself.
 */
export class FixedWindowThrottlerStorage implements ThrottlerStorage, OnModuleDestroy {
  private readonly windows = new Map<string, Window>();
  private readonly sweeper = setInterval(() => this.evictExpired(Date.now()), SWEEP_INTERVAL_MS);

  constructor(private readonly clock: () => number = Date.now) {
    this.sweeper.unref();
  }

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const now = this.clock();
    const id = `${throttlerName}\u0000${key}`;
    let window = this.windows.get(id);
    if (!window || (window.expiresAt <= now && window.blockedUntil <= now)) {
      window = { hits: 0, expiresAt: now + ttl, blockedUntil: 0 };
      this.windows.set(id, window);
    } else if (window.expiresAt <= now) {
      window.hits = 0;
      window.expiresAt = now + ttl;
    }
    window.hits += 1;
    if (window.blockedUntil <= now && window.hits > limit) window.blockedUntil = now + blockDuration;
    const isBlocked = window.blockedUntil > now;
    return Promise.resolve({
      totalHits: window.hits,
      timeToExpire: Math.ceil((window.expiresAt - now) / 1000),
      isBlocked,
      timeToBlockExpire: isBlocked ? Math.ceil((window.blockedUntil - now) / 1000) : 0,
    });
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  private evictExpired(now: number): void {
    for (const [id, window] of this.windows) {
      if (window.expiresAt <= now && window.blockedUntil <= now) this.windows.delete(id);
    }
  }
}
