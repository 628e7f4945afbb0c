import { ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/serve-process';
import { startUntilReady, stopProcess } from '../../support/ready-process';
import { waitFor } from '../../support/wait-for';

const run = promisify(execFile);
const ALERTMANAGER = process.env.ALERTMANAGER_BIN ?? 'prometheus-alertmanager';

/**
 * Whether the tests that need a real Alertmanager can run. Under CI=true a missing binary is a
 * failure (`.ci/run` installs Debian's `prometheus-alertmanager`); elsewhere the tests are skipped
 * with a notice naming them.
 */
export async function alertmanagerAvailableForTests(what: string): Promise<boolean> {
  try {
    await run(ALERTMANAGER, ['--version']);
    return true;
  } catch {
    if (process.env.CI === 'true') {
      throw new Error(`prometheus-alertmanager not found, and CI=true requires it for: ${what}`);
    }
    console.warn(
      `SKIPPED (prometheus-alertmanager not installed, e.g. apt-get install prometheus-alertmanager): ${what}`,
    );
    return false;
  }
}

/** One alert of a webhook notification, as Alertmanager sends it. */
export interface NotifiedAlert {
  status: 'firing' | 'resolved';
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL: string;
}

/** The HTTP server of the test that Alertmanager's webhook receiver posts notifications to. */
export class WebhookReceiver {
  readonly alerts: NotifiedAlert[] = [];
  private server: Server | null = null;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const notification = JSON.parse(body) as { alerts: NotifiedAlert[] };
        this.alerts.push(...notification.alerts);
        response.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Waits for a notified alert with these labels (all of them, others allowed) and this status. */
  async received(labels: Record<string, string>, status: 'firing' | 'resolved'): Promise<NotifiedAlert> {
    let found: NotifiedAlert | undefined;
    await waitFor(async () => {
      found = this.alerts.find(
        (alert) =>
          alert.status === status &&
          Object.entries(labels).every(([key, value]) => alert.labels[key] === value),
      );
      return found !== undefined;
    }, 20_000);
    return found!;
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/**
 * A real Alertmanager on a free loopback port, no gossip, its storage in a temporary directory kept
 * across restarts (as a deployment keeps its data directory), grouping by every label (one
 * notification per alert) and short intervals so a test hears within seconds.
 */
export class AlertmanagerHarness {
  private readonly directory = mkdtempSync(join(tmpdir(), 'gpucap-alertmanager-'));
  private child: ChildProcess | null = null;
  port = 0;

  constructor(private readonly webhookUrl: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await this.stop();
    const config = join(this.directory, 'alertmanager.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  resolve_timeout: 5m',
        'route:',
        '  receiver: test',
        "  group_by: ['...']",
        '  group_wait: 1s',
        '  group_interval: 1s',
        '  repeat_interval: 1h',
        'receivers:',
        '  - name: test',
        '    webhook_configs:',
        `      - url: ${this.webhookUrl}`,
        '        send_resolved: true',
        '',
      ].join('\n'),
    );
    // A restart keeps the port, as a deployment's address stays put.
    if (this.port === 0) this.port = await freePort();
    this.child = await startUntilReady(
      'alertmanager',
      ALERTMANAGER,
      [
        `--config.file=${config}`,
        `--storage.path=${join(this.directory, 'data')}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
        '--cluster.listen-address=',
      ],
      this.url,
    );
  }

  /** The alerts Alertmanager holds now (its own API), active or not. */
  async alerts(): Promise<{ labels: Record<string, string>; status: { state: string } }[]> {
    const response = await fetch(`${this.url}/api/v2/alerts`);
    return (await response.json()) as { labels: Record<string, string>; status: { state: string } }[];
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    await stopProcess(child);
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.directory, { recursive: true, force: true });
  }
}
