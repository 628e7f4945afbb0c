import { createConnection } from 'node:net';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/**
 * Whether the tests that need a real Redis can run. Under CI=true a missing Redis is a failure (CI
 * starts one), never a silent pass; elsewhere the tests are skipped with a notice saying so.
 */
export async function redisAvailableForTests(what: string): Promise<boolean> {
  if (await reachable(TEST_REDIS_URL)) return true;
  if (process.env.CI === 'true') {
    throw new Error(`Redis is not reachable at ${TEST_REDIS_URL}, and CI=true requires it for: ${what}`);
  }
  console.warn(`SKIPPED: Redis is not reachable at ${TEST_REDIS_URL}, so this was not tested: ${what}`);
  return false;
}

/** The Redis key the service counts a credential's requests under. */
export function credentialCounterKey(apiToken: string): string {
  const tokenId = apiToken.split('_')[1];
  return `gpucap:rate-limit:credential:token:${tokenId}`;
}
