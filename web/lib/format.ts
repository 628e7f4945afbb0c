import { state } from './state';

type GpuSharing = { mode: 'mig'; profile: string } | { mode: 'time-slicing' | 'mps'; replicas: number };

/** What a workload holds: devices (whole GPUs, MIG instances or replicas) and the physical GPUs they add up to. */
export interface GpuHolding {
  gpu_count?: number;
  gpu_share?: number;
  gpu_sharing?: GpuSharing | null;
}

export function formatNumber(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined
    ? '—'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * An amount as the API gives it (an exact decimal string in the currency's minor units), shown as is
 * with its currency: formatting it as a float could change its last digit. '—' without a price.
 */
export function formatMoney(amount: string | null | undefined, currency: string | null | undefined): string {
  return amount === null || amount === undefined || !currency ? '—' : `${currency} ${amount}`;
}

export function formatPercent(value: number | null): string {
  return value === null ? '—' : `${(value * 100).toFixed(1)} %`;
}

/** The organization's local date of an instant (YYYY-MM-DD), so days read as the API counts them. */
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

/** An instant as the organization's local date and time of day, to the minute. */
export function formatTime(time: number): string {
  const instant = new Date(time * 1000);
  const clock = new Intl.DateTimeFormat('en-GB', {
    timeZone: state.timeZone,
    hour: '2-digit',
    minute: '2-digit',
  });
  return `${formatDate(instant.toISOString())} ${clock.format(instant)}`;
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
