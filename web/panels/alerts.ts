import { api } from '../lib/api';
import { byId } from '../lib/dom';
import { formatDate } from '../lib/format';
import { poolName, teamName } from '../lib/state';
import { capacityRowId } from './capacity';

/** An alert of GET /v1/alerts: its labels (severity among them) and what a person reads. */
interface FiringAlert {
  alertname: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  starts_at: string;
}

/** Most urgent first; a severity the page does not know comes last. */
const SEVERITIES = ['critical', 'warning', 'info'];
/** Lines shown before "Show more": the strip stays a strip above the panels, not a page of its own. */
const COLLAPSED = 5;

let firing: FiringAlert[] = [];
let expanded = false;

/** What `gpucap alerts` found firing in the token's scope; drawn by showAlerts once names are known. */
export async function loadAlerts(): Promise<void> {
  firing = (await api<{ alerts: FiringAlert[] }>('/v1/alerts')).data.alerts;
  expanded = false;
}

function rank(severity: string): number {
  const index = SEVERITIES.indexOf(severity);
  return index === -1 ? SEVERITIES.length : index;
}

const severityOf = (alert: FiringAlert) => alert.labels.severity ?? 'warning';

/**
 * One full-width strip above the panels, hidden when nothing fires: a line each, grouped by severity,
 * the first five shown. Teams and pools read by their names (capacity's) and link to their row.
 */
export function showAlerts(): void {
  const strip = byId('alerts');
  strip.hidden = firing.length === 0;
  const sorted = [...firing].sort(
    (a, b) =>
      rank(severityOf(a)) - rank(severityOf(b)) ||
      Date.parse(b.starts_at) - Date.parse(a.starts_at) ||
      a.alertname.localeCompare(b.alertname),
  );
  const groups = new Map<string, FiringAlert[]>();
  for (const alert of sorted)
    groups.set(severityOf(alert), [...(groups.get(severityOf(alert)) ?? []), alert]);
  let shown = 0;
  byId('alerts-list').replaceChildren(
    ...[...groups].map(([severity, alerts]) => {
      const group = document.createElement('div');
      group.className = `alert-group alert-${severity}`;
      group.dataset.severity = severity;
      const heading = Object.assign(document.createElement('h3'), {
        className: 'badge',
        textContent: `${severity} · ${alerts.length}`,
      });
      const list = document.createElement('ul');
      list.append(
        ...alerts.map((alert) => {
          const item = alertLine(alert);
          item.hidden = !expanded && shown >= COLLAPSED;
          shown += 1;
          return item;
        }),
      );
      group.hidden = [...list.children].every((item) => (item as HTMLElement).hidden);
      group.append(heading, list);
      return group;
    }),
  );
  byId('alerts-count').textContent = `${firing.length} firing`;
  const more = byId<HTMLButtonElement>('alerts-more');
  more.hidden = firing.length <= COLLAPSED;
  more.textContent = expanded ? 'Show fewer' : `Show ${firing.length - COLLAPSED} more`;
  more.setAttribute('aria-expanded', String(expanded));
}

export function toggleAlerts(): void {
  expanded = !expanded;
  showAlerts();
}

function alertLine(alert: FiringAlert): HTMLLIElement {
  const item = document.createElement('li');
  item.className = 'alert';
  item.dataset.alertname = alert.alertname;
  item.dataset.severity = severityOf(alert);
  const summary = document.createElement('span');
  summary.className = 'summary';
  summary.append(...named(alert.annotations.summary ?? alert.alertname, alert.labels));
  const since = Object.assign(document.createElement('span'), {
    className: 'since',
    textContent: ` · since ${formatDate(alert.starts_at)}`,
  });
  item.append(summary, since);
  if (alert.annotations.description) item.title = alert.annotations.description;
  return item;
}

/**
 * The summary with each quoted id of its labels ('nlp', 'h100-reserved') as its name, a team or pool
 * linking to its row of the capacity table.
 */
function named(summary: string, labels: Record<string, string>): (string | Node)[] {
  const subjects = new Map<string, () => Node>();
  const team = labels.initiative_id;
  const pool = labels.pool_id;
  if (team) subjects.set(`'${team}'`, () => capacityLink(teamName(team), capacityRowId('team', team)));
  if (pool) subjects.set(`'${pool}'`, () => capacityLink(poolName(pool), capacityRowId('pool', pool)));
  for (const key of ['workload_id', 'source', 'cluster_id']) {
    const value = labels[key];
    if (value) subjects.set(`'${value}'`, () => document.createTextNode(value));
  }
  if (subjects.size === 0) return [summary];
  const pattern = new RegExp(
    [...subjects.keys()].map((quoted) => quoted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
    'g',
  );
  const parts: (string | Node)[] = [];
  let from = 0;
  for (const match of summary.matchAll(pattern)) {
    parts.push(summary.slice(from, match.index), subjects.get(match[0])!());
    from = match.index + match[0].length;
  }
  parts.push(summary.slice(from));
  return parts.filter((part) => part !== '');
}

function capacityLink(name: string, rowId: string): HTMLAnchorElement {
  const link = Object.assign(document.createElement('a'), { href: `#${rowId}`, textContent: name });
  link.className = 'subject';
  link.addEventListener('click', (event) => {
    event.preventDefault();
    // Outside the view (a MEMBER's, or a cluster without that pool), the panel stands in for the row.
    const target = document.getElementById(rowId) ?? byId('capacity');
    target.scrollIntoView({ block: 'center' });
    target.classList.remove('flash');
    // Reading the layout between the two restarts the animation when the same row flashes again.
    void target.offsetWidth;
    target.classList.add('flash');
  });
  return link;
}
