import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { accessSync, appendFileSync, chownSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { postgresAccount } from '../../src/database/embedded-binaries';
import { freePort } from './serve-process';

const run = promisify(execFile);
/** Debian's PostgreSQL 15 (`apt-get install postgresql-15`); another directory with PG_BIN. */
const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const BINARIES = ['initdb', 'pg_basebackup', 'postgres'];
const DATABASE = 'gpucap_replica_test';

/**
 * Whether the tests that need a real primary and streaming standby can run. Under CI=true a missing
 * binary is a failure; elsewhere (the embedded default has no pg_basebackup) the tests are skipped with
 * a notice naming them.
 */
export function replicasAvailableForTests(what: string): boolean {
  const missing = BINARIES.filter((binary) => {
    try {
      accessSync(join(BIN, binary), constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return true;
  const why = `${missing.join(', ')} not found in ${BIN} (apt-get install postgresql-15, or set PG_BIN)`;
  if (process.env.CI === 'true') throw new Error(`${why}, and CI=true requires them for: ${what}`);
  console.warn(`SKIPPED (${why}): ${what}`);
  return false;
}

/** One PostgreSQL server this harness started, on a free loopback port. */
class Server {
  child: ChildProcess | null = null;
  port = 0;
  private output = '';

  constructor(
    readonly directory: string,
    private readonly account: { uid: number; gid: number } | undefined,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${DATABASE}`;
  }

  /** Adds settings to its postgresql.conf and has it read them again (all reloadable ones). */
  configure(settings: Record<string, string>): void {
    const lines = Object.entries(settings).map(([name, value]) => `${name} = '${value}'\n`);
    appendFileSync(join(this.directory, 'postgresql.conf'), lines.join(''));
    this.child?.kill('SIGHUP');
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    this.output = '';
    const child = spawn(
      join(BIN, 'postgres'),
      [
        '-D',
        this.directory,
        '-p',
        String(this.port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
      ],
      { ...this.account, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    this.child = child;
    // A test run that ends without stopping it (a failed hook) must not leave the server running.
    process.once('exit', () => child.kill('SIGKILL'));
    await new Promise<void>((ready, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostgreSQL did not start:\n${this.output}`)), 30_000);
      child.stderr?.on('data', (chunk: Buffer) => {
        this.output = (this.output + chunk.toString()).slice(-4000);
        if (this.output.includes('ready to accept')) {
          clearTimeout(timer);
          ready();
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited:\n${this.output}`));
      });
    });
  }

  /** Fast shutdown (SIGINT): open sessions are cut, as when a replica host goes away. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  }
}

/**
 * A primary and one streaming standby made from it with `pg_basebackup -R`, from Debian's
 * PostgreSQL 15 binaries, in a temporary directory. As root (CI, this machine) the servers run as
 * the `postgres` account, which PostgreSQL requires; the directory sits under the system's temporary
 * folder, which that account can enter (a checkout may be closed to every other user).
 */
export class StreamingPair {
  private readonly root: string;
  private readonly account = postgresAccount();
  readonly primary: Server;
  readonly standby: Server;

  constructor() {
    this.root = mkdtempSync(join(tmpdir(), 'gpucap-replicas-'));
    this.giveToAccount(this.root);
    this.primary = new Server(join(this.root, 'primary'), this.account);
    this.standby = new Server(join(this.root, 'standby'), this.account);
  }

  /** Starts the primary with an empty database, `prepare` (migrations, seeds) on it, then the standby. */
  async start(prepare: (url: string) => Promise<void>): Promise<void> {
    await this.asAccount('initdb', [
      `--pgdata=${this.primary.directory}`,
      '--auth=trust',
      '--username=postgres',
      '--locale=C',
      '--encoding=UTF8',
    ]);
    this.primary.configure({ wal_level: 'replica', max_wal_senders: '4', hot_standby: 'on' });
    await this.primary.start();
    const client = new Client({
      host: '127.0.0.1',
      port: this.primary.port,
      user: 'postgres',
      database: 'postgres',
    });
    await client.connect();
    await client.query(`CREATE DATABASE ${DATABASE}`);
    await client.end();
    await prepare(this.primary.url);
    await this.asAccount('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.primary.port),
      '-U',
      'postgres',
      '-D',
      this.standby.directory,
      '-R',
      '-X',
      'stream',
      // An immediate checkpoint: the default spread one waits out most of checkpoint_timeout.
      '--checkpoint=fast',
    ]);
    await this.standby.start();
  }

  /** Runs `sql` on the primary and returns its rows. */
  async onPrimary<T>(sql: string, values: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: this.primary.url });
    await client.connect();
    try {
      return (await client.query(sql, values)).rows as T[];
    } finally {
      await client.end();
    }
  }

  async stop(): Promise<void> {
    await this.standby.stop();
    await this.primary.stop();
    rmSync(this.root, { recursive: true, force: true });
  }

  private async asAccount(binary: string, args: string[]): Promise<void> {
    await run(join(BIN, binary), args, { ...this.account, env: { ...process.env, LC_MESSAGES: 'C' } });
  }

  private giveToAccount(path: string): void {
    if (this.account) chownSync(path, this.account.uid, this.account.gid);
  }
}
