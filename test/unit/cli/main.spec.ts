import { Writable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { summaryText } from '../../../src/cli/commands/import.command';
import { COMMAND_SPECS, CommandSpec } from '../../../src/cli/command-line';
import { runCli } from '../../../src/cli/main';

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

async function run(argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const code = await runCli(argv, { stdout: stdout.stream, stderr: stderr.stream });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

const ALL_SPECS: CommandSpec[] = COMMAND_SPECS.flatMap((spec) => [spec, ...(spec.subcommands ?? [])]);
const RUNNABLE = ALL_SPECS.filter((spec) => spec.load);

describe('runCli', () => {
  // Every command's module is replaced by a spy: help and refusals must be answered without it.
  const loads = new Map<string, jest.Mock>();
  const originals = new Map<CommandSpec, CommandSpec['load']>();

  beforeEach(() => {
    for (const spec of RUNNABLE) {
      originals.set(spec, spec.load);
      const load = jest.fn(() => Promise.reject(new Error(`${spec.path} was loaded`)));
      loads.set(spec.path, load);
      spec.load = load;
    }
  });

  afterEach(() => {
    for (const [spec, load] of originals) spec.load = load;
  });

  function nothingLoaded() {
    for (const [path, load] of loads) expect([path, load.mock.calls.length]).toEqual([path, 0]);
  }

  it.each(['constructor', 'toString', '__proto__', 'hasOwnProperty', 'nope'])(
    'answers %s as an unknown command (exit 2, usage)',
    async (name) => {
      const result = await run([name]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`Unknown command '${name}'`);
      expect(result.stderr).toContain('Usage: gpucap COMMAND');
      nothingLoaded();
    },
  );

  it.each(
    ALL_SPECS.flatMap((spec) => [
      [spec.path, '--help'],
      [spec.path, '-h'],
    ]),
  )('`gpucap %s %s` prints usage on stdout, exits 0 and loads nothing', async (path, flag) => {
    const result = await run([...path.split(' '), flag]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(new RegExp(`^Usage: gpucap ${path} `.replace(/ $/, '')));
    nothingLoaded();
  });

  it('help comes first wherever it is, before a refused flag or a missing value', async () => {
    for (const argv of [
      ['import', '--bogus', '--help'],
      ['tokens', 'create', '--org', '-h'],
      ['tokens', 'revoke', '--help'],
    ]) {
      const result = await run(argv);
      expect([argv, result.code, result.stderr]).toEqual([argv, 0, '']);
      expect(result.stdout).toContain('Usage: gpucap ');
    }
    nothingLoaded();
  });

  it.each([['--help'], ['-h'], ['help']])('`gpucap %s` lists every command on stdout', async (flag) => {
    const result = await run([flag]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    for (const spec of COMMAND_SPECS) expect(result.stdout).toContain(`  ${spec.path} `);
    expect(result.stdout).toContain('--version');
  });

  it('`gpucap help import` is `gpucap import --help`', async () => {
    expect((await run(['help', 'import'])).stdout).toBe((await run(['import', '--help'])).stdout);
    expect(await run(['help', 'nope'])).toMatchObject({ code: 2, stdout: '' });
  });

  it.each([['--version'], ['-v'], ['version']])('`gpucap %s` prints the package version', async (flag) => {
    const { version } = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(await run([flag])).toEqual({ code: 0, stdout: `gpucap ${version}\n`, stderr: '' });
  });

  it.each(RUNNABLE.map((spec) => [spec.path]))(
    '`gpucap %s --bogus` is refused, naming the flag, before anything loads',
    async (path) => {
      const result = await run([...path.split(' '), '--bogus']);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`gpucap ${path}: unknown option '--bogus' for gpucap ${path}\n`);
      expect(result.stderr).toContain(`Usage: gpucap ${path}`);
      expect(result.stderr).toContain(`Run 'gpucap ${path} --help' for more.`);
      nothingLoaded();
    },
  );

  it('refuses missing values, extra and missing arguments, naming them', async () => {
    expect((await run(['tokens', 'create', '--org'])).stderr).toContain('--org needs a value');
    expect((await run(['prune', '--dry-run=yes'])).stderr).toContain('--dry-run takes no value');
    expect((await run(['import', 'a.json', 'b.json'])).stderr).toContain("unexpected argument 'b.json'");
    expect((await run(['import'])).stderr).toContain('missing FILE');
    expect((await run(['tokens', 'revoke'])).stderr).toContain('missing TOKEN_ID');
    expect((await run(['tokens', 'list', 'extra'])).stderr).toContain("unexpected argument 'extra'");
    expect((await run(['-x'])).stderr).toContain("unknown option '-x' for gpucap");
    const tokens = await run(['tokens', 'rotate']);
    expect(tokens.code).toBe(2);
    expect(tokens.stderr).toContain("gpucap tokens: unknown command 'rotate'");
    expect(tokens.stderr).toContain('gpucap tokens revoke TOKEN_ID');
    nothingLoaded();
  });
});

describe('gpucap import, before the database', () => {
  it('says why a file cannot be read, and where the format is described', async () => {
    const missing = await run(['import', 'nope.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      "gpucap import: cannot read 'nope.json': no such file (ENOENT). The import format: docs/import-format.md\n",
    );
    const directory = await run(['import', __dirname]);
    expect(directory.stderr).toContain('is a directory, not a file (EISDIR)');
  });
});

describe('the import summary', () => {
  const none = {
    organizations: 0,
    initiatives: 0,
    pools: 0,
    allocations: 0,
    members: 0,
    prices: 0,
    carbon_intensity: 0,
    instance_types: 0,
    workloads: 0,
    metric_samples: 0,
  };

  it('adds up: the rate is the count over the seconds as printed', () => {
    const text = summaryText({
      records: { ...none, workloads: 1_000, metric_samples: 9_000 },
      written: { ...none, workloads: 1_000, metric_samples: 9_000 },
      seconds: 2.004,
      skippedPrunedSamples: 0,
      recostedWorkloads: 0,
    });
    expect(text.split('\n')[0]).toBe('Imported 10,000 records in 2.00 s (5,000 records/s):');
    expect(text).toContain('workloads');
    expect(text).toContain('metric_samples');
  });

  it('gives no rate under a second, where it would say nothing', () => {
    const text = summaryText({
      records: { ...none, workloads: 2 },
      written: { ...none, workloads: 2 },
      seconds: 0.18,
      skippedPrunedSamples: 0,
      recostedWorkloads: 0,
    });
    expect(text.split('\n')[0]).toBe('Imported 2 records in 0.18 s:');
  });
});
