import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EmbeddedDatabase } from '../../../src/database/embedded-database';
import { freePort, runGpucap, ServeProcess, startServe } from '../../support/serve-process';

/** Without DATABASE_URL (an empty value counts as unset), in a directory of the test's own. */
const NO_DATABASE_URL = { DATABASE_URL: '' };

describe('embedded PostgreSQL', () => {
  const directories: string[] = [];

  function scratchDirectory(): string {
    // mkdtemp makes it 0700: as root, the `postgres` account cannot enter it, as in a clone under /root.
    const directory = mkdtempSync(join(tmpdir(), 'gpucap-embedded-'));
    directories.push(directory);
    return directory;
  }

  afterAll(() => {
    for (const directory of directories) {
      const cluster = new EmbeddedDatabase({ directory: join(directory, 'pg'), port: 1 }).clusterDirectory;
      if (!cluster.startsWith(directory)) rmSync(dirname(cluster), { recursive: true, force: true });
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('says in one line why it cannot start and what to do', async () => {
    const directory = scratchDirectory();
    // Reachable, so the cluster is the one placed here (as root, an unreachable one would be moved).
    chmodSync(directory, 0o755);
    const embedded = join(directory, 'pg');
    // A cluster directory PostgreSQL refuses (no control file, wrong ownership or mode).
    mkdirSync(join(embedded, 'cluster'), { recursive: true, mode: 0o755 });
    writeFileSync(join(embedded, 'cluster', 'PG_VERSION'), '15\n');
    writeFileSync(join(embedded, 'embedded.json'), JSON.stringify({ password: 'x' }));
    const run = await runGpucap(['migrate'], {
      ...NO_DATABASE_URL,
      EMBEDDED_PG_DIR: embedded,
      EMBEDDED_PG_PORT: String(await freePort()),
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n')).toEqual([expect.any(String), '']);
    expect(run.stderr).toMatch(/^gpucap migrate: The embedded PostgreSQL could not start \(.+\): fix that, /);
    expect(run.stderr).toContain('set DATABASE_URL to use an existing PostgreSQL');
  });

  it('names an embedded directory it cannot create, in one line', async () => {
    const file = join(scratchDirectory(), 'a-file');
    writeFileSync(file, '');
    const run = await runGpucap(['tokens', 'list', '--org', 'org-demo'], {
      ...NO_DATABASE_URL,
      EMBEDDED_PG_DIR: join(file, 'pg'),
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^gpucap tokens list: The embedded PostgreSQL could not start \(ENOTDIR[^\n]*\): fix that, set EMBEDDED_PG_DIR to another directory, or set DATABASE_URL to use an existing PostgreSQL\n$/,
    );
  });

  it('as root, names a cluster kept under /var/tmp after the checkout', () => {
    const directory = join(scratchDirectory(), 'pg');
    const cluster = new EmbeddedDatabase({ directory, port: 1 }).clusterDirectory;
    // Only as root with a `postgres` account, which cannot enter the 0700 scratch directory.
    if (cluster.startsWith(directory)) return;
    expect(cluster).toMatch(/^\/var\/tmp\/gpucap-pgdata-pg-[0-9a-f]{16}\/cluster$/);
  });

  describe('beside a running serve', () => {
    const env: Record<string, string> = {};
    let serve: ServeProcess;

    beforeAll(async () => {
      Object.assign(env, NO_DATABASE_URL, {
        EMBEDDED_PG_DIR: join(scratchDirectory(), 'pg'),
        EMBEDDED_PG_PORT: String(await freePort()),
      });
      serve = await startServe(env, 170_000);
    }, 180_000);

    afterAll(() => {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    });

    it('ends its start-up with a framed greeting: both tokens to export, the page and the data folder', () => {
      const output = serve.output();
      const cluster = new EmbeddedDatabase({ directory: env.EMBEDDED_PG_DIR, port: 1 }).clusterDirectory;
      const rule = `# ${'='.repeat(78)}`;
      const start = output.indexOf(rule);
      expect(start).toBeGreaterThan(-1);
      const lines = output.slice(start).trimEnd().split('\n');
      // Framed, and after every start-up log line (none among or after its lines).
      expect(lines.at(-1)).toBe(rule);
      expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
      // Every line pastes into a shell: a comment or a command.
      for (const line of lines) expect(line).toMatch(/^(#|export |curl )/);
      expect(lines).toContainEqual(expect.stringMatching(/^export GPUCAP_TOKEN=gpucap_\S+ +# ORG_ADMIN/));
      expect(lines).toContainEqual(
        expect.stringMatching(/^export GPUCAP_MEMBER_TOKEN=gpucap_\S+ +# MEMBER of /),
      );
      expect(output).toContain(`Dashboard page: http://127.0.0.1:${serve.port}/ `);
      expect(output).toContain(`kept in ${cluster}`);
      if (!cluster.startsWith(env.EMBEDDED_PG_DIR)) {
        // Away from the checkout (as root): a note beside it says whose it is.
        expect(readFileSync(join(dirname(cluster), 'CHECKOUT.txt'), 'utf8')).toContain(env.EMBEDDED_PG_DIR);
      }
    });

    it('commands share the server that serve started', async () => {
      const listed = await runGpucap(['tokens', 'list', '--org', 'org-demo'], env);
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
      const tokens = JSON.parse(listed.stdout) as { name: string; revoked_at: string | null }[];
      expect(tokens.filter((token) => !token.revoked_at).map((token) => token.name)).toEqual(
        expect.arrayContaining(['demo-admin', 'demo-member']),
      );
      // The shared server is still serve's: the command did not stop it on its way out.
      expect((await fetch(`http://127.0.0.1:${serve.port}/v1/health`)).status).toBe(200);
    });

    it('serve exits 0 on SIGTERM after its PostgreSQL was killed from outside', async () => {
      const cluster = new EmbeddedDatabase({ directory: env.EMBEDDED_PG_DIR, port: 1 }).clusterDirectory;
      const postgresPid = Number(readFileSync(join(cluster, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postgresPid, 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 500));
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    }, 20_000);
  });
});
