/**
 * Delay before retrying work that failed `failures` times in a row (a sync source, an alerts cycle):
 * 5 s, doubling, at most 10 minutes; callers cap it further at their own interval.
 */
export function retryDelayMs(failures: number): number {
  return Math.min(5_000 * 2 ** Math.max(0, failures - 1), 600_000);
}

/** Waits `ms`, or less when `stopped` resolves first (a signal); the timer never outlives it. */
export async function sleepUnlessStopped(ms: number, stopped: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, ms))), stopped]);
  clearTimeout(timer);
}
