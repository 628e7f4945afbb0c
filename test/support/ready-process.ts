import { type ChildProcess, spawn } from 'node:child_process';
import { waitFor } from './wait-for';

/**
 * Starts a real server binary of the tests (Prometheus, Alertmanager) and waits until its
 * `/-/ready` answers 200; on a timeout the error carries the end of its output.
 */
export async function startUntilReady(
  name: string,
  binary: string,
  args: string[],
  url: string,
): Promise<ChildProcess> {
  let output = '';
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await waitFor(async () => {
      const response = await fetch(`${url}/-/ready`).catch(() => null);
      return response?.status === 200;
    }, 30_000);
  } catch {
    child.kill('SIGKILL');
    throw new Error(`${name} did not become ready:\n${output.slice(-2000)}`);
  }
  return child;
}

/** SIGTERM, and resolves once the process is gone (at once if it already is). */
export async function stopProcess(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
