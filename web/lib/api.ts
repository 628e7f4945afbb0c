import { showMessage } from './dom';
import { noteFreshness } from './freshness';
import { credentials, selectedCluster, state } from './state';

/*
 * The dashboard only calls the public API with the caller's own token, so every panel shows exactly
 * what that token may see.
 */

export interface Envelope<T> {
  data: T;
  metadata?: {
    total_count?: number;
    next_token?: string | null;
    currency?: string | null;
    /** The instant the answer describes: running workloads' figures are as of then. */
    as_of?: string;
    /** Every write before this instant is in the data the answer was computed from. */
    data_as_of?: string;
  };
}

export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** An answer that arrived after the view changed (another cluster, another organization): dropped. */
export class Superseded extends Error {}

/** Adds the chosen cluster to a request about sets of workloads (lists, statistics, rankings, capacity). */
export function inCluster(path: string): string {
  const cluster = selectedCluster();
  return cluster ? `${path}${path.includes('?') ? '&' : '?'}cluster_id=${encodeURIComponent(cluster)}` : path;
}

export async function api<T>(path: string): Promise<Envelope<T>> {
  const asked = state.view;
  const { token, organization } = credentials();
  const response = await fetch(path, {
    // Revalidate every time (If-None-Match): an unchanged answer costs a 304, and a write shows at
    // once instead of after the answer's max-age.
    cache: 'no-cache',
    headers: {
      Authorization: `Bearer ${token}`,
      'X-Organization-Id': organization,
      Accept: 'application/json',
    },
  });
  const body = (await response.json().catch(() => null)) as
    (Envelope<T> & { error?: { message: string } }) | null;
  if (asked !== state.view) throw new Superseded();
  if (!response.ok || !body)
    throw new ApiFailure(body?.error?.message ?? `The API answered ${response.status}`, response.status);
  noteFreshness(body.metadata?.data_as_of);
  return body;
}

/** Runs `work`; an API failure shows its message. Answers for a view since left change nothing. */
export async function guarded(work: () => Promise<void>): Promise<'done' | 'failed' | 'superseded'> {
  try {
    await work();
    return 'done';
  } catch (error) {
    if (error instanceof Superseded) return 'superseded';
    // A fault of the page itself, not of the API: the console keeps what happened.
    if (!(error instanceof ApiFailure)) console.error(error);
    showMessage(error instanceof ApiFailure ? error.message : 'The dashboard could not reach the API.');
    return 'failed';
  }
}
