import { loadConfig } from '../../../src/core/config/app-config';
import { AggregateReadGate } from '../../../src/common/http/aggregate-read/aggregate-read-gate';
import { ApiError } from '../../../src/common/http/api-error';
import { CONNECTION_WAIT_MS } from '../../../src/database/data-source-options';

function gateOf(concurrency: number): AggregateReadGate {
  return new AggregateReadGate(loadConfig({ AGGREGATE_READ_CONCURRENCY: String(concurrency) }));
}

/** Work that finishes when the test says so, recording when it started. */
function controlledWork(started: string[], name: string) {
  let finish!: (value: string) => void;
  const done = new Promise<string>((resolve) => (finish = resolve));
  return {
    work: () => {
      started.push(name);
      return done;
    },
    finish: () => finish(name),
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('AggregateReadGate', () => {
  afterEach(() => jest.useRealTimers());

  it('runs at most its concurrency at once and admits the waiting ones in arrival order', async () => {
    const gate = gateOf(2);
    const started: string[] = [];
    const jobs = ['a', 'b', 'c', 'd'].map((name) => controlledWork(started, name));
    const results = jobs.map((job) => gate.run(job.work));
    await flush();
    expect(started).toEqual(['a', 'b']);
    expect([gate.runningCount, gate.waitingCount]).toEqual([2, 2]);

    jobs[1].finish();
    await flush();
    expect(started).toEqual(['a', 'b', 'c']);
    jobs[0].finish();
    await flush();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect([gate.runningCount, gate.waitingCount]).toEqual([2, 0]);

    jobs[2].finish();
    jobs[3].finish();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c', 'd']);
    expect([gate.runningCount, gate.waitingCount]).toEqual([0, 0]);
  });

  it('gives the turn back when the work fails', async () => {
    const gate = gateOf(1);
    await expect(gate.run(() => Promise.reject(new Error('statement failed')))).rejects.toThrow(
      'statement failed',
    );
    await expect(gate.run(() => Promise.resolve('next'))).resolves.toBe('next');
    expect(gate.runningCount).toBe(0);
  });

  it('answers a request that waited as long as a connection may be waited for with the 503, and forgets it', async () => {
    jest.useFakeTimers();
    const gate = gateOf(1);
    const started: string[] = [];
    const first = controlledWork(started, 'first');
    const running = gate.run(first.work);
    const waited = gate.run(() => Promise.resolve('never'));
    const outcome = waited.catch((error: unknown) => error);

    jest.advanceTimersByTime(CONNECTION_WAIT_MS);
    const error = await outcome;
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
    expect(gate.waitingCount).toBe(0);

    first.finish();
    await expect(running).resolves.toBe('first');
    expect(gate.runningCount).toBe(0);
  });
});
