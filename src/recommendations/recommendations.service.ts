import { Injectable } from '@nestjs/common';
import type { AuthScope } from '../common/auth/auth-scope';
import { assertInitiativeInScope } from '../common/auth/scope-checks';
import type { CurrencyMetadata } from '../common/cost';
import { ScopedDatabase } from '../common/database/scoped-database';
import { round4 } from '../common/http/decimal';
import { type PageMetadata, WithMetadata } from '../common/http/envelope';
import { currencyMinorUnits, ExactSum, UNIT_MICROSECONDS_PER_GPU_HOUR } from '../common/money';
import {
  cursorCodecFor,
  filterFingerprint,
  type KeysetCursorCodec,
  type KeysetPosition,
} from '../common/pagination/keyset-cursor';
import {
  type Advice,
  adviseWorkload,
  NO_ADVICE_REASONS,
  readWorkloadEvidence,
  savedAmountText,
} from './rightsizing';
import type { WorkloadEvidenceRow } from './rightsizing.queries';
import { resolveTimeRangeName, type StatsTimeRange, timeRangeBounds } from '../common/time-range';
import { AppConfig } from '../core/config/app-config';
import { DEFAULT_RECOMMENDATIONS_PAGE_SIZE, RecommendationsQueryDto } from './dto/recommendations-query.dto';
import {
  type InitiativeTotalsJson,
  type RecommendationJson,
  toRecommendation,
  type WithoutAdviceJson,
} from './recommendations.responses';
import { compareIds } from '../core/identifier';

export interface RecommendationsJson {
  range: { time_range: StatsTimeRange; start: string; end: string };
  recommendations: RecommendationJson[];
}

export interface RecommendationsMetadata extends PageMetadata, CurrencyMetadata {
  totals_by_initiative: InitiativeTotalsJson[];
  without_advice: WithoutAdviceJson;
  unknown_instance_types: string[];
}

/** A recommendation and the exact money it saves (null without a price for its whole run in range). */
interface Ranked {
  item: RecommendationJson;
  gpuHoursSaved: number;
  savedAmount: string | null;
}

/** The sort key of a page token: the unrounded GPU-hours saved, as JavaScript prints a number. */
const SAVED_KEY = /^\d+(\.\d+)?(e-\d+)?$/;

@Injectable()
export class RecommendationsService {
  private readonly cursors: KeysetCursorCodec;

  constructor(
    private readonly database: ScopedDatabase,
    config: AppConfig,
  ) {
    this.cursors = cursorCodecFor(config.CURSOR_SECRET);
  }

  async list(
    scope: AuthScope,
    query: RecommendationsQueryDto,
    now: Date,
  ): Promise<WithMetadata<RecommendationsJson, RecommendationsMetadata>> {
    const advised = await this.advise(scope, query, now);
    const limit = query.limit ?? DEFAULT_RECOMMENDATIONS_PAGE_SIZE;
    const rest = advised.ranked.slice(advised.start);
    const page = rest.slice(0, limit);
    const last = page[page.length - 1];
    const nextToken =
      rest.length > limit && last
        ? this.cursors.encode(
            { key: String(last.gpuHoursSaved), id: last.item.workload_id },
            advised.fingerprint,
          )
        : null;
    return new WithMetadata(
      { range: advised.range, recommendations: page.map((ranked) => ranked.item) },
      {
        next_token: nextToken,
        total_count: advised.ranked.length,
        currency: advised.currency,
        totals_by_initiative: advised.totals,
        without_advice: advised.withoutAdvice,
        unknown_instance_types: advised.unknownInstanceTypes,
      },
    );
  }

  /** Every recommendation after `next_token` (all when absent), in rank order: the CSV export. */
  async listAll(scope: AuthScope, query: RecommendationsQueryDto, now: Date): Promise<RecommendationJson[]> {
    const advised = await this.advise(scope, query, now);
    return advised.ranked.slice(advised.start).map((ranked) => ranked.item);
  }

  /**
   * The rule over every workload of the request (docs/api.md, "Could run smaller"), ranked by
   * GPU-hours saved (then workload id), with the totals per team and why the others got none.
   */
  private async advise(scope: AuthScope, query: RecommendationsQueryDto, now: Date) {
    const timeRange = resolveTimeRangeName(query);
    assertInitiativeInScope(scope, query.initiative_id);
    const fingerprint = filterFingerprint({
      organization: scope.organizationId,
      list: 'recommendations',
      time_range: timeRange,
      start_date: query.start_date,
      end_date: query.end_date,
      initiative_id: query.initiative_id,
      cluster_id: query.cluster_id,
      instance_type: query.instance_type,
      min_gpu_hours_saved: query.min_gpu_hours_saved,
    });
    const after =
      query.next_token === undefined
        ? null
        : this.cursors.decode(query.next_token, fingerprint, (key) => SAVED_KEY.test(key));
    const { from, to, currency } = await timeRangeBounds(this.database, scope, timeRange, query, now);
    const { catalogue, rows } = await readWorkloadEvidence(this.database, scope, {
      from,
      to,
      now,
      initiativeId: query.initiative_id,
      clusterId: query.cluster_id,
      instanceType: query.instance_type,
    });
    const withoutAdvice = Object.fromEntries(
      NO_ADVICE_REASONS.map((reason) => [reason, 0]),
    ) as WithoutAdviceJson;
    const unknown = new Set<string>();
    const ranked: Ranked[] = [];
    const minimum = query.min_gpu_hours_saved ?? 0;
    for (const row of rows) {
      const outcome = adviseWorkload(row, catalogue.gpusOf(row.instance_type));
      if ('reason' in outcome) {
        withoutAdvice[outcome.reason] += 1;
        if (outcome.reason === 'unknown_instance_type') unknown.add(row.instance_type);
      } else if (outcome.advice.gpu_hours_saved >= minimum) {
        ranked.push(rankedOf(row, outcome.advice, currency));
      }
    }
    ranked.sort(
      (a, b) => b.gpuHoursSaved - a.gpuHoursSaved || compareIds(a.item.workload_id, b.item.workload_id),
    );
    return {
      fingerprint,
      currency,
      ranked,
      start: after === null ? 0 : firstAfter(ranked, after),
      range: { time_range: timeRange, start: from.toISOString(), end: to.toISOString() },
      totals: totalsByInitiative(ranked, currency),
      withoutAdvice,
      unknownInstanceTypes: [...unknown].sort(compareIds),
    };
  }
}

function rankedOf(row: WorkloadEvidenceRow, advice: Advice, currency: string | null): Ranked {
  const savedAmount =
    currency !== null && row.priced ? savedAmountText(row.price_us, advice.saved_units) : null;
  return {
    item: toRecommendation(row, advice, savedAmount === null ? null : rounded([savedAmount], currency)),
    gpuHoursSaved: advice.gpu_hours_saved,
    savedAmount,
  };
}

/** Exact amounts added, then rounded once to the currency's minor units. */
function rounded(amounts: string[], currency: string | null): string | null {
  if (currency === null) return null;
  const sum = new ExactSum();
  for (const amount of amounts) sum.add(amount);
  return sum.rounded(BigInt(UNIT_MICROSECONDS_PER_GPU_HOUR), currencyMinorUnits(currency));
}

/** Per team, by initiative id: its recommendations, GPU-hours and money saved over every page. */
function totalsByInitiative(ranked: Ranked[], currency: string | null): InitiativeTotalsJson[] {
  const teams = new Map<string, Ranked[]>();
  for (const entry of ranked) {
    const team = teams.get(entry.item.initiative_id) ?? [];
    team.push(entry);
    teams.set(entry.item.initiative_id, team);
  }
  return [...teams.keys()].sort(compareIds).map((initiativeId) => {
    const team = teams.get(initiativeId) as Ranked[];
    const sumHours = (entries: Ranked[]) =>
      round4(entries.reduce((total, entry) => total + entry.gpuHoursSaved, 0));
    const priced = team.flatMap((entry) => (entry.savedAmount === null ? [] : [entry.savedAmount]));
    return {
      initiative_id: initiativeId,
      recommendations: team.length,
      gpu_hours_saved: sumHours(team),
      cost_saved: rounded(priced, currency),
      unpriced_gpu_hours_saved: sumHours(team.filter((entry) => entry.savedAmount === null)),
    };
  });
}

/** The index of the first recommendation ranked after the page token's position. */
function firstAfter(ranked: Ranked[], after: KeysetPosition): number {
  const key = Number(after.key);
  const index = ranked.findIndex(
    (entry) =>
      entry.gpuHoursSaved < key ||
      (entry.gpuHoursSaved === key && compareIds(entry.item.workload_id, after.id) > 0),
  );
  return index < 0 ? ranked.length : index;
}
