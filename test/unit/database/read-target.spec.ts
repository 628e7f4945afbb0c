import { setImmediate as nextTurn } from 'node:timers/promises';
import { csvStream } from '../../../src/common/http/csv/csv-table';
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
    // Read from outside the request's context, slowly: back-pressure pauses and resumes the source.
    let bytes = 0;
    for await (const chunk of file.getStream()) {
      bytes += (chunk as Buffer).length;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(bytes).toBeGreaterThan(100_000);
    expect(seen).toHaveLength(50);
    expect(new Set(seen)).toEqual(new Set(['replica-1']));
  });
});
