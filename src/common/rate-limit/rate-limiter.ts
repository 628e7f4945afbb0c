import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { ApiError } from '../http/api-error';
import { ErrorCode } from '../http/error-codes';
import { RATE_LIMIT_STORE, RateLimitStore } from './rate-limit.store';

const WINDOW_MS = 60_000;

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets, at least 1: what Retry-After and RateLimit-Reset carry. */
  resetSeconds: number;
  exceeded: boolean;
}

/** Fixed one-minute budgets, each named (`address`, `credential`) so their keys never collide. */
@Injectable()
export class RateLimiter {
  constructor(@Inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore) {}

  async consume(budget: string, key: string, limit: number): Promise<RateLimitState> {
    const { hits, resetMs } = await this.store.hit(`${budget}:${key}`, WINDOW_MS);
    return {
      limit,
      remaining: Math.max(0, limit - hits),
      resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
      exceeded: hits > limit,
    };
  }
}

/**
 * The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). When two budgets apply
 * to one request the one with fewer requests left is reported, so a client paces itself by it, and
 * a refusal always reports the budget that refused.
 */
export function setRateLimitHeaders(response: Response, state: RateLimitState): void {
  const reported = response.getHeader('RateLimit-Remaining');
  if (!state.exceeded && reported !== undefined && Number(reported) < state.remaining) return;
  response.setHeader('RateLimit-Limit', String(state.limit));
  response.setHeader('RateLimit-Remaining', String(state.remaining));
  response.setHeader('RateLimit-Reset', String(state.resetSeconds));
}

export function rateLimitedError(state: RateLimitState, message: string): ApiError {
  return new ApiError(ErrorCode.RATE_LIMITED, message, [], { 'Retry-After': String(state.resetSeconds) });
}
