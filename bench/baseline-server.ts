/**
 * The raw baseline: node:http + a pg Pool executing the same SQL the service uses for the workload
 * list and detail (built by the service's own query builders), returning the same JSON envelope.
 * Nothing else: no framework, no validation beyond what the query builders need, no logging.
 * It authenticates the way the service does, minus the framework: one indexed api_tokens lookup
 * and a SHA-256 comparison per request, no caching, so the ratio measures the service's overhead
 * and not a skipped database round trip.
 */
import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'pg';
import { BASELINE_SQL_SOURCE, detailResponse, listResponse } from './baseline-queries';
import type { AuthScope } from '../src/common/auth/auth-scope';
import type { Role } from '../src/core/roles';
import { parseApiToken, secretMatches } from '../src/common/auth/api-token-format';

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 20),
});

interface TokenRow {
  token_id: string;
  organization_id: string;
  role: Role;
  initiative_ids: string[];
  secret_hash: Buffer;
  revoked_at: Date | null;
  expires_at: Date | null;
}

async function authenticate(request: IncomingMessage): Promise<AuthScope | null> {
  const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
  const parsed = match ? parseApiToken(match[1]) : null;
  if (!parsed) return null;
  const { rows } = await pool.query<TokenRow>(
    `SELECT token_id, organization_id, role, initiative_ids, secret_hash, revoked_at, expires_at
       FROM api_tokens WHERE token_id = $1`,
    [parsed.tokenId],
  );
  const token = rows[0];
  if (!token || !secretMatches(parsed.secret, token.secret_hash)) return null;
  if (token.revoked_at || (token.expires_at && token.expires_at.getTime() <= Date.now())) return null;
  if (request.headers['x-organization-id'] !== token.organization_id) return null;
  return {
    organizationId: token.organization_id,
    role: token.role,
    initiativeIds: token.role === 'ORG_ADMIN' ? 'all' : token.initiative_ids,
    credentialKey: `token:${token.token_id}`,
    subject: `token:${token.token_id}`,
  };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://baseline');
  if (url.pathname === '/health') return send(response, 200, { status: 'ok', sql: BASELINE_SQL_SOURCE });
  const requestId = randomUUID();
  const scope = await authenticate(request);
  if (!scope) return send(response, 401, { error: { code: 'UNAUTHENTICATED' }, request_id: requestId });
  const result =
    url.pathname === '/v1/workloads'
      ? await listResponse(pool, scope, url.searchParams)
      : url.pathname.startsWith('/v1/workloads/')
        ? await detailResponse(pool, scope, decodeURIComponent(url.pathname.slice('/v1/workloads/'.length)))
        : null;
  if (!result)
    return send(response, 404, {
      error: { code: 'NOT_FOUND', message: 'Not found', details: [] },
      request_id: requestId,
    });
  send(response, result.status, { ...result.body, request_id: requestId });
}

let inFlight = 0;
let closed = false;
/** The pool ends once the server is closed and no handler still awaits a query. */
function endPoolWhenIdle(): void {
  if (closed && inFlight === 0) void pool.end();
}

const server = createServer((request, response) => {
  inFlight += 1;
  handle(request, response)
    .catch((error: Error) => {
      process.stderr.write(`baseline: ${error.message}\n`);
      if (!response.headersSent) send(response, 500, { error: { code: 'INTERNAL_ERROR' } });
    })
    .finally(() => {
      inFlight -= 1;
      endPoolWhenIdle();
    });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
// A client may close its socket while its request still awaits a query: the server then counts no
// connection, but that handler still needs the pool.
process.once('SIGTERM', () => {
  server.close(() => {
    closed = true;
    endPoolWhenIdle();
  });
  server.closeIdleConnections();
});
