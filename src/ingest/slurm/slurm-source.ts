import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { SlurmConfig } from '../sync-config';
import type { InitiativeResolver } from '../initiatives';
import { ReasonCounter } from '../sync-report';
import type { SyncRecord, WorkloadListing } from '../sync-records';
import { SourceUnavailableError } from '../source-failure';
import { mapSacctJob, SacctJob } from './sacct-mapping';

const MAX_OUTPUT_BYTES = 1024 * 1024 * 1024;

/** Jobs that ended this long before the last successful read are asked for again (late accounting records). */
const STARTTIME_OVERLAP_MS = 3_600_000;
/** The first read asks for the jobs of the last day (sacct's own default is since midnight). */
const FIRST_READ_MS = 86_400_000;

/** `2026-11-24T01:05:00` in this machine's zone, the form sacct reads (its zone is ours: it is our child). */
function sacctTime(date: Date): string {
  const two = (value: number) => String(value).padStart(2, '0');
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}` +
    `T${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`
  );
}

/**
 * The command to run. `sacct` without a `-S`/`--starttime` of the config's own gets one: an hour
 * before the last successful read (a day before now on the first), so jobs that ended while the
 * sync was down are still listed, without re-reading all history every run. Jobs still pending or
 * running are listed whatever their start.
 */
export function sacctArguments(command: string[], lastRead: Date | undefined, now: Date): string[] {
  const [program, ...args] = command;
  const isSacct = /(^|\/)sacct$/.test(program);
  const hasStart = args.some((arg) => arg === '-S' || arg.startsWith('--starttime') || /^-S./.test(arg));
  if (!isSacct || hasStart) return command;
  const since = lastRead ? lastRead.getTime() - STARTTIME_OVERLAP_MS : now.getTime() - FIRST_READ_MS;
  return [program, ...args, `--starttime=${sacctTime(new Date(since))}`];
}

/** Runs the command without a shell (arguments as given) and returns its standard output. */
function runSacct(config: SlurmConfig, command: string[]): Promise<string> {
  const [program, ...args] = command;
  return new Promise((resolve, reject) => {
    execFile(
      program,
      args,
      { timeout: config.timeoutSeconds * 1000, maxBuffer: MAX_OUTPUT_BYTES, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const code = (error as { code?: unknown }).code;
        const why =
          code === 'ENOENT'
            ? `'${program}' was not found`
            : error.killed
              ? `'${program}' did not finish within ${config.timeoutSeconds} s`
              : `'${program}' exited with ${String(code)}${stderr.trim() ? `: ${stderr.trim().split('\n')[0]}` : ''}`;
        reject(new SourceUnavailableError(why));
      },
    );
  });
}

async function readDocument(config: SlurmConfig, command: string[]): Promise<string> {
  if (!config.sacctJsonFile) return runSacct(config, command);
  try {
    return await readFile(config.sacctJsonFile, 'utf8');
  } catch {
    throw new SourceUnavailableError(`cannot read sacct_json_file '${config.sacctJsonFile}'`);
  }
}

/** `jobs` of a `sacct --json` document; Slurm's own `errors` make the source fail. */
export function parseSacctDocument(text: string): SacctJob[] {
  let document: { jobs?: unknown; errors?: unknown };
  try {
    document = JSON.parse(text) as typeof document;
  } catch {
    throw new SourceUnavailableError('the sacct output is not JSON (is it sacct --json?)');
  }
  const errors = Array.isArray(document.errors) ? document.errors : [];
  if (errors.length > 0) {
    const first = errors[0] as { description?: unknown; error?: unknown };
    const why = [first.description, first.error].find((text) => typeof text === 'string' && text !== '');
    throw new SourceUnavailableError(`sacct reported an error: ${(why as string | undefined) ?? 'unknown'}`);
  }
  if (!Array.isArray(document.jobs)) throw new SourceUnavailableError('the sacct output has no jobs array');
  return document.jobs as SacctJob[];
}

/** What the runner knows from the database when the source runs. */
export interface SlurmInput {
  organizationId: string;
  initiatives: InitiativeResolver;
  /** The source's watermark: when its last successful read began (none before the first). */
  lastRead: Date | undefined;
}

/** Reads `sacct --json` (command or file) and maps the GPU jobs to workload records. */
export async function listSlurm(
  config: SlurmConfig,
  { organizationId, initiatives, lastRead }: SlurmInput,
): Promise<WorkloadListing> {
  const readAt = new Date();
  const jobs = parseSacctDocument(
    await readDocument(config, sacctArguments(config.sacctCommand, lastRead, readAt)),
  );
  const skipped = new ReasonCounter();
  const refused = new ReasonCounter();
  // A requeued job appears once per run; the last record is its current state.
  const byId = new Map<string, SyncRecord>();
  for (const job of jobs) {
    const mapped = mapSacctJob(job, config, organizationId);
    if ('skip' in mapped) {
      skipped.add(mapped.skip);
      continue;
    }
    const refusal = initiatives.admit(mapped.initiativeId);
    if (refusal) refused.add(refusal);
    else byId.set(mapped.workload.workload_id as string, { section: 'workloads', value: mapped.workload });
  }
  if (byId.size < jobs.length - skipped.total - refused.total) {
    skipped.add(
      'repeated job record (requeued; last one kept)',
      jobs.length - skipped.total - refused.total - byId.size,
    );
  }
  return {
    records: [...initiatives.records(), ...byId.values()],
    createdInitiatives: initiatives.created(),
    readUntil: readAt,
    read: jobs.length,
    skipped: skipped.counts,
    refused: refused.counts,
  };
}
