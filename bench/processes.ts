import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Role } from '../src/core/roles';

export const ROOT = resolve(__dirname, '..');
const GPUCAP = join(ROOT, 'bin', 'gpucap.js');

/**
 * The service must measure itself, not the per-credential rate limiter: the benchmark sends
 * thousands of requests a second with two tokens, far above the default 1200 a minute.
 */
export const BENCH_RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** The service's default pool size; the baseline gets the same so neither has more connections. */
export const DATABASE_POOL_SIZE = 20;
/** Shared by the service and the baseline so both sign next_token alike and their JSON can be compared. */
const CURSOR_SECRET = 'gpucap-bench-cursor-secret';

/**
 * Runs a gpucap command to completion; stdout is returned, stderr lines go to the log except those
 * `divert` takes (it returns true for a line it keeps for itself).
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  log: (line: string) => void,
  divert: (line: string) => boolean = () => false,
  root = ROOT,
): Promise<string> {
  return runNode([join(root, 'bin', 'gpucap.js'), ...args], root, env, log, divert);
}

/**
 * A gpucap command of a compiled build (buildService), as the production image runs it: no ts-node
 * start-up, which would take seconds of a command that runs every few seconds.
 */
export function runCompiledCli(
  build: ServiceBuild,
  args: string[],
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<string> {
  return runNode(
    [join(build.buildDir, 'src', 'cli', 'main.js'), ...args],
    build.sourceDir,
    { NODE_ENV: 'production', ...env },
    log,
    () => false,
  );
}

function runNode(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
  log: (line: string) => void,
  divert: (line: string) => boolean,
): Promise<string> {
  const command = argv[1];
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, argv, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    forwardLines(child, (line) => {
      if (!divert(line)) log(`  gpucap ${command}: ${line}`);
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`gpucap ${argv.slice(1).join(' ')} exited with ${code}`));
    });
  });
}

function forwardLines(child: ChildProcess, log: (line: string) => void): void {
  let pending = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) log(line);
  });
}

export interface Server {
  name: string;
  baseUrl: string;
  process: ChildProcess;
  /** Peak resident set size of the server process so far (VmHWM), in bytes. */
  peakRss(): number | null;
  stop(): Promise<void>;
}

export function randomPort(): number {
  return 3100 + Math.floor(Math.random() * 900);
}

// Under node_modules/.cache: ignored by git and lint, and node_modules resolve from there as from dist/.
const CACHE_DIR = join(ROOT, 'node_modules', '.cache');
const BUILD_DIR = join(CACHE_DIR, 'gpucap-bench-build');

/** Where a service is compiled from and to: this checkout, or another commit's (serviceAtCommit). */
export interface ServiceBuild {
  label: string;
  sourceDir: string;
  buildDir: string;
}

/** This checkout's service, the default of the functions below. */
export const CURRENT: ServiceBuild = { label: 'service', sourceDir: ROOT, buildDir: BUILD_DIR };

/**
 * Compiles the service as the production image runs it (plain JavaScript, no ts-node in memory), into
 * a git-ignored folder of the benchmark's own. Type checking is `npm test`'s job, not the benchmark's.
 */
export async function buildService(
  log: (line: string) => void,
  build: ServiceBuild = CURRENT,
): Promise<void> {
  const { sourceDir, buildDir } = build;
  rmSync(buildDir, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await new Promise<void>((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        tsc,
        '-p',
        join(sourceDir, 'tsconfig.build.json'),
        '--outDir',
        buildDir,
        '--noCheck',
        '--sourceMap',
        'false',
      ],
      { cwd: sourceDir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) =>
      code === 0 ? done() : fail(new Error(`compiling the service failed:\n${output}`)),
    );
  });
  log(`${build.label} compiled into ${relative(ROOT, buildDir)}`);
}

/**
 * Another commit of the service (the code before a change, as the baseline of a side-by-side run):
 * a detached git worktree under node_modules/.cache that borrows this checkout's node_modules.
 * The commit must read the current schema (migrations only add).
 */
export function serviceAtCommit(commit: string): ServiceBuild {
  const sha = execFileSync('git', ['rev-parse', '--short', `${commit}^{commit}`], { cwd: ROOT })
    .toString()
    .trim();
  const sourceDir = join(CACHE_DIR, `gpucap-bench-src-${sha}`);
  if (!existsSync(sourceDir)) {
    execFileSync('git', ['worktree', 'add', '--detach', sourceDir, sha], { cwd: ROOT, stdio: 'ignore' });
    symlinkSync(join(ROOT, 'node_modules'), join(sourceDir, 'node_modules'));
  }
  return { label: `service@${sha}`, sourceDir, buildDir: join(CACHE_DIR, `gpucap-bench-build-${sha}`) };
}

/**
 * `gpucap serve` as a child process. By default the compiled build with NODE_ENV=production, as the
 * image runs it; `tsNode` runs the checkout's `bin/gpucap.js` (sources through ts-node) instead.
 */
export function startService(
  databaseUrl: string,
  tsNode: boolean,
  log: (line: string) => void,
  build: ServiceBuild = CURRENT,
): Promise<Server> {
  const port = randomPort();
  const entry = tsNode ? GPUCAP : join(build.buildDir, 'src', 'cli', 'main.js');
  const child = spawn(process.execPath, [entry, 'serve'], {
    cwd: build.sourceDir,
    env: {
      ...process.env,
      NODE_ENV: tsNode ? process.env.NODE_ENV : 'production',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: String(BENCH_RATE_LIMIT_PER_MINUTE),
      RATE_LIMIT_PER_IP_PER_MINUTE: String(BENCH_RATE_LIMIT_PER_MINUTE),
      DATABASE_POOL_SIZE: String(DATABASE_POOL_SIZE),
      CURSOR_SECRET,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  forwardLines(child, (line) => log(`  ${build.label}: ${line}`));
  return waitUntilHealthy(server(build.label, port, child), '/v1/health');
}

/** The raw baseline (bench/baseline-server.ts) as a child process of its own, like the service. */
export function startBaseline(databaseUrl: string, log: (line: string) => void): Promise<Server> {
  return startBenchServer('baseline', 'baseline-server.ts', { DATABASE_URL: databaseUrl }, log);
}

/** The warm-read ceiling (bench/ceiling-server.ts) serving the answers captured in `answersFile`. */
export function startCeiling(answersFile: string, log: (line: string) => void): Promise<Server> {
  return startBenchServer('ceiling', 'ceiling-server.ts', { CEILING_ANSWERS: answersFile }, log);
}

function startBenchServer(
  name: string,
  script: string,
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<Server> {
  const port = randomPort();
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', join(ROOT, 'bench', script)],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ...env,
        PORT: String(port),
        DATABASE_POOL_SIZE: String(DATABASE_POOL_SIZE),
        CURSOR_SECRET,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  forwardLines(child, (line) => log(`  ${name}: ${line}`));
  return waitUntilHealthy(server(name, port, child), '/health');
}

/** Runs `use` with a started server, and stops the server whatever happens. */
export async function withServer<T>(server: Server, use: (server: Server) => Promise<T>): Promise<T> {
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

function server(name: string, port: number, child: ChildProcess): Server {
  return {
    name,
    baseUrl: `http://127.0.0.1:${port}`,
    process: child,
    peakRss: () => peakRss(child.pid),
    stop: () => stopProcess(child),
  };
}

function peakRss(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function waitUntilHealthy(target: Server, path: string, timeoutMs = 180_000): Promise<Server> {
  const deadline = Date.now() + timeoutMs;
  const child = target.process;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${target.name} exited (${child.exitCode ?? child.signalCode}) before it became healthy`,
      );
    }
    try {
      const response = await fetch(`${target.baseUrl}${path}`);
      if (response.ok) return target;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 250));
  }
  await target.stop();
  throw new Error(`${target.name} did not answer ${path} within ${timeoutMs / 1000} s`);
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      done();
    });
    child.kill('SIGTERM');
  });
}

/** An API token minted with the real command line, as an operator would. */
export async function createToken(
  databaseUrl: string,
  organizationId: string,
  role: Role,
  initiativeIds: string[],
  log: (line: string) => void,
  root = ROOT,
): Promise<string> {
  const args = [
    'tokens',
    'create',
    '--org',
    organizationId,
    '--role',
    role,
    '--name',
    `bench-${role.toLowerCase()}`,
  ];
  for (const id of initiativeIds) args.push('--initiative', id);
  const stdout = await runCli(args, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, log, undefined, root);
  const token = stdout.trim().split('\n').pop()?.trim();
  if (!token?.startsWith('gpucap_')) throw new Error(`tokens create printed no token: ${stdout}`);
  return token;
}
