import { PassThrough, Readable } from 'node:stream';
import { ImportFormatError } from '../../../src/import/import-errors';
import { openImportSource, RawEntry } from '../../../src/import/import-source';

const KINDS =
  'organization, initiative, pool, allocation, member, price, carbon_intensity, instance_type, workload, metric_sample';
const SECTIONS =
  'organizations, initiatives, pools, allocations, members, prices, carbon_intensity, instance_types, workloads, metric_samples';

async function read(chunks: string[]): Promise<{ format: string; entries: RawEntry[] }> {
  const source = await openImportSource(Readable.from(chunks));
  const entries: RawEntry[] = [];
  for await (const entry of source.entries) entries.push(entry);
  return { format: source.format, entries };
}

async function formatError(chunks: string[]): Promise<string> {
  const error = await read(chunks).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ImportFormatError);
  return (error as Error).message;
}

describe('openImportSource', () => {
  it('yields the records of a JSON document in file order, split anywhere', async () => {
    const text = '{"workloads": [{"workload_id": "wl-1"}, 7],\n"organizations": [{"a": [1, {"b": null}]}]}';
    const { format, entries } = await read([text.slice(0, 9), text.slice(9, 30), text.slice(30)]);
    expect(format).toBe('json');
    expect(entries).toEqual([
      { section: 'workloads', location: 0, value: { workload_id: 'wl-1' } },
      { section: 'workloads', location: 1, value: 7 },
      { section: 'organizations', location: 0, value: { a: [1, { b: null }] } },
    ]);
  });

  it('numbers NDJSON lines from 1, blank and CRLF lines included', async () => {
    const { format, entries } = await read(['\r\n  \n{"kind":"wor', 'kload","a":1}\r\n\n{"kind":"pool"}']);
    expect(format).toBe('ndjson');
    expect(entries).toEqual([
      { section: 'workloads', location: 3, value: { kind: 'workload', a: 1 } },
      { section: 'pools', location: 5, value: { kind: 'pool' } },
    ]);
  });

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty'])(
    'reports the NDJSON kind %s as an invalid kind',
    async (kind) => {
      const { entries } = await read([`{"kind":"workload"}\n{"kind":"${kind}"}\n`]);
      expect(entries[1]).toEqual({
        section: 'organizations',
        location: 2,
        value: { kind },
        problem: `"kind" must be one of ${KINDS}`,
      });
    },
  );

  it.each([
    ['an empty input', [' \n\t\n'], 'the input is empty'],
    ['an array', ['[{"kind": 1}]'], `the document must be a JSON object with the sections ${SECTIONS}`],
    [
      'a section named constructor',
      ['{"constructor": []}'],
      `unknown section 'constructor' (sections: ${SECTIONS})`,
    ],
    [
      'a section named __proto__',
      ['{"__proto__": []}'],
      `unknown section '__proto__' (sections: ${SECTIONS})`,
    ],
    ['a section that is no array', ['{"pools": {}}'], "section 'pools' must be an array"],
    ['a repeated section', ['{"pools": [], "pools": []}'], "section 'pools' appears more than once"],
    [
      'a truncated document',
      ['{"pools": [{"pool_id": "a"},'],
      'the input is neither a JSON document nor NDJSON with a "kind" on every line: Parser has expected a value',
    ],
    [
      'text after the document',
      ['{"pools": []} {"pools": []}'],
      'the input is neither a JSON document nor NDJSON with a "kind" on every line: Parser cannot parse input: unexpected characters',
    ],
  ])('rejects %s', async (_name, chunks, message) => {
    expect(await formatError(chunks)).toBe(message);
  });

  it('refuses a record field named __proto__ instead of taking it as the prototype', async () => {
    const { entries } = await read(['{"pools": [{"__proto__": {"pool_id": "a"}}]}']);
    expect(entries).toHaveLength(1);
    expect(entries[0].problem).toBe("unknown field '__proto__'");
  });

  it('takes a first line too long for an NDJSON record as a JSON document', async () => {
    const record = JSON.stringify({ kind: 'pool', name: 'x'.repeat(9 * 1024 * 1024) });
    expect(await formatError([record, '\n'])).toBe(`unknown section 'kind' (sections: ${SECTIONS})`);
  });

  it('yields the first record of a document before the input ends', async () => {
    const input = new PassThrough();
    input.write('{"organizations": [{"organization_id": "org-a"},\n');
    const source = await openImportSource(input);
    const entries = source.entries[Symbol.asyncIterator]();
    const first = await entries.next();
    expect(input.writableEnded).toBe(false);
    expect(first.value).toEqual({
      section: 'organizations',
      location: 0,
      value: { organization_id: 'org-a' },
    });
    input.end('{"organization_id": "org-b"}]}');
    expect((await entries.next()).value).toEqual({
      section: 'organizations',
      location: 1,
      value: { organization_id: 'org-b' },
    });
    expect((await entries.next()).done).toBe(true);
  });
});
