import type { AlertmanagerTarget } from './alerts-config';

/** An alert in the body of Alertmanager's `POST /api/v2/alerts`. */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt?: string;
  generatorURL: string;
}

/** Alertmanager did not take the alerts: unreachable, too slow, or it answered with an error. */
export class AlertmanagerUnavailableError extends Error {}

/** Hands the alerts to Alertmanager in one request, within the configured deadline. */
export async function postAlerts(target: AlertmanagerTarget, alerts: PostableAlert[]): Promise<void> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (target.basicAuth) {
    const { username, password } = target.basicAuth;
    headers.Authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  } else if (target.bearerToken) {
    headers.Authorization = `Bearer ${target.bearerToken}`;
  }
  let response: Response;
  try {
    response = await fetch(`${target.url}/api/v2/alerts`, {
      method: 'POST',
      headers,
      body: JSON.stringify(alerts),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (error) {
    throw new AlertmanagerUnavailableError(`Alertmanager unreachable (${reasonOf(error)})`);
  }
  // Alertmanager's error bodies are short texts; the first line says what it refused.
  const body = await response.text().catch(() => '');
  if (!response.ok) {
    const detail = body.split('\n')[0].slice(0, 200);
    throw new AlertmanagerUnavailableError(
      `Alertmanager answered ${response.status}${detail ? `: ${detail}` : ''}`,
    );
  }
}

/**
 * Why a request failed, without the address: ECONNREFUSED, a timeout, a TLS failure. Read by shape,
 * not instanceof: fetch's errors may come from another realm than this module's Error.
 */
function reasonOf(error: unknown): string {
  const { name, message, cause } = (error ?? {}) as {
    name?: string;
    message?: string;
    cause?: { code?: string; message?: string };
  };
  if (name === 'TimeoutError') return 'no answer within the timeout';
  return cause?.code ?? cause?.message ?? message ?? 'unknown error';
}
