import { packageVersion } from '../core/version';
import type { Command } from './cli-context';
import {
  COMMAND_SPECS,
  CommandSpec,
  findCommand,
  helpText,
  mainHelpText,
  parseCommandArgs,
  usageHint,
  wantsHelp,
} from './command-line';
import { UsageError } from './usage-error';

// Nothing heavy is imported here: help, the version and refused flags are answered before any
// command's module (Nest, TypeORM, pg) is loaded, and before the configuration is read.

/** Registers a command that is not in the table (tests, extensions). */
const EXTRA_COMMANDS: Record<string, Command> = {};
export function registerCommand(name: string, command: Command): void {
  EXTRA_COMMANDS[name] = command;
}

export interface CliStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export async function runCli(
  argv: string[],
  streams: CliStreams = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const { stdout, stderr } = streams;
  const [name] = argv;
  if (name === undefined) {
    stderr.write(`${mainHelpText()}\n`);
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    // `gpucap help import` is `gpucap import --help`.
    const topic = name === 'help' ? findCommand(argv.slice(1)) : undefined;
    if (name === 'help' && argv.length > 1 && !topic) {
      stderr.write(`Unknown command '${argv[1]}'\nRun 'gpucap --help' for the list of commands.\n`);
      return 2;
    }
    stdout.write(`${topic ? helpText(topic.spec) : mainHelpText()}\n`);
    return 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    stdout.write(`gpucap ${packageVersion()}\n`);
    return 0;
  }
  if (Object.hasOwn(EXTRA_COMMANDS, name))
    return runLoaded(name, EXTRA_COMMANDS[name], argv.slice(1), streams);
  const found = findCommand(argv);
  if (!found) {
    stderr.write(
      name.startsWith('-')
        ? `unknown option '${name}' for gpucap\n\n${mainHelpText()}\n`
        : `Unknown command '${name}'\n\n${mainHelpText()}\n`,
    );
    return 2;
  }
  const { spec, args } = found;
  if (wantsHelp(args)) {
    stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  if (!spec.load) {
    // A command with subcommands, called without a known one.
    const given = args[0];
    stderr.write(
      `${given === undefined ? `gpucap ${spec.path}: missing COMMAND` : `gpucap ${spec.path}: unknown command '${given}'`}\n\n${helpText(spec)}\n`,
    );
    return 2;
  }
  try {
    parseCommandArgs(spec, args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    stderr.write(`gpucap ${spec.path}: ${error.message}\n${usageHint(spec)}\n`);
    return 2;
  }
  await import('reflect-metadata');
  const command = await spec.load();
  // A subcommand's module takes the subcommand's name in front of its arguments.
  const commandArgs = spec.path.includes(' ') ? [spec.path.split(' ')[1], ...args] : args;
  return runLoaded(spec.path, command, commandArgs, streams, spec);
}

async function runLoaded(
  path: string,
  command: Command,
  args: string[],
  streams: CliStreams,
  spec?: CommandSpec,
): Promise<number> {
  const { stderr } = streams;
  try {
    const { createCliContext } = await import('./cli-context');
    return await command(args, createCliContext());
  } catch (error) {
    if (error instanceof UsageError) {
      stderr.write(`gpucap ${path}: ${error.message}\n${spec ? `${usageHint(spec)}\n` : ''}`);
      return 2;
    }
    if (await isSetupError(error)) {
      stderr.write(`gpucap ${path}: ${(error as Error).message}\n`);
      return 2;
    }
    stderr.write(`gpucap ${path} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/** A bad configuration or an embedded database that cannot start: one line, exit 2, no stack. */
async function isSetupError(error: unknown): Promise<boolean> {
  const { ConfigError } = await import('../core/config/app-config');
  const { EmbeddedDatabaseError } = await import('../database/embedded-binaries');
  return error instanceof ConfigError || error instanceof EmbeddedDatabaseError;
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    () => process.exit(1),
  );
}

export { COMMAND_SPECS };
