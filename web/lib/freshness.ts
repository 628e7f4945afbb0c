import { byId } from './dom';
import { state } from './state';

/** Older than this, the page marks its data: a replica far behind, or a database that stopped writing. */
const STALE_AFTER_MS = 60_000;

/** The oldest `data_as_of` of the answers the current view shows: the page is as fresh as its oldest panel. */
let oldest: number | null = null;

export function resetFreshness(): void {
  oldest = null;
  render();
}

/** Takes an answer's `metadata.data_as_of` into the line "Data as of …". */
export function noteFreshness(dataAsOf: string | undefined): void {
  const time = dataAsOf === undefined ? NaN : Date.parse(dataAsOf);
  if (Number.isNaN(time)) return;
  if (oldest === null || time < oldest) oldest = time;
  render();
}

function render(): void {
  const line = byId<HTMLParagraphElement>('freshness');
  line.hidden = oldest === null;
  if (oldest === null) return;
  const stale = Date.now() - oldest > STALE_AFTER_MS;
  const shown = new Intl.DateTimeFormat('en-CA', {
    timeZone: state.timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).format(new Date(oldest));
  line.dataset.stale = String(stale);
  line.dataset.value = new Date(oldest).toISOString();
  line.textContent = `Data as of ${shown}${stale ? ' (more than a minute old)' : ''}`;
}
