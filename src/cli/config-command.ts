import type { ConfigErrorClass } from '../common/config-file';
import { type CliContext, UsageError } from './cli-context';
import { helpText, parseFor } from './command-line';

/** What `gpucap sync` and `gpucap alerts` share: `--config FILE` and `--once` or `--every DURATION`. */
export interface ConfigCommand<T> {
  file: string;
  config: T;
  /** null under `--once` (the default). */
  intervalMs: number | null;
}

/**
 * The flags and the config of a command that runs a config once or on a schedule; null once `--help`
 * is printed. A bad flag or config is a UsageError naming the file, before any database or request.
 */
export function readConfigCommand<T>(
  name: 'sync' | 'alerts',
  args: string[],
  context: CliContext,
  options: { load: (file: string) => T; error: ConfigErrorClass; interval: (text: string) => number },
): ConfigCommand<T> | null {
  const { values: parsed, spec } = parseFor(name, args);
  if (parsed.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return null;
  }
  const values = parsed as { config?: string; once?: boolean; every?: string };
  if (!values.config) throw new UsageError('--config is required');
  if (values.once && values.every) throw new UsageError('--once and --every exclude each other');
  const intervalMs = values.every ? options.interval(values.every) : null;
  try {
    return { file: values.config, config: options.load(values.config), intervalMs };
  } catch (error) {
    if (error instanceof options.error) throw new UsageError(`${values.config}: ${error.message}`);
    throw error;
  }
}

/** Resolves on the first SIGINT or SIGTERM: a scheduled command finishes its cycle, then stops. */
export function stopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
}
