import type { Capacity } from '../panels/capacity';

/*
 * The token lives in sessionStorage (gone with the tab), never in a URL; the organization, the recent
 * organizations and the chosen cluster are kept beside it.
 */
export const TOKEN_KEY = 'gpucap.token';
export const ORGANIZATION_KEY = 'gpucap.organization';
export const RECENT_KEY = 'gpucap.recentOrganizations';
export const CLUSTER_KEY = 'gpucap.cluster';

/** What more than one module reads; each field is written by one module only. */
export const state = {
  /** Bumped whenever what the panels show changes, so answers for the view before are not drawn. */
  view: 0,
  /** The organization's time zone (its local days are the burn-down's), from capacity. */
  timeZone: 'UTC',
  /** The latest capacity answer: the per-day chart draws its teams' daily use. */
  capacity: null as Capacity | null,
};

/** The organization's teams' and pools' names, from capacity. */
export const teamNames = new Map<string, string>();
export const poolNames = new Map<string, string>();

export function teamName(id: string): string {
  return teamNames.get(id) ?? id;
}

export function poolName(id: string): string {
  return poolNames.get(id) ?? id;
}

export function credentials() {
  return {
    token: sessionStorage.getItem(TOKEN_KEY) ?? '',
    organization: sessionStorage.getItem(ORGANIZATION_KEY) ?? '',
  };
}

/** The chosen cluster ('' for all), kept for the tab like the token. */
export function selectedCluster(): string {
  return sessionStorage.getItem(CLUSTER_KEY) ?? '';
}
