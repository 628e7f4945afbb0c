import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../core/config/app-config';
import { SingleFlight } from '../../common/single-flight';
import type { CachedAnswer } from './cached-answer';

/** Requests routed to different servers never share a computation: one server's failure stays its own. */
function flightKey(key: string, version: string, server: string): string {
  return `${server}\n${version}\n${key}`;
}

export type CacheOutcome = 'hit' | 'miss' | 'coalesced';

/** A single answer may take at most this share of the cache, so one huge page cannot flush it. */
const LARGEST_ENTRY_SHARE = 8;

/**
 * Background recomputations running at once. Keys computed together (a dashboard's first load) pass
 * half their validity together; recomputing all of them at that instant would take every core of
 * the database server and make the slowest warm answers wait on it. A key refused here is tried again by its next hit, and the
 * other half of its validity leaves time for that.
 */
const MAX_BACKGROUND_REFRESHES = 2;

/**
 * Answers by cache key, bounded by their JSON bytes (least recently used go first), each valid
 * until its own expiry and only at the data version it was computed at. Identical requests that
 * miss at the same time share one computation.
 */
@Injectable()
export class ResponseCache {
  readonly outcomes: Record<CacheOutcome, number> = { hit: 0, miss: 0, coalesced: 0 };
  private readonly answers: LRUCache<string, CachedAnswer> | null;
  private readonly inFlight = new SingleFlight<string, CachedAnswer>();
  private backgroundRefreshes = 0;

  constructor(config: AppConfig) {
    const maxSize = config.RESPONSE_CACHE_MAX_BYTES;
    this.answers =
      config.RESPONSE_CACHE_TTL_SECONDS > 0 && maxSize > 0
        ? new LRUCache<string, CachedAnswer>({
            maxSize,
            maxEntrySize: Math.max(1, Math.floor(maxSize / LARGEST_ENTRY_SHARE)),
            sizeCalculation: (answer) => answer.bodyPrefix.length + answer.etag.length,
          })
        : null;
  }

  get bytes(): number {
    return this.answers?.calculatedSize ?? 0;
  }

  /**
   * The stored answer for `key` at `version`, else the one `compute` makes (shared while it runs).
   * A stored answer past the middle of its validity is recomputed in the background while it is
   * still served, so a key dashboards keep asking for never expires under them.
   */
  async answer(
    key: string,
    version: string,
    now: number,
    compute: () => Promise<CachedAnswer>,
    server = 'primary',
  ): Promise<{ answer: CachedAnswer; outcome: CacheOutcome }> {
    const stored = this.answers?.get(key);
    if (stored && stored.version === version && stored.expiresAt > now) {
      if (now >= stored.refreshAt) this.refreshInBackground(key, version, compute, server);
      return this.counted({ answer: stored, outcome: 'hit' });
    }
    const running = this.inFlight.get(flightKey(key, version, server));
    if (running) return this.counted({ answer: await running, outcome: 'coalesced' });
    return this.counted({ answer: await this.computeOnce(key, version, compute, server), outcome: 'miss' });
  }

  private computeOnce(
    key: string,
    version: string,
    compute: () => Promise<CachedAnswer>,
    server: string,
  ): Promise<CachedAnswer> {
    return this.inFlight.run(flightKey(key, version, server), async () => {
      const answer = await compute();
      this.store(key, answer);
      return answer;
    });
  }

  private refreshInBackground(
    key: string,
    version: string,
    compute: () => Promise<CachedAnswer>,
    server: string,
  ): void {
    if (this.inFlight.get(flightKey(key, version, server))) return;
    if (this.backgroundRefreshes >= MAX_BACKGROUND_REFRESHES) return;
    this.backgroundRefreshes += 1;
    // A failed refresh leaves the stored answer to expire; the next request then computes in the open.
    this.computeOnce(key, version, compute, server)
      .catch(() => undefined)
      .finally(() => (this.backgroundRefreshes -= 1));
  }

  private store(key: string, answer: CachedAnswer): void {
    const stored = this.answers?.get(key);
    // A slower, older computation never replaces a newer version's answer.
    if (stored && BigInt(stored.version) > BigInt(answer.version)) return;
    this.answers?.set(key, answer);
  }

  private counted<T extends { outcome: CacheOutcome }>(result: T): T {
    this.outcomes[result.outcome] += 1;
    return result;
  }
}
