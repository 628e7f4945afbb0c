import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { guarded } from './lib/api';
import { byId, showMessage } from './lib/dom';
import { resetFreshness } from './lib/freshness';
import {
  CLUSTER_KEY,
  credentials,
  ORGANIZATION_KEY,
  RECENT_KEY,
  selectedCluster,
  state,
  TOKEN_KEY,
} from './lib/state';
import { loadAlerts, showAlerts, toggleAlerts } from './panels/alerts';
import { loadCapacity } from './panels/capacity';
import { clearSeries, loadIdle } from './panels/idle';
import { drawQueueWait, loadQueueWait } from './panels/queue';
import { loadRecommendations } from './panels/recommendations';
import { loadClusters } from './panels/scope';
import { loadStats } from './panels/stats';
import { loadWorkloads } from './panels/workloads';

/*
 * The page's wiring: the connect form, the view every panel loads for, and each panel's controls.
 * Each panel lives in panels/, named after its element's id in index.html; lib/ holds what they share.
 */

async function loadPanels(): Promise<void> {
  // Capacity first: it sets the time zone and the team and pool names the other panels (and the
  // alerts) show.
  await loadCapacity();
  showAlerts();
  await Promise.all([loadIdle(), loadRecommendations(), loadStats(), loadWorkloads(), loadQueueWait()]);
}

/** Loads every panel for a new view: `discover` also asks again which clusters there are. */
async function show(discover = true): Promise<void> {
  state.view += 1;
  showMessage(null);
  resetFreshness();
  clearSeries();
  const panels = byId('panels');
  panels.hidden = false;
  document.body.dataset.state = 'loading';
  const outcome = await guarded(async () => {
    // Alerts concern every cluster: choosing one changes no alert, so only a new view asks again.
    if (discover) await Promise.all([loadClusters(), loadAlerts()]);
    await loadPanels();
  });
  if (outcome === 'superseded') return;
  panels.hidden = outcome === 'failed';
  document.body.dataset.state = outcome === 'done' ? 'loaded' : 'error';
  document.body.dataset.cluster = selectedCluster();
}

function rememberOrganization(organization: string): void {
  const recent = JSON.parse(sessionStorage.getItem(RECENT_KEY) ?? '[]') as string[];
  const updated = [organization, ...recent.filter((id) => id !== organization)].slice(0, 8);
  sessionStorage.setItem(RECENT_KEY, JSON.stringify(updated));
  byId('organizations').replaceChildren(
    ...updated.map((id) => Object.assign(document.createElement('option'), { value: id })),
  );
}

function start(): void {
  const form = byId<HTMLFormElement>('connect');
  const tokenInput = byId<HTMLInputElement>('token');
  const organizationInput = byId<HTMLInputElement>('organization');
  const stored = credentials();
  tokenInput.value = stored.token;
  organizationInput.value = stored.organization || 'org-demo';
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    sessionStorage.setItem(ORGANIZATION_KEY, organizationInput.value.trim());
    rememberOrganization(organizationInput.value.trim());
    void show();
  });
  byId('forget').addEventListener('click', () => {
    state.view += 1;
    sessionStorage.removeItem(TOKEN_KEY);
    tokenInput.value = '';
    byId('panels').hidden = true;
  });
  byId('stats-range').addEventListener('change', () => void guarded(loadStats));
  byId('queue-range').addEventListener('change', () => void guarded(loadQueueWait));
  byId('queue-percentile').addEventListener('change', drawQueueWait);
  byId('alerts-more').addEventListener('click', toggleAlerts);
  byId('workloads-status').addEventListener('change', () => void guarded(() => loadWorkloads()));
  byId('workloads-more').addEventListener('click', () => void guarded(() => loadWorkloads(true)));
  byId<HTMLSelectElement>('cluster').addEventListener('change', (event) => {
    sessionStorage.setItem(CLUSTER_KEY, (event.target as HTMLSelectElement).value);
    void show(false);
  });
  if (stored.token && stored.organization) void show();
}

start();
