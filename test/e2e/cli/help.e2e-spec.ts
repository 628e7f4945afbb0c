import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGpucap } from '../../support/serve-process';

/**
 * Help, the version and refused flags, as an operator meets them: from `bin/gpucap.js`, with a
 * configuration that would stop any command (an unreachable database, an invalid PORT), and a probe
 * that lists, at exit, the application modules the process loaded.
 */
describe('gpucap --help and --version', () => {
  let directory: string;
  let probe: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'gpucap-help-'));
    probe = join(directory, 'probe.js');
    writeFileSync(
      probe,
      `process.on('exit', () => {
        const loaded = Object.keys(require.cache).filter((path) =>
          /node_modules[\\\\/](typeorm|@nestjs[\\\\/]core|pg|class-validator)[\\\\/]|[\\\\/]src[\\\\/](database|import|app\\\\.)/.test(path));
        process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n');
      });`,
    );
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  function gpucap(args: string[]) {
    return runGpucap(args, {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing',
      PORT: 'not-a-port',
      NODE_OPTIONS: `--require ${probe}`,
    });
  }

  it.each([
    ['import', '--help'],
    ['migrate', '--help'],
    ['serve', '-h'],
    ['tokens', 'create', '--help'],
    ['tokens', 'revoke', '--help'],
    ['sync', '--help'],
  ])('`gpucap %s %s` prints usage on stdout and exits 0, loading no app and no database', async (...args) => {
    const run = await gpucap(args);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: gpucap /);
    expect(run.stderr).toBe('LOADED []\n');
  });

  it('`gpucap --version` prints the version', async () => {
    const run = await gpucap(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^gpucap \d+\.\d+\.\d+\n$/);
  });

  it('an unknown flag is refused with exit 2, naming it, before any module of the app loads', async () => {
    const run = await gpucap(['import', '--bogus']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain("gpucap import: unknown option '--bogus' for gpucap import\n");
    expect(run.stderr).toContain('LOADED []\n');
  });
});
