import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { assertInitiativeInScope } from '../common/auth/scope-checks';
import { type CurrencyMetadata, organizationCurrencyQuery } from '../common/cost';
import { ScopedDatabase } from '../common/database/scoped-database';
import { ApiError } from '../common/http/api-error';
import { type PageMetadata, WithMetadata } from '../common/http/envelope';
import {
  cursorCodecFor,
  filterFingerprint,
  type KeysetCursorCodec,
  type KeysetPosition,
} from '../common/pagination/keyset-cursor';
import { AppConfig } from '../core/config/app-config';
import { DEFAULT_FOCUS_PAGE_SIZE, FocusQueryDto, MAX_FOCUS_PAGE_SIZE } from './dto/focus-query.dto';
import { type FocusRequest, type FocusRow, focusPageQuery } from './focus.queries';
import { type FocusRecordJson, toFocusRecord } from './focus.responses';

/** A year and a day: a FOCUS export covers at most that (one request, one billing year). */
const MAX_RANGE_MS = 366 * 86_400_000;

@Injectable()
export class CostsService {
  private readonly cursors: KeysetCursorCodec;

  constructor(
    private readonly database: ScopedDatabase,
    config: AppConfig,
  ) {
    this.cursors = cursorCodecFor(config.CURSOR_SECRET);
  }

  async focus(
    scope: AuthScope,
    query: FocusQueryDto,
    asOf: Date,
  ): Promise<
    WithMetadata<{ records: FocusRecordJson[] }, Omit<PageMetadata, 'total_count'> & CurrencyMetadata>
  > {
    const { request, fingerprint, after } = this.focusRequest(scope, query, asOf);
    const limit = query.limit ?? DEFAULT_FOCUS_PAGE_SIZE;
    const [page, [{ currency }]] = await Promise.all([
      this.page(scope, request, after, limit),
      this.database.run<CurrencyMetadata>(organizationCurrencyQuery(scope)),
    ]);
    const nextToken = page.next ? this.cursors.encode(page.next, fingerprint) : null;
    return new WithMetadata({ records: page.records }, { next_token: nextToken, currency });
  }

  /** Every record of the range, page by page through the same keyset as the JSON pages. */
  async *focusAll(scope: AuthScope, query: FocusQueryDto, asOf: Date): AsyncIterable<FocusRecordJson> {
    const { request, after } = this.focusRequest(scope, query, asOf);
    let position = after;
    for (;;) {
      const page = await this.page(scope, request, position, MAX_FOCUS_PAGE_SIZE);
      yield* page.records;
      if (!page.next) return;
      position = page.next;
    }
  }

  /** Validates before anything is read, so a CSV export fails with a JSON error, never mid-stream. */
  checkFocus(scope: AuthScope, query: FocusQueryDto, asOf: Date): void {
    this.focusRequest(scope, query, asOf);
  }

  private async page(scope: AuthScope, request: FocusRequest, after: KeysetPosition | null, limit: number) {
    const rows = await this.database.run<FocusRow>(focusPageQuery(scope, request, after, limit));
    const workloads: string[] = [];
    for (const row of rows)
      if (workloads[workloads.length - 1] !== row.workload_id) workloads.push(row.workload_id);
    const shown = new Set(workloads.slice(0, limit));
    const last = rows.filter((row) => shown.has(row.workload_id)).at(-1);
    const records = rows
      .filter((row) => shown.has(row.workload_id) && row.period_start !== null)
      .map((row) => toFocusRecord(row, scope.organizationId));
    const next =
      workloads.length > limit && last ? { key: last.submitted_at_key, id: last.workload_id } : null;
    return { records, next };
  }

  private focusRequest(scope: AuthScope, query: FocusQueryDto, asOf: Date) {
    assertInitiativeInScope(scope, query.initiative_id);
    if (query.start_date >= query.end_date) {
      throw ApiError.invalidField(
        'start_date',
        'query',
        'must be before end_date',
        query.start_date.toISOString(),
      );
    }
    if (query.end_date.getTime() - query.start_date.getTime() > MAX_RANGE_MS) {
      throw ApiError.invalidField(
        'end_date',
        'query',
        'must be at most 366 days after start_date: export a year at a time',
        query.end_date.toISOString(),
      );
    }
    const request: FocusRequest = {
      from: query.start_date,
      to: query.end_date,
      asOf,
      initiativeId: query.initiative_id,
    };
    const fingerprint = filterFingerprint({
      organization: scope.organizationId,
      export: 'focus',
      from: request.from,
      to: request.to,
      initiativeId: request.initiativeId,
    });
    const after = query.next_token === undefined ? null : this.cursors.decode(query.next_token, fingerprint);
    return { request, fingerprint, after };
  }
}
