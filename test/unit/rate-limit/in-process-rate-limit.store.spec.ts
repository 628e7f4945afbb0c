import { InProcessRateLimitStore } from '../../../src/common/rate-limit/in-process-rate-limit.store';

describe('InProcessRateLimitStore', () => {
  let now = 1_000_000;
  let store: InProcessRateLimitStore;
  const hit = (key = 'credential:token:a') => store.hit(key, 60_000);

  beforeEach(() => {
    now = 1_000_000;
    store = new InProcessRateLimitStore(() => now);
  });

  afterEach(() => store.onModuleDestroy());

  it('counts hits per key within a window that starts at the first hit', async () => {
    expect(await hit()).toEqual({ hits: 1, resetMs: 60_000 });
    now += 10_000;
    await hit();
    expect(await hit()).toEqual({ hits: 3, resetMs: 50_000 });
    expect(await hit('credential:token:b')).toEqual({ hits: 1, resetMs: 60_000 });
  });

  it('starts a fresh window once the previous one has ended, however far over it went', async () => {
    for (let i = 0; i < 10; i++) await hit();
    now += 59_999;
    expect(await hit()).toEqual({ hits: 11, resetMs: 1 });
    now += 1;
    expect(await hit()).toEqual({ hits: 1, resetMs: 60_000 });
  });

  it('counts a hundred thousand hits in one window exactly', async () => {
    for (let i = 0; i < 100_000; i++) await hit('credential:token:busy');
    expect((await hit('credential:token:busy')).hits).toBe(100_001);
  });
});
