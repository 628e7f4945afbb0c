import { api } from '../lib/api';
import { byId } from '../lib/dom';
import { formatDate } from '../lib/format';

/** An alert of GET /v1/alerts: its labels (severity among them) and what a person reads. */
interface FiringAlert {
  alertname: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  starts_at: string;
}

/**
 * What `gpucap alerts` found firing in the token's scope, above the panels; hidden when nothing
 * fires.
 */
export async function loadAlerts(): Promise<void> {
  const { alerts } = (await api<{ alerts: FiringAlert[] }>('/v1/alerts')).data;
  byId('alerts').hidden = alerts.length === 0;
  byId('alerts-list').replaceChildren(
    ...alerts.map((alert) => {
      const item = document.createElement('li');
      const severity = alert.labels.severity ?? 'warning';
      item.className = `alert alert-${severity}`;
      item.dataset.alertname = alert.alertname;
      const badge = Object.assign(document.createElement('span'), {
        className: 'badge',
        textContent: severity,
      });
      const summary = Object.assign(document.createElement('strong'), {
        textContent: alert.annotations.summary ?? alert.alertname,
      });
      const since = Object.assign(document.createElement('span'), {
        className: 'since',
        textContent: `since ${formatDate(alert.starts_at)}`,
      });
      item.append(badge, ' ', summary, ' ', since);
      if (alert.annotations.description) item.title = alert.annotations.description;
      return item;
    }),
  );
}
