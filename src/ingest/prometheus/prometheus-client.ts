import type { PrometheusConfig } from '../sync-config';
import { networkReason, safeUrl, SourceUnavailableError } from '../source-failure';

/** `ECONNREFUSED`, else the cause undici gives (`UND_ERR_SOCKET: other side closed`). */
function failureReason(error: unknown): string {
  const network = networkReason(error);
  if (network) return network;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.message === 'string') {
    return typeof cause.code === 'string' ? `${cause.code}: ${cause.message}` : cause.message;
  }
  return (error as Error).message;
}

/** One series of a range query: its labels and `[unix seconds, "value"]` points. */
export interface RangeSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

/** Prometheus' HTTP API (`/api/v1/query_range`), with the config's auth and deadline. */
const ATTEMPTS = 3;

export class PrometheusClient {
  constructor(private readonly config: PrometheusConfig) {}

  /**
   * One query, answered within the config's deadline. A connection that fails before an answer (a
   * kept-alive socket the server had just closed, a reset) is tried again after 1 s, then 2 s: the
   * query only reads. A deadline that passes is not retried.
   */
  private async post(body: URLSearchParams): Promise<{ response: Response; text: string }> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const response = await fetch(`${this.config.url}/api/v1/query_range`, {
          method: 'POST',
          headers: this.headers(),
          body,
          signal: AbortSignal.timeout(this.config.timeoutSeconds * 1000),
        });
        return { response, text: await response.text() };
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === 'TimeoutError' || name === 'AbortError') {
          throw new SourceUnavailableError(
            `Prometheus at ${safeUrl(this.config.url)} did not answer within ${this.config.timeoutSeconds} s`,
          );
        }
        if (attempt >= ATTEMPTS) {
          throw new SourceUnavailableError(
            `cannot reach Prometheus at ${safeUrl(this.config.url)} (${failureReason(error)})`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** (attempt - 1)));
      }
    }
  }

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
    const { response, text } = await this.post(body);
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
