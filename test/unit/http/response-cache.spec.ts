import type { AppConfig } from '../../../src/core/config/app-config';
import type { CachedAnswer } from '../../../src/server/response-cache/cached-answer';
import { ResponseCache } from '../../../src/server/response-cache/response-cache';

const config = { RESPONSE_CACHE_TTL_SECONDS: 10, RESPONSE_CACHE_MAX_BYTES: 1_000_000 } as AppConfig;

function answerFor(key: string, version: string, computedAt: number): CachedAnswer {
  return {
    version,
    bodyPrefix: `{"data":"${key}@${computedAt}"`,
    etag: `W/"${key}-${computedAt}"`,
    expiresAt: computedAt + 10_000,
    refreshAt: computedAt + 5_000,
  };
}

/** A computation the test finishes when it chooses, counting how many run at once. */
function controlledComputations() {
  let running = 0;
  let mostAtOnce = 0;
  const finishers: (() => void)[] = [];
  const compute = (key: string, at: number) => () =>
    new Promise<CachedAnswer>((resolve) => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      finishers.push(() => {
        running -= 1;
        resolve(answerFor(key, '1', at));
      });
    });
  const finishAll = async () => {
    while (finishers.length > 0) finishers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { compute, finishAll, mostAtOnce: () => mostAtOnce, started: () => finishers.length };
}

describe('ResponseCache background refreshes', () => {
  it('recomputes at most two keys at once past half their validity, serving the kept answers meanwhile', async () => {
    const cache = new ResponseCache(config);
    const keys = Array.from({ length: 10 }, (_, index) => `key-${index}`);
    const first = controlledComputations();
    const loads = keys.map((key) => cache.answer(key, '1', 0, first.compute(key, 0)));
    await first.finishAll();
    await Promise.all(loads);

    const later = controlledComputations();
    const hits = await Promise.all(
      keys.map((key) => cache.answer(key, '1', 6_000, later.compute(key, 6_000))),
    );
    expect(hits.map((hit) => hit.outcome)).toEqual(keys.map(() => 'hit'));
    expect(hits.map((hit) => hit.answer.bodyPrefix)).toEqual(keys.map((key) => `{"data":"${key}@0"`));
    expect(later.started()).toBe(2);

    await later.finishAll();
    // Their next hits start the keys refused before, two at a time again.
    await Promise.all(keys.map((key) => cache.answer(key, '1', 6_100, later.compute(key, 6_100))));
    expect(later.started()).toBe(2);
    expect(later.mostAtOnce()).toBe(2);
    await later.finishAll();
    const refreshed = await cache.answer('key-0', '1', 6_200, later.compute('key-0', 6_200));
    expect(refreshed).toMatchObject({ outcome: 'hit', answer: { bodyPrefix: '{"data":"key-0@6000"' } });
  });
});
