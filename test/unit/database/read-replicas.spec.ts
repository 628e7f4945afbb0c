import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../../../src/core/config/app-config';
import { parseLsn, ReadReplicas } from '../../../src/database/read-replicas';

/** The primary's WAL position and clock, and the replica's replay position, as the probes read them. */
function probed() {
  const dataSource = { options: { url: 'postgres://gpucap@127.0.0.1:1/gpucap', extra: {} } } as DataSource;
  const config = {
    DATABASE_READ_URLS: 'postgres://gpucap@127.0.0.1:1/replica',
    READ_REPLICA_MAX_LAG_SECONDS: 10,
  };
  const replicas = new ReadReplicas(dataSource, config as AppConfig);
  const primary = { lsn: '0/1000', at: 1_000_000 };
  const replica: { lsn: string | null; down: boolean } = { lsn: '0/1000', down: false };
  const internals = replicas as unknown as {
    primaryProbe: { query: () => Promise<unknown> };
    sampleAndMeasure: () => Promise<void>;
  };
  internals.primaryProbe.query = () => Promise.resolve({ rows: [{ ...primary }] });
  replicas.replicas[0].probePool.query = (() =>
    replica.down
      ? Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))
      : Promise.resolve({ rows: [{ lsn: replica.lsn }] })) as never;
  const tick = async (seconds = 1) => {
    primary.at += seconds * 1000;
    await internals.sampleAndMeasure();
  };
  return { replicas, primary, replica, tick, close: () => replicas.onModuleDestroy() };
}

describe('ReadReplicas', () => {
  let logs: jest.SpyInstance;
  let warnings: jest.SpyInstance;

  beforeEach(() => {
    logs = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('reads a WAL position as one number', () => {
    expect(parseLsn('0/1000')).toBe(0x1000n);
    expect(parseLsn('1/0')).toBe(1n << 32n);
    expect(parseLsn('A/FF') > parseLsn('9/FFFFFFFF')).toBe(true);
  });

  it('measures lag as how long ago the primary was at the replayed position: 0 for a caught-up replica of an idle primary', async () => {
    const { replicas, primary, replica, tick, close } = probed();
    for (let second = 0; second < 30; second++) await tick();
    // Nothing written for 30 s: the replica is where the primary is, whatever the last commit's age.
    expect(replicas.report()).toEqual([{ replica: 1, lag_seconds: 0, in_use: true }]);

    // A write the replica has not replayed: its lag grows with the primary's clock from the last sample
    // at or before its position, and past the bound it leaves the pool.
    const before = primary.at;
    primary.lsn = '0/2000';
    await tick();
    replica.lsn = '0/1800';
    for (let second = 0; second < 5; second++) await tick();
    expect(replicas.report()[0].lag_seconds).toBe(6);
    expect(replicas.includedBefore('0/1800')).toBe(before);
    expect(replicas.includedBefore('0/0800')).toBeUndefined();
    for (let second = 0; second < 5; second++) await tick();
    expect(replicas.report()).toEqual([{ replica: 1, lag_seconds: 11, in_use: false }]);
    expect(replicas.pick()).toBeUndefined();

    replica.lsn = '0/2000';
    await tick();
    expect(replicas.report()).toEqual([{ replica: 1, lag_seconds: 0, in_use: true }]);
    expect(replicas.pick()?.server).toBe('replica-1');
    await close();
  });

  it('logs a replica leaving or rejoining the pool once, not at every probe', async () => {
    const { replica, tick, close } = probed();
    for (let second = 0; second < 3; second++) await tick();
    replica.down = true;
    for (let second = 0; second < 3; second++) await tick();
    replica.down = false;
    for (let second = 0; second < 3; second++) await tick();
    expect(logs.mock.calls.map(([line]) => line)).toEqual([
      'replica-1 joined the read pool (lag 0.0 s)',
      'replica-1 joined the read pool (lag 0.0 s)',
    ]);
    expect(warnings.mock.calls.map(([line]) => line)).toEqual([
      'replica-1 left the read pool (unreachable); reading the primary instead',
    ]);
    await close();
  });

  it('keeps a caught-up replica in the pool while the primary is away: nothing is written meanwhile', async () => {
    const { replicas, tick, close } = probed();
    const internals = replicas as unknown as { primaryProbe: { query: () => Promise<unknown> } };
    await tick();
    internals.primaryProbe.query = () => Promise.reject(new Error('refused'));
    for (let second = 0; second < 20; second++) await tick();
    expect(replicas.report()).toEqual([{ replica: 1, lag_seconds: 0, in_use: true }]);
    await close();
  });
});
