import { DEMO_ORGANIZATION_ID, demoNow, writeDemoData } from '../../demo/demo-data';
import { progressWriter } from '../../import/progress-line';
import { Command, UsageError } from '../cli-context';
import { helpText, parseFor } from '../command-line';
import { withDatabase } from '../with-database';

export const demoDataCommand: Command = async (args, context) => {
  const { values: parsed, spec } = parseFor('demo-data', args);
  const values = parsed as Record<string, string | undefined>;
  if (parsed.help) {
    context.stdout.write(`${helpText(spec)}\n`);
    return 0;
  }
  const workloads = count(values.workloads, '--workloads', 20_000, 1);
  const seed = count(values.seed, '--seed', 42, 0);
  const samples = values.samples === undefined ? undefined : count(values.samples, '--samples', 0, 0);
  const now = values.now === undefined ? undefined : new Date(values.now);
  if (now && Number.isNaN(now.getTime()))
    throw new UsageError(`--now must be an ISO 8601 timestamp (got '${values.now}')`);

  return withDatabase(context, async (dataSource) => {
    const progress = progressWriter(context.stderr);
    const started = Date.now();
    const summary = await writeDemoData(dataSource, {
      trace: context.config.GPUCAP_IMPORT_TRACE,
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
    throw new UsageError(
      `${flag} must be a whole number${min > 0 ? ` of at least ${min}` : ''} (got '${text}')`,
    );
  }
  return Number(text);
}
