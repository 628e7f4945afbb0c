import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool } from 'pg';

/** The server one request reads from: every statement of the request runs there. */
export interface ReadTarget {
  /** `primary`, or `replica-<n>` by its position in DATABASE_READ_URLS (never its host). */
  server: string;
  /** Its connections; undefined for the primary, whose pool is the service's own. */
  pool?: Pool;
  /** The organization's data version on that server, read when the request was routed. */
  version: string;
  /** Every write committed before this instant (the primary's clock) is in what the server shows. */
  dataAsOf: Date;
}

const targets = new AsyncLocalStorage<ReadTarget>();

/**
 * The server the request being served was routed to; undefined outside a routed request (commands,
 * the alerts cycle), which read the primary. Held only where replicas are configured: a store kept
 * per request costs every promise a hook.
 */
export function currentReadTarget(): ReadTarget | undefined {
  return targets.getStore();
}

export function runOnReadTarget<T>(target: ReadTarget, work: () => T): T {
  return targets.run(target, work);
}

/** A request once routed: the envelope and the response cache read its target here. */
export interface RequestWithReadTarget {
  readTarget?: ReadTarget;
}
