/** A result that carries list metadata; the envelope interceptor lifts it into `metadata`. */
export class WithMetadata<T, M extends object = Record<string, unknown>> {
  constructor(
    readonly data: T,
    readonly metadata: M,
  ) {}
}

export interface PageMetadata {
  next_token: string | null;
  total_count: number;
}

export interface CountMetadata {
  total_count: number;
}
