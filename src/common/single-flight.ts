/**
 * One piece of work in flight per key: a caller that asks while it runs gets the same promise, and
 * the key is free again once it settles (either way), so the next caller starts afresh.
 */
export class SingleFlight<K, V> {
  private readonly running = new Map<K, Promise<V>>();

  /** The work in flight for `key`, if any. */
  get(key: K): Promise<V> | undefined {
    return this.running.get(key);
  }

  run(key: K, work: () => Promise<V>): Promise<V> {
    const running = this.running.get(key);
    if (running) return running;
    const flight = work().finally(() => this.running.delete(key));
    this.running.set(key, flight);
    return flight;
  }
}
