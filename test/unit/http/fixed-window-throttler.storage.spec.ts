import { FixedWindowThrottlerStorage } from '../../../src/common/http/fixed-window-throttler.storage';

describe('FixedWindowThrottlerStorage', () => {
  let now = 1_000_000;
  let storage: FixedWindowThrottlerStorage;
  const hit = (key = 'token:a') => storage.increment(key, 60_000, 3, 60_000, 'per-credential');

  beforeEach(() => {
    now = 1_000_000;
    storage = new FixedWindowThrottlerStorage(() => now);
  });

  afterEach(() => storage.onModuleDestroy());

  it('counts hits per key within the window and blocks once over the limit', async () => {
    expect((await hit()).totalHits).toBe(1);
    now += 10_000;
    await hit();
    const third = await hit();
    expect(third).toEqual({ totalHits: 3, timeToExpire: 50, isBlocked: false, timeToBlockExpire: 0 });
    const fourth = await hit();
    expect(fourth.isBlocked).toBe(true);
    expect(fourth.timeToBlockExpire).toBe(60);
    expect((await hit('token:b')).totalHits).toBe(1);
  });

  it('starts a fresh window once both the window and the block have expired', async () => {
    for (let i = 0; i < 4; i++) await hit();
    now += 59_000;
    expect((await hit()).isBlocked).toBe(true);
    now += 1_001;
    expect(await hit()).toEqual({ totalHits: 1, timeToExpire: 60, isBlocked: false, timeToBlockExpire: 0 });
  });

  it('counts a hundred thousand hits in one window exactly', async () => {
    const bigLimit = (key: string) => storage.increment(key, 60_000, 1e9, 60_000, 'per-credential');
    for (let i = 0; i < 100_000; i++) await bigLimit('token:busy');
    expect((await bigLimit('token:busy')).totalHits).toBe(100_001);
  });
});
