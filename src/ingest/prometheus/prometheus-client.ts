import type { PrometheusConfig } from '../sync-config';
import { networkReason, SourceUnavailableError } from '../source-failure';

/** One series of a range query: its labels and `[unix seconds, "value"]` points. */
export interface RangeSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

/** Prometheus' HTTP API (`/api/v1/query_range`), with the config's auth and deadline. */
export class PrometheusClient {
  constructor(private readonly config: PrometheusConfig) {}

  private headers(): Record<string, string> {
    const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const { basicAuth, bearerToken } = this.config;
    if (basicAuth) {
      headers.Authorization = `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`).toString('base64')}`;
    } else if (bearerToken) {
      headers.Authorization = `Bearer ${bearerToken}`;
    }
    return headers;
  }

  async queryRange(query: string, start: number, end: number, step: number): Promise<RangeSeries[]> {
    const body = new URLSearchParams({ query, start: String(start), end: String(end), step: String(step) });
    let response: Response;
    try {
      response = await fetch(`${this.config.url}/api/v1/query_range`, {
        method: 'POST',
        headers: this.headers(),
        body,
        signal: AbortSignal.timeout(this.config.timeoutSeconds * 1000),
      });
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw new SourceUnavailableError(`Prometheus did not answer within ${this.config.timeoutSeconds} s`);
      }
      const reason = networkReason(error);
      throw new SourceUnavailableError(`cannot reach Prometheus (${reason ?? (error as Error).message})`);
    }
    const text = await response.text();
    let payload: { status?: string; error?: string; data?: { resultType?: string; result?: RangeSeries[] } };
    try {
      payload = JSON.parse(text) as typeof payload;
    } catch {
      throw new SourceUnavailableError(
        `Prometheus answered ${response.status} without a JSON body (is the url a Prometheus?)`,
      );
    }
    if (!response.ok || payload.status !== 'success') {
      const why =
        response.status === 401 || response.status === 403
          ? 'check basic_auth / bearer_token'
          : (payload.error ?? 'no reason given');
      throw new SourceUnavailableError(`Prometheus answered ${response.status} to query_range: ${why}`);
    }
    if (payload.data?.resultType !== 'matrix' || !Array.isArray(payload.data.result)) {
      throw new SourceUnavailableError('Prometheus answered query_range with something other than a matrix');
    }
    return payload.data.result;
  }
}
