import { setImmediate as nextTurn } from 'node:timers/promises';
import { csvStream } from '../../../src/common/http/csv/csv-table';
import { KeysetCursorCodec, pageTokenVersion } from '../../../src/common/pagination/keyset-cursor';
import { currentReadTarget, runOnReadTarget } from '../../../src/database/read-target';

describe('read target', () => {
  it('stays the request’s for every page of a CSV export, whatever resumes the stream', async () => {
    const seen: (string | undefined)[] = [];
    async function* pages() {
      for (let page = 0; page < 50; page++) {
        await nextTurn();
        seen.push(currentReadTarget()?.server);
        yield { id: 'x'.repeat(2000) };
      }
    }
    const file = runOnReadTarget({ server: 'replica-1', version: '1', dataAsOf: new Date() }, () =>
      csvStream(['id'], pages(), 'export.csv'),
    );
    // Read from another context, slowly: back-pressure pauses the source, and the reader resumes it.
    let bytes = 0;
    await runOnReadTarget({ server: 'elsewhere', version: '1', dataAsOf: new Date() }, async () => {
      for await (const chunk of file.getStream()) {
        bytes += (chunk as Buffer).length;
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
    expect(bytes).toBeGreaterThan(100_000);
    expect(seen).toHaveLength(50);
    expect(new Set(seen)).toEqual(new Set(['replica-1']));
  });

  it('puts the data version a page was read at in its page token, for the next page to be routed by', () => {
    const codec = KeysetCursorCodec.fromSecret('secret');
    const position = { key: '2026-11-20 10:15:00.123456+00', id: 'w-1' };
    const routed = runOnReadTarget({ server: 'replica-1', version: '42', dataAsOf: new Date() }, () =>
      codec.encode(position, 'filters'),
    );
    expect(pageTokenVersion(routed)).toBe('42');
    expect(codec.decode(routed, 'filters')).toEqual(position);
    // Outside a routed request (no replicas configured) the token is as before, and still read back.
    const plain = codec.encode(position, 'filters');
    expect(pageTokenVersion(plain)).toBeUndefined();
    expect(codec.decode(plain, 'filters')).toEqual(position);
    expect(pageTokenVersion('not a token')).toBeUndefined();
    expect(pageTokenVersion(['x'])).toBeUndefined();
  });
});
