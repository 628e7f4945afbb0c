import { gpuCount, jobShares, mapSacctJob, SacctJob } from '../../../src/ingest/slurm/sacct-mapping';
import { sacctArguments } from '../../../src/ingest/slurm/slurm-source';
import { parseSyncConfig } from '../../../src/ingest/sync-config';
import { fixture } from '../../e2e/sync/sync-fixtures';

const config = parseSyncConfig(
  {
    organization_id: 'org',
    slurm: {
      initiative_by_account: { phys: 'physics' },
      instance_type_by_partition: { a100: 'p4d.24xlarge' },
    },
  },
  '/',
).slurm!;
const wrapped = (number: number) => ({ set: true, infinite: false, number });

function job(overrides: Partial<SacctJob> = {}): SacctJob {
  return {
    job_id: 42,
    name: 'qcd',
    user: 'carol',
    account: 'phys',
    partition: 'a100',
    cluster: 'hpc1',
    state: { current: ['COMPLETED'] },
    time: { submission: 1_763_900_000, start: 1_763_900_060, end: 1_763_903_660 },
    tres: { allocated: [{ type: 'gres', name: 'gpu', id: 1001, count: 4 }] },
    exit_code: { status: ['SUCCESS'], return_code: wrapped(0) },
    ...overrides,
  };
}

describe('sacct job → workload', () => {
  it('maps a data_parser v0.0.40 job', () => {
    expect(mapSacctJob(job(), config, 'org')).toEqual({
      jobId: '42',
      initiativeId: 'physics',
      workload: {
        organization_id: 'org',
        workload_id: 'slurm:hpc1:42',
        initiative_id: 'physics',
        name: 'qcd',
        status: 'completed',
        submitted_by: 'carol',
        instance_type: 'p4d.24xlarge',
        gpu_count: 4,
        is_managed: true,
        cluster_id: 'hpc1',
        namespace: 'phys',
        submitted_at: '2025-11-23T12:13:20.000Z',
        started_at: '2025-11-23T12:14:20.000Z',
        completed_at: '2025-11-23T13:14:20.000Z',
        exit_code: 0,
      },
    });
  });

  it('accepts the older shape (state a string, plain numbers) and wrapped numbers', () => {
    const older = job({ state: { current: 'FAILED' }, exit_code: { status: 'ERROR', return_code: 3 } });
    expect(mapSacctJob(older, config, 'org')).toMatchObject({ workload: { status: 'failed', exit_code: 3 } });
    const newer = job({
      time: { submission: wrapped(1_763_900_000), start: wrapped(1_763_900_060), end: wrapped(0) },
      state: { current: ['RUNNING'] },
    });
    expect(mapSacctJob(newer, config, 'org')).toMatchObject({
      workload: { status: 'running', completed_at: null, exit_code: null },
    });
  });

  it.each([
    ['PENDING', 'pending'],
    ['TIMEOUT', 'failed'],
    ['NODE_FAIL', 'failed'],
    ['OUT_OF_MEMORY', 'failed'],
    ['CANCELLED', 'cancelled'],
    ['PREEMPTED', 'failed'],
  ])('maps state %s to %s', (state, status) => {
    expect(mapSacctJob(job({ state: { current: [state] } }), config, 'org')).toMatchObject({
      workload: { status },
    });
  });

  it('skips jobs without GPUs and counts typed GPUs when no plain gpu entry exists', () => {
    expect(
      mapSacctJob(job({ tres: { allocated: [{ type: 'cpu', name: '', count: 8 }] } }), config, 'org'),
    ).toEqual({
      skip: 'no gres/gpu',
    });
    expect(gpuCount(job({ tres: { allocated: [{ type: 'gres', name: 'gpu:a100', count: 2 }] } }))).toBe(2);
    expect(
      gpuCount(job({ tres: { allocated: [], requested: [{ type: 'gres', name: 'gpu', count: 8 }] } })),
    ).toBe(8);
  });

  it('uses the account as the initiative and the partition as the instance type when they are not mapped', () => {
    expect(mapSacctJob(job({ account: 'chem', partition: 'h100' }), config, 'org')).toMatchObject({
      workload: { initiative_id: 'chem', instance_type: 'h100' },
    });
  });
});

describe('the sacct command', () => {
  const now = new Date(2026, 10, 24, 12, 0, 0);

  it('asks sacct for the jobs since an hour before the last read (a day on the first read)', () => {
    expect(sacctArguments(['sacct', '--json', '--allusers'], new Date(2026, 10, 24, 11, 30, 5), now)).toEqual(
      ['sacct', '--json', '--allusers', '--starttime=2026-11-24T10:30:05'],
    );
    expect(sacctArguments(['/usr/bin/sacct', '--json'], undefined, now)).toEqual([
      '/usr/bin/sacct',
      '--json',
      '--starttime=2026-11-23T12:00:00',
    ]);
  });

  it('leaves a command alone that is not sacct or already says where to start', () => {
    expect(sacctArguments(['cat', 'sacct.json'], undefined, now)).toEqual(['cat', 'sacct.json']);
    expect(sacctArguments(['sacct', '--json', '-S', 'now-7days'], undefined, now)).toEqual([
      'sacct',
      '--json',
      '-S',
      'now-7days',
    ]);
  });
});

describe('typed GPU gres → shares', () => {
  const typedConfig = parseSyncConfig(
    { organization_id: 'org', slurm: { gpu_share_by_type: { 'a100l.2': 2 / 7 } } },
    '/',
  ).slurm!;
  // sacct --json (data_parser v0.0.40) of five jobs on a cluster with MIG and site-named gres types.
  const jobs = fixture<{ jobs: SacctJob[] }>('sacct-typed-gres.json', 1_764_000_000).jobs;
  const shares = (jobId: number) => {
    const mapped = mapSacctJob(
      jobs.find((one) => one.job_id === jobId)!,
      typedConfig,
      'org',
    );
    if (!('workload' in mapped)) return mapped;
    const { gpu_count, gpu_sharing, gpu_share } = mapped.workload;
    return { gpu_count, gpu_sharing, gpu_share };
  };

  it('a type that is a built-in MIG profile: MIG, the importer derives the share', () => {
    expect(shares(2001)).toEqual({
      gpu_count: 2,
      gpu_sharing: { mode: 'mig', profile: '1g.10gb' },
      gpu_share: undefined,
    });
    // NVML autodetection names the type after the model: the profile is its end.
    expect(shares(2004)).toEqual({
      gpu_count: 1,
      gpu_sharing: { mode: 'mig', profile: '3g.40gb' },
      gpu_share: undefined,
    });
  });

  it('a type of gpu_share_by_type: its share per device, given explicitly', () => {
    expect(shares(2002)).toEqual({
      gpu_count: 3,
      gpu_sharing: { mode: 'mig', profile: 'a100l.2' },
      gpu_share: 6 / 7,
    });
  });

  it('other types stay whole GPUs; several types in one job sum their shares', () => {
    expect(shares(2003)).toEqual({ gpu_count: 4, gpu_sharing: undefined, gpu_share: undefined });
    expect(shares(2005)).toEqual({
      gpu_count: 2,
      gpu_sharing: { mode: 'mig', profile: '1g.10gb' },
      gpu_share: 1 + 1 / 7,
    });
  });

  it('a configured whole-GPU type, and typed devices that cover only part of the plain total', () => {
    const whole = { ...typedConfig, gpuShareByType: { h100: 1 } };
    const typed = (entries: { name: string; count: number }[]) =>
      jobShares(job({ tres: { allocated: entries.map((entry) => ({ type: 'gres', ...entry })) } }), whole);
    expect(typed([{ name: 'gpu:h100', count: 2 }])).toEqual({ gpu_count: 2 });
    expect(
      typed([
        { name: 'gpu', count: 3 },
        { name: 'gpu:1g.10gb', count: 1 },
      ]),
    ).toEqual({ gpu_count: 3, gpu_sharing: { mode: 'mig', profile: '1g.10gb' }, gpu_share: 2 + 1 / 7 });
  });
});
