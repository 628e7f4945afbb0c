import type { EmbeddedDatabase } from '../../src/database/embedded-database';
import { dropDatabase } from './test-database';

export default async function globalTeardown(): Promise<void> {
  const serverUrl = process.env.GPUCAP_TEST_SERVER_URL;
  const name = process.env.GPUCAP_TEST_DATABASE;
  if (serverUrl && name && !process.env.GPUCAP_KEEP_TEST_DATABASE) await dropDatabase(serverUrl, name);
  await (globalThis as { __GPUCAP_EMBEDDED__?: EmbeddedDatabase }).__GPUCAP_EMBEDDED__?.stop();
}
