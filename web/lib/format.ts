import { state } from './state';

type GpuSharing = { mode: 'mig'; profile: string } | { mode: 'time-slicing' | 'mps'; replicas: number };

/** What a workload holds: devices (whole GPUs, MIG instances or replicas) and the physical GPUs they add up to. */
export interface GpuHolding {
  gpu_count?: number;
  gpu_share?: number;
  gpu_sharing?: GpuSharing | null;
}

/** Thousands separated, up to `digits` decimals: a whole figure reads "1,250", not "1,250.0". */
export function formatNumber(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/**
 * An amount as the API gives it (an exact decimal string in the currency's minor units), in the
 * currency's own format: "$1,447,905.40", "¥1,235". The string goes to Intl as it is, which reads it
 * as an exact decimal, so no digit changes on the way through a float. '—' without a price.
 */
export function formatMoney(amount: string | null | undefined, currency: string | null | undefined): string {
  if (amount === null || amount === undefined || !currency) return '—';
  return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount as unknown as number);
}

export function formatPercent(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : `${formatNumber(value * 100)} %`;
}

/** The organization's local date of an instant (YYYY-MM-DD), the one date style of the page. */
export function formatDate(iso: string | null): string {
  if (iso === null) return '—';
  try {
    return new Intl.DateTimeFormat('en-CA', {
      timeZone: state.timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).format(new Date(iso));
  } catch {
    return iso.slice(0, 10);
  }
}

/** The last day an exclusive end covers: a period ending at local midnight ends the day before. */
export function formatLastDay(iso: string): string {
  return formatDate(new Date(Date.parse(iso) - 1).toISOString());
}

/** The organization's local time of day of an instant, to the minute (24-hour clock). */
export function formatClock(time: number): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone: state.timeZone,
    hour: '2-digit',
    minute: '2-digit',
  }).format(new Date(time * 1000));
}

/** An instant as the organization's local date and time of day, to the minute. */
export function formatTime(time: number): string {
  return `${formatDate(new Date(time * 1000).toISOString())} ${formatClock(time)}`;
}

/** A length of time in the two largest units that matter: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  const whole = Math.max(0, Math.floor(seconds));
  if (whole < 60) return `${whole} s`;
  const minutes = Math.floor(whole / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

export function formatGpus(value: number): string {
  const text = value.toLocaleString('en-US', { maximumFractionDigits: 2 });
  return `${text} ${value <= 1 ? 'GPU' : 'GPUs'}`;
}

/**
 * "8 GPUs", "2 × 1g.10gb = 0.29 GPU", "1 × 1/4 time-sliced = 0.25 GPU": the devices a workload was
 * given and the physical GPUs they amount to.
 */
export function gpuText(holding: GpuHolding): string {
  const share = holding.gpu_share ?? holding.gpu_count;
  if (share === undefined) return '—';
  const sharing = holding.gpu_sharing ?? null;
  const devices = holding.gpu_count === undefined ? '' : `${holding.gpu_count} × `;
  if (sharing === null) return formatGpus(holding.gpu_count ?? share);
  if (sharing.mode === 'mig') return `${devices}${sharing.profile} = ${formatGpus(share)}`;
  const how = sharing.mode === 'mps' ? 'MPS' : 'time-sliced';
  return `${devices}1/${sharing.replicas} ${how} = ${formatGpus(share)}`;
}
