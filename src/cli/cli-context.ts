import 'reflect-metadata';
import { AppConfig, loadConfig } from '../core/config/app-config';

/** What every command receives: validated configuration and the streams to write to. */
export interface CliContext {
  config: AppConfig;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
}

export type Command = (args: string[], context: CliContext) => Promise<number>;

export { UsageError } from './usage-error';

export function createCliContext(): CliContext {
  return { config: loadConfig(), stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };
}
