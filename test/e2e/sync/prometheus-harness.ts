import { ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/serve-process';
import { startUntilReady, stopProcess } from '../../support/ready-process';

const run = promisify(execFile);
const PROMETHEUS = process.env.PROMETHEUS_BIN ?? 'prometheus';
const PROMTOOL = process.env.PROMTOOL_BIN ?? 'promtool';

async function found(binary: string): Promise<boolean> {
  try {
    await run(binary, ['--version']);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the tests that need a real Prometheus can run. Under CI=true a missing binary is a failure
 * (`.ci/run` installs Debian's `prometheus`); elsewhere the tests are skipped with a notice naming them.
 */
export async function prometheusAvailableForTests(what: string): Promise<boolean> {
  if ((await found(PROMETHEUS)) && (await found(PROMTOOL))) return true;
  if (process.env.CI === 'true') {
    throw new Error(`prometheus/promtool not found, and CI=true requires them for: ${what}`);
  }
  console.warn(`SKIPPED (prometheus or promtool not installed, e.g. apt-get install prometheus): ${what}`);
  return false;
}

/** One series in OpenMetrics text: name, labels and `[unix seconds, value]` points. */
export interface SeriesData {
  name: string;
  labels: Record<string, string>;
  points: [number, number][];
}

/** OpenMetrics text as promtool reads it: one family per metric name, samples in time order, `# EOF`. */
export function openMetrics(series: SeriesData[]): string {
  const byName = new Map<string, SeriesData[]>();
  for (const one of series) byName.set(one.name, [...(byName.get(one.name) ?? []), one]);
  const lines: string[] = [];
  for (const [name, family] of byName) {
    lines.push(`# TYPE ${name} gauge`);
    for (const one of family) {
      const labels = Object.entries(one.labels)
        .map(([key, value]) => `${key}="${value}"`)
        .join(',');
      for (const [time, value] of one.points) lines.push(`${name}{${labels}} ${value} ${time}`);
    }
  }
  lines.push('# EOF', '');
  return lines.join('\n');
}

/**
 * A real Prometheus over a TSDB backfilled by `promtool tsdb create-blocks-from openmetrics`, started
 * on a free loopback port. `backfill` adds blocks; Prometheus is restarted so it serves them.
 */
export class PrometheusHarness {
  private readonly directory = mkdtempSync(join(tmpdir(), 'gpucap-prometheus-'));
  private child: ChildProcess | null = null;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async backfill(series: SeriesData[], name: string): Promise<void> {
    const file = join(this.directory, `${name}.om`);
    writeFileSync(file, openMetrics(series));
    await run(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', file, join(this.directory, 'data')]);
  }

  async start(): Promise<void> {
    await this.stop();
    const config = join(this.directory, 'prometheus.yml');
    writeFileSync(config, 'global:\n  scrape_interval: 1m\n');
    this.port = await freePort();
    this.child = await startUntilReady(
      'prometheus',
      PROMETHEUS,
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(this.directory, 'data')}`,
        // Backfilled blocks are hours old: keep them well inside the retention.
        '--storage.tsdb.retention.time=30d',
        `--web.listen-address=127.0.0.1:${this.port}`,
      ],
      this.url,
    );
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
