import 'reflect-metadata';
import { ConfigError } from '../common/config/app-config';
import { EmbeddedDatabaseError } from '../database/embedded-database';
import { Command, createCliContext, UsageError } from './cli-context';
import { demoDataCommand } from './commands/demo-data.command';
import { importCommand } from './commands/import.command';
import { migrateCommand } from './commands/migrate.command';
import { pruneCommand } from './commands/prune.command';
import { serveCommand } from './commands/serve.command';
import { syncCommand } from './commands/sync.command';
import { tokensCommand } from './commands/tokens.command';

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  migrate: migrateCommand,
  tokens: tokensCommand,
  import: importCommand,
  'demo-data': demoDataCommand,
  prune: pruneCommand,
  sync: syncCommand,
};

const USAGE = `gpucap <command>

  serve                                   start the HTTP service (embedded PostgreSQL when DATABASE_URL is unset)
  migrate                                 apply database migrations
  import FILE|-                           load a JSON or NDJSON dataset (all or nothing, idempotent)
  demo-data [--workloads N] [--seed S]    write a realistic synthetic organization
  tokens create|list|revoke               manage API tokens
  prune --older-than 90d                  drop metric samples older than the retention
  sync --config FILE [--once|--every 60s] read Kubernetes, Prometheus (DCGM) and Slurm into the database`;

/** Registers a command from a module that is added later (import, demo-data, prune). */
export function registerCommand(name: string, command: Command): void {
  COMMANDS[name] = command;
}

export async function runCli(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  // Own properties only: `gpucap constructor` must be an unknown command, not Object's constructor.
  const command = name && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    process.stderr.write(`${name && name !== '--help' ? `Unknown command '${name}'\n\n` : ''}${USAGE}\n`);
    return name && name !== '--help' ? 2 : 0;
  }
  try {
    return await command(args, createCliContext());
  } catch (error) {
    if (
      error instanceof UsageError ||
      error instanceof ConfigError ||
      error instanceof EmbeddedDatabaseError
    ) {
      process.stderr.write(`gpucap ${name}: ${error.message}\n`);
      return 2;
    }
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`gpucap ${name}: ${(error as Error).message}\n`);
      return 2;
    }
    process.stderr.write(
      `gpucap ${name} failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    () => process.exit(1),
  );
}
