import { createHash } from 'node:crypto';

/** One JSON answer as it may be served again: everything but the request id, serialised once. */
export interface CachedAnswer {
  /** The organization's data version the answer was computed at. */
  version: string;
  /** `{"data":…,"metadata":…` — the envelope without its request id and closing brace. */
  bodyPrefix: string;
  etag: string;
  /** `metadata.data_as_of`, repeated in `X-Data-As-Of` whenever the answer is served. */
  dataAsOf?: string;
  /** Epoch milliseconds after which the answer is recomputed even at the same version. */
  expiresAt: number;
  /** From here on, a request it answers also starts its recomputation (refresh ahead of expiry). */
  refreshAt: number;
}

export interface Envelope {
  data: unknown;
  metadata: { as_of: string; data_as_of?: string } & Record<string, unknown>;
  request_id: string;
}

/**
 * The ETag names the version, the caller's scope and query (the cache key) and the instant the
 * answer describes: equal tags mean equal data, so a 304 is always right. It is weak: it names the
 * answer, not its bytes, which differ between the gzip, brotli and identity encodings of it.
 */
export function cachedAnswer(
  key: string,
  version: string,
  envelope: Envelope,
  validity: { from: number; to: number },
): CachedAnswer {
  const { data, metadata } = envelope;
  const bodyPrefix = JSON.stringify({ data, metadata }).slice(0, -1);
  const digest = createHash('sha256').update(`${version}\n${key}\n${metadata.as_of}`).digest('base64url');
  return {
    version,
    bodyPrefix,
    etag: `W/"${digest.slice(0, 32)}"`,
    dataAsOf: metadata.data_as_of,
    expiresAt: validity.to,
    refreshAt: (validity.from + validity.to) / 2,
  };
}

export function answerBody(answer: CachedAnswer, requestId: string): string {
  return `${answer.bodyPrefix},"request_id":${JSON.stringify(requestId)}}`;
}
