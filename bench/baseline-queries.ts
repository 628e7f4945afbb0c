import type { Pool } from 'pg';
import type { AuthScope } from '../src/common/auth/auth-scope';
import { filterFingerprint, KeysetCursorCodec } from '../src/common/pagination/keyset-cursor';
import { parseContractDate } from '../src/common/validation/contract-date';
import type { WorkloadStatus } from '../src/core/workload-status';
import {
  countWorkloadsQuery,
  listWorkloadsPageQuery,
  WorkloadDetailRow,
  workloadDetailQuery,
  WorkloadListFilters,
  WorkloadSummaryRow,
} from '../src/workloads/workloads.queries';
import { toWorkloadDetail, toWorkloadSummary } from '../src/workloads/workload.responses';

/** Reported with the results, so a reader knows which SQL the baseline ran. */
export const BASELINE_SQL_SOURCE =
  "the service's own builders (listWorkloadsPageQuery, countWorkloadsQuery, workloadDetailQuery and the row mappers of src/workloads/workload.responses.ts)";

export interface BaselineResult {
  status: number;
  body: { data?: unknown; metadata?: unknown; error?: unknown };
}

// The same key derivation as the service (given the same CURSOR_SECRET), so tokens and JSON match byte for byte.
const cursors = KeysetCursorCodec.fromSecret(
  process.env.CURSOR_SECRET ?? process.env.JWT_SECRET ?? 'gpucap-default-cursor-key',
);

/**
 * Reads the list parameters without validating them (the benchmark only sends valid ones):
 * the baseline is the floor of what a list request costs, not a second implementation of the contract.
 */
function filtersOf(params: URLSearchParams): WorkloadListFilters {
  const date = (name: string) => {
    const value = params.get(name);
    return value === null ? undefined : (parseContractDate(value) ?? undefined);
  };
  const managed = params.get('is_managed');
  return {
    initiativeId: params.get('initiative_id') ?? undefined,
    status: (params.get('status') ?? undefined) as WorkloadStatus | undefined,
    submittedBy: params.get('submitted_by') ?? undefined,
    isManaged: managed === null ? undefined : managed === 'true',
    startDate: date('start_date'),
    endDate: date('end_date'),
  };
}

export async function listResponse(
  pool: Pool,
  scope: AuthScope,
  params: URLSearchParams,
): Promise<BaselineResult> {
  const filters = filtersOf(params);
  const fingerprint = filterFingerprint({ organization: scope.organizationId, ...filters });
  const token = params.get('next_token');
  const after = token === null ? null : cursors.decode(token, fingerprint);
  const limit = Number(params.get('limit') ?? 20);
  const page = listWorkloadsPageQuery(scope, filters, after, limit, new Date());
  const count = countWorkloadsQuery(scope, filters);
  const [rows, counted] = await Promise.all([
    pool.query<WorkloadSummaryRow>(page.text, page.values),
    pool.query<{ total_count: number }>(count.text, count.values),
  ]);
  const shown = rows.rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const nextToken =
    rows.rows.length > limit && last
      ? cursors.encode({ key: last.submitted_at_key, id: last.workload_id }, fingerprint)
      : null;
  return {
    status: 200,
    body: {
      data: { workloads: shown.map(toWorkloadSummary) },
      metadata: {
        next_token: nextToken,
        total_count: counted.rows[0].total_count,
        currency: rows.rows[0]?.currency ?? null,
      },
    },
  };
}

export async function detailResponse(
  pool: Pool,
  scope: AuthScope,
  workloadId: string,
): Promise<BaselineResult> {
  const { text, values } = workloadDetailQuery(scope, workloadId, new Date());
  const { rows } = await pool.query<WorkloadDetailRow>(text, values);
  if (rows.length === 0) {
    return {
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: `Workload '${workloadId}' was not found`, details: [] } },
    };
  }
  return {
    status: 200,
    body: { data: toWorkloadDetail(rows[0], new Date()), metadata: { currency: rows[0].currency } },
  };
}
