import { parseArgs } from 'node:util';
import { DEMO_ORGANIZATION_ID, demoNow, writeDemoData } from '../../demo/demo-data';
import { progressWriter } from '../../import/progress-line';
import { Command, UsageError } from '../cli-context';
import { withDatabase } from '../with-database';

const USAGE = `Usage: gpucap demo-data [--workloads N] [--seed S] [--samples N] [--now ISO-TIMESTAMP]
  --workloads N   workloads over the last 6 months (default 20000; 1000000 for benchmarks)
  --seed S        random seed (default 42); the same seed, counts and hour give the same rows
  --samples N     total metric samples over the most recent workloads (default: the last 90 minutes
                  of every workload that ran in the last 7 days)
  --now TIME      the dataset's "now" (default: the current time rounded down to the hour)`;

export const demoDataCommand: Command = async (args, context) => {
  const { values } = parseArgs({
    args,
    options: {
      workloads: { type: 'string' },
      seed: { type: 'string' },
      samples: { type: 'string' },
      now: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) throw new UsageError(USAGE);
  const workloads = count(values.workloads, '--workloads', 20_000, 1);
  const seed = count(values.seed, '--seed', 42, 0);
  const samples = values.samples === undefined ? undefined : count(values.samples, '--samples', 0, 0);
  const now = values.now === undefined ? undefined : new Date(values.now);
  if (now && Number.isNaN(now.getTime()))
    throw new UsageError(`--now must be an ISO 8601 timestamp\n${USAGE}`);

  return withDatabase(context, async (dataSource) => {
    const progress = progressWriter(context.stderr);
    const started = Date.now();
    const summary = await writeDemoData(dataSource, {
      workloads,
      seed,
      samples,
      now,
      onProgress: (message) => progress.update(message),
    });
    progress.done();
    const seconds = (Date.now() - started) / 1000;
    const rows = summary.workloads + summary.samples;
    context.stderr.write(
      `Demo organization '${DEMO_ORGANIZATION_ID}' (now = ${demoNow(now).toISOString()}, seed ${seed}): ` +
        `${summary.workloads.toLocaleString('en-US')} workloads, ${summary.samples.toLocaleString('en-US')} metric samples ` +
        `in ${seconds.toFixed(1)} s (${Math.round(rows / seconds).toLocaleString('en-US')} rows/s)\n`,
    );
    context.stdout.write(
      `${JSON.stringify({ organization_id: summary.organizationId, initiative_ids: summary.initiativeIds, workloads: summary.workloads, samples: summary.samples, seconds })}\n`,
    );
    return 0;
  });
};

function count(text: string | undefined, flag: string, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  if (!/^\d{1,10}$/.test(text) || Number(text) < min || Number(text) > 4_294_967_295) {
    throw new UsageError(`${flag} must be a whole number${min > 0 ? ` of at least ${min}` : ''}\n${USAGE}`);
  }
  return Number(text);
}
