import { parseArgs } from 'node:util';
import type { Command } from './cli-context';
import { UsageError } from './usage-error';

/**
 * What the command line knows about each command before loading it: its usage text, its options and
 * how many arguments it takes. `--help` and refused flags are answered from this alone, in a fraction
 * of a second, without loading the application, touching the database or reading the configuration;
 * a command's module (Nest, TypeORM, the loader) is required only when the command runs.
 */
export interface CommandSpec {
  /** `import`, or `tokens create` for a subcommand. */
  path: string;
  /** One line for `gpucap --help`. */
  summary: string;
  /** The synopsis, after `Usage: gpucap `. */
  synopsis: string;
  /** Lines after the synopsis: options and notes. */
  details?: string;
  options: Record<string, OptionSpec>;
  /** How many positional arguments it takes, and what to call a missing one. */
  positionals?: { min: number; max: number; name: string };
  /** Subcommands (`tokens create|list|revoke`); a command with them has no `load`. */
  subcommands?: CommandSpec[];
  load?: () => Promise<Command>;
}

interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

const HELP_FLAGS = ['--help', '-h'];

export const COMMAND_SPECS: CommandSpec[] = [
  {
    path: 'serve',
    summary: 'start the HTTP service (embedded PostgreSQL when DATABASE_URL is unset)',
    synopsis: 'serve [--no-migrate]',
    details: `  --no-migrate   do not apply migrations at start (also MIGRATE_ON_START=false): for replicas whose
                 schema a separate \`gpucap migrate\` step owns; the embedded database is always migrated
Configuration comes from the environment (PORT, HOST, DATABASE_URL, ...: see docs/configuration.md, "Environment variables").`,
    options: { 'no-migrate': { type: 'boolean' } },
    load: async () => (await import('./commands/serve.command')).serveCommand,
  },
  {
    path: 'migrate',
    summary: 'apply pending database migrations',
    synopsis: 'migrate',
    details: `  Applies the pending migrations to DATABASE_URL (or the embedded database) and says which, then
  moves the samples of ended days into day blocks in batches, a line per batch (stopped, run it again:
  it resumes; readers are never blocked).`,
    options: {},
    load: async () => (await import('./commands/migrate.command')).migrateCommand,
  },
  {
    path: 'import',
    summary: 'load a JSON or NDJSON dataset (all or nothing, idempotent)',
    synopsis: 'import FILE|-',
    details: `  FILE   a JSON document or NDJSON, one record per line; - reads standard input
  All or nothing: a bad record rejects the whole input (exit 1) and nothing is written.
  The import format: docs/import-format.md`,
    options: {},
    positionals: { min: 1, max: 1, name: 'FILE (or - for standard input)' },
    load: async () => (await import('./commands/import.command')).importCommand,
  },
  {
    path: 'demo-data',
    summary: 'write the demo organization (deterministic per seed)',
    synopsis: 'demo-data [--workloads N] [--seed S] [--samples N] [--now ISO-TIMESTAMP]',
    details: `  --workloads N   workloads over the last 6 months (default 20000; 1000000 for benchmarks)
  --seed S        random seed (default 42); the same seed, counts and minute give the same rows
  --samples N     total metric samples over the most recent workloads (default: the last 24 hours
                  of every running workload, the last 90 minutes of those finished in the last 7 days)
  --now TIME      the dataset's "now" (default: the current time rounded down to the minute)`,
    options: {
      workloads: { type: 'string' },
      seed: { type: 'string' },
      samples: { type: 'string' },
      now: { type: 'string' },
    },
    load: async () => (await import('./commands/demo-data.command')).demoDataCommand,
  },
  {
    path: 'tokens',
    summary: 'create, list and revoke API tokens',
    synopsis: 'tokens create|list|revoke ...',
    options: {},
    subcommands: [
      {
        path: 'tokens create',
        summary: 'print a new API token once',
        synopsis:
          'tokens create --org ORG --role ORG_ADMIN|TEAM_LEAD|MEMBER [--initiative ID]... [--name NAME] [--expires-in 90d]',
        details: `  --org ORG          the organization the token reads
  --role ROLE        ORG_ADMIN (the whole organization), TEAM_LEAD or MEMBER (their initiatives)
  --initiative ID    an initiative the token is scoped to (repeat; required for TEAM_LEAD and MEMBER)
  --name NAME        a label shown by \`tokens list\`
  --expires-in 90d   a lifetime (m, h or d); default: no expiry
  The secret goes to stdout, once; only its hash is stored.`,
        options: {
          org: { type: 'string' },
          role: { type: 'string' },
          initiative: { type: 'string', multiple: true },
          name: { type: 'string' },
          'expires-in': { type: 'string' },
        },
        load: async () => (await import('./commands/tokens.command')).tokensCommand,
      },
      {
        path: 'tokens list',
        summary: "list an organization's tokens (never their secrets)",
        synopsis: 'tokens list --org ORG',
        details: '  Prints JSON: id, name, role, initiatives, creation, expiry, revocation and last use.',
        options: { org: { type: 'string' } },
        load: async () => (await import('./commands/tokens.command')).tokensCommand,
      },
      {
        path: 'tokens revoke',
        summary: 'revoke a token by its id',
        synopsis: 'tokens revoke TOKEN_ID',
        details: '  TOKEN_ID   as `gpucap tokens list` shows it (token_id), not the secret',
        options: {},
        positionals: { min: 1, max: 1, name: 'TOKEN_ID' },
        load: async () => (await import('./commands/tokens.command')).tokensCommand,
      },
    ],
  },
  {
    path: 'prune',
    summary: 'drop metric samples older than the retention',
    synopsis: 'prune --older-than 90d [--dry-run]',
    details: `  --older-than 90d   drop the weekly sample partitions that end before now less this (m, h or d)
  --dry-run          say what would be dropped, drop nothing
  Per-workload lifetime aggregates are kept; later imports skip samples before the boundary.`,
    options: { 'older-than': { type: 'string' }, 'dry-run': { type: 'boolean' } },
    load: async () => (await import('./commands/prune.command')).pruneCommand,
  },
  {
    path: 'sync',
    summary: 'read Kubernetes, Prometheus (DCGM) and Slurm into the database',
    synopsis: 'sync --config FILE [--once | --every 60s]',
    details: `  --config FILE   the sync config, JSON or YAML (docs/configuration.md, "Sync from Kubernetes, Prometheus and Slurm")
  --once          one run, one line per source (the default); exit 1 when a source failed
  --every 60s     run every interval (s, m, h or d) until SIGINT/SIGTERM, logging JSON lines`,
    options: { config: { type: 'string' }, once: { type: 'boolean' }, every: { type: 'string' } },
    load: async () => (await import('./commands/sync.command')).syncCommand,
  },
  {
    path: 'alerts',
    summary: 'evaluate budget, forecast, idle-GPU and stale-sync alerts and send them to Alertmanager',
    synopsis: 'alerts --config FILE [--once | --every 60s]',
    details: `  --config FILE   the alerts config, JSON or YAML (docs/configuration.md, "Alerts through Alertmanager")
  --once          one evaluation, one line (the default); exit 1 when Alertmanager did not take it
  --every 60s     evaluate every interval (s, m, h or d; at least a minute) until SIGINT/SIGTERM, logging JSON lines`,
    options: { config: { type: 'string' }, once: { type: 'boolean' }, every: { type: 'string' } },
    load: async () => (await import('./commands/alerts.command')).alertsCommand,
  },
];

/** The full help of a command: what `gpucap CMD --help` prints. */
export function helpText(spec: CommandSpec): string {
  if (spec.subcommands) {
    const width = Math.max(...spec.subcommands.map((sub) => sub.synopsis.length));
    return [
      `Usage: gpucap ${spec.synopsis}`,
      '',
      ...spec.subcommands.map((sub) =>
        sub.synopsis.length > 60
          ? `  gpucap ${sub.synopsis}\n      ${sub.summary}`
          : `  gpucap ${sub.synopsis.padEnd(Math.min(width, 60))}  ${sub.summary}`,
      ),
      '',
      `Run 'gpucap ${spec.path} COMMAND --help' for a command's options.`,
    ].join('\n');
  }
  return [`Usage: gpucap ${spec.synopsis}`, ...(spec.details ? ['', spec.details] : [])].join('\n');
}

/** The one line that follows a usage error. */
export function usageHint(spec: CommandSpec): string {
  return `Usage: gpucap ${spec.synopsis}\nRun 'gpucap ${spec.path} --help' for more.`;
}

export function mainHelpText(): string {
  const width = Math.max(...COMMAND_SPECS.map((spec) => spec.path.length));
  return [
    'Usage: gpucap COMMAND [OPTIONS]',
    '',
    "How an organization's GPUs are spent: a read API over PostgreSQL, and the commands that fill it.",
    '',
    'Commands:',
    ...COMMAND_SPECS.map((spec) => `  ${spec.path.padEnd(width)}  ${spec.summary}`),
    '',
    'Options:',
    "  -h, --help     show this help, or a command's (gpucap COMMAND --help)",
    '  -v, --version  print the version',
    '',
    'Commands use DATABASE_URL, or the embedded PostgreSQL when it is unset (docs/configuration.md, "Command line").',
  ].join('\n');
}

/** `--help` or `-h` anywhere before a `--`: help wins over everything else, as in most tools. */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => HELP_FLAGS.includes(arg));
}

/** The command `argv` names (a subcommand when it has them), and the arguments left for it. */
export function findCommand(argv: string[]): { spec: CommandSpec; args: string[] } | undefined {
  const [name, ...args] = argv;
  const spec = COMMAND_SPECS.find((candidate) => candidate.path === name);
  if (!spec?.subcommands) return spec && { spec, args };
  const sub = spec.subcommands.find((candidate) => candidate.path === `${name} ${args[0]}`);
  return sub ? { spec: sub, args: args.slice(1) } : { spec, args };
}

/**
 * Strict parsing: an unknown flag, a flag without its value or an extra argument is a UsageError that
 * names it. Commands call this on their own arguments too, so a command run directly (from a test)
 * refuses the same things.
 */
export function parseCommandArgs(spec: CommandSpec, args: string[]): ParsedArgs {
  let parsed: ParsedArgs;
  try {
    const options: Record<string, OptionSpec> = { ...spec.options, help: { type: 'boolean', short: 'h' } };
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(describeParseError(error, spec));
  }
  const { min, max, name } = spec.positionals ?? { min: 0, max: 0, name: '' };
  if (parsed.positionals.length > max) {
    const extra = parsed.positionals[max];
    throw new UsageError(
      extra.startsWith('-')
        ? `unknown option '${extra}' for gpucap ${spec.path}`
        : `unexpected argument '${extra}' for gpucap ${spec.path}`,
    );
  }
  if (parsed.positionals.length < min) throw new UsageError(`missing ${name}`);
  return parsed;
}

function describeParseError(error: unknown, spec: CommandSpec): string {
  const { code, message } = error as { code?: string; message?: string };
  const text = String(message ?? error);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /^Unknown option '([^']*)'/.exec(text)?.[1] ?? text;
    return `unknown option '${option}' for gpucap ${spec.path}`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const option = /^Option '(?:-\w, )?(--[\w-]+)/.exec(text)?.[1];
    if (option && /argument missing|ambiguous/.test(text)) return `${option} needs a value`;
    if (option && /does not take an argument/.test(text)) return `${option} takes no value`;
  }
  return text.split('\n')[0];
}

/** The spec of `path` (`import`, `tokens create`). */
export function commandSpec(path: string): CommandSpec {
  const spec = COMMAND_SPECS.flatMap((candidate) => [candidate, ...(candidate.subcommands ?? [])]).find(
    (candidate) => candidate.path === path,
  );
  if (!spec) throw new Error(`no command spec '${path}'`);
  return spec;
}

/** Parses a command's arguments by its spec; `--help` is answered by the caller before this. */
export function parseFor(path: string, args: string[]): ParsedArgs & { spec: CommandSpec } {
  const spec = commandSpec(path);
  return { ...parseCommandArgs(spec, args), spec };
}
