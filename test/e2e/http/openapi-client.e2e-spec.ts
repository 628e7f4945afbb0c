import type { AddressInfo } from 'node:net';
import { execFileSync } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { projectRoot } from '../../../src/core/project-root';
import { createApiToken, insertWorkloads, seedOrganization } from '../../support/factories';
import { createTestApp, type TestApp } from '../../support/test-app';

/**
 * The document the service serves is what generated clients are built from: lint it with Redocly's
 * recommended rules, generate types with openapi-typescript, type-check a program that calls every
 * operation with openapi-fetch (error branches included), then run that program against the service.
 */
describe('OpenAPI document and a generated client', () => {
  let testApp: TestApp;
  let baseUrl: string;
  let document: OpenApiDocument;
  let organizationId: string;
  let token: string;
  let workloadId: string;
  // Inside the project, so the program resolves openapi-fetch from its node_modules.
  const workDirectory = join(projectRoot(), '.gpucap', `openapi-client-${process.pid}`);

  beforeAll(async () => {
    testApp = await createTestApp();
    await testApp.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(testApp.server.address() as AddressInfo).port}`;
    organizationId = await seedOrganization(testApp.dataSource, {
      pools: [{ poolId: 'h100', instanceTypes: ['p5.48xlarge'] }],
      allocations: [{ initiativeId: 'init-a', poolId: 'h100', allocatedGpuHours: 100 }],
    });
    [{ workloadId }] = await insertWorkloads(testApp.dataSource, organizationId, [
      { gpuCount: 4, status: 'completed' },
      { status: 'running', initiativeId: 'init-b' },
    ]);
    token = await createApiToken(testApp.dataSource, organizationId, { role: 'ORG_ADMIN' });
    // On a connection of its own: the type check below blocks the event loop for seconds, and a
    // pooled keep-alive connection the server times out meanwhile would reset the client's first call.
    document = JSON.parse(await getClosing(`${baseUrl}/v1/openapi.json`)) as OpenApiDocument;
    mkdirSync(workDirectory, { recursive: true });
  });

  afterAll(async () => {
    rmSync(workDirectory, { recursive: true, force: true });
    await testApp.close();
  });

  it("passes Redocly's recommended rules without an error", async () => {
    const documentFile = join(workDirectory, 'openapi.json');
    writeFileSync(documentFile, JSON.stringify(document));
    const errors = lintErrors(documentFile);
    expect(errors).toEqual([]);
  });

  it('declares every error status with the shared envelope on every operation', () => {
    const operations = Object.entries(document.paths).map(([path, item]) => ({ path, ...item.get }));
    expect(operations.map((operation) => operation.operationId).sort()).toEqual([
      'getCapacity',
      'getFocusCosts',
      'getHealth',
      'getLiveness',
      'getWorkload',
      'getWorkloadMetrics',
      'getWorkloadStats',
      'listAlerts',
      'listRankedWorkloadMetrics',
      'listRecommendations',
      'listWorkloads',
    ]);
    for (const operation of operations) {
      const isHealth = operation.path.startsWith('/v1/health');
      const statuses = isHealth ? ['400', '404', '405', '500'] : ERROR_STATUSES;
      for (const status of statuses) expect(operation.responses[status]).toBeDefined();
      if (isHealth) continue;
      expect(Object.keys(operation.responses).sort()).toEqual(['200', '304', ...ERROR_STATUSES].sort());
      expect(operation.responses['304']).toEqual({ $ref: '#/components/responses/NotModified' });
      expect(operation.parameters).toContainEqual({ $ref: '#/components/parameters/IfNoneMatch' });
      expect(operation.parameters).toContainEqual({ $ref: '#/components/parameters/OrganizationId' });
    }
    const responses = document.components.responses;
    expect(responses.UNAUTHENTICATED.headers).toHaveProperty('WWW-Authenticate');
    expect(responses.RATE_LIMITED.headers).toHaveProperty('Retry-After');
    expect(responses.SERVICE_UNAVAILABLE.headers).toHaveProperty('Retry-After');
    expect(responses.METHOD_NOT_ALLOWED.headers).toHaveProperty('Allow');
    for (const response of Object.values(responses)) expect(response.headers).toHaveProperty('X-Request-Id');
    expect(document.components.schemas.ErrorEnvelope.properties.error.properties?.code.enum).toEqual([
      'VALIDATION_ERROR',
      'UNAUTHENTICATED',
      'FORBIDDEN',
      'NOT_FOUND',
      'METHOD_NOT_ALLOWED',
      'RATE_LIMITED',
      'INTERNAL_ERROR',
      'SERVICE_UNAVAILABLE',
    ]);
  });

  it('types integers as integer and timestamps as date-time', () => {
    const schemas = document.components.schemas;
    expect(schemas.WorkloadDetailDto.properties.gpu_count.type).toBe('integer');
    expect(schemas.WorkloadDetailDto.properties.submitted_at.format).toBe('date-time');
    expect(schemas.WorkloadDetailDto.properties.completed_at.format).toBe('date-time');
    expect(schemas.PageMetadataDto.properties.total_count.type).toBe('integer');
    expect(schemas.CapacitySummaryDto.properties.current_active_gpus.type).toBe('integer');
    const limit = document.paths['/v1/workloads'].get.parameters.find(
      (p) => 'name' in p && p.name === 'limit',
    );
    expect(limit).toMatchObject({ schema: { type: 'integer' } });
  });

  it('generates a client whose error branches type-check, and that client works', async () => {
    const documentFile = join(workDirectory, 'served-openapi.json');
    writeFileSync(documentFile, JSON.stringify(document));
    // The generator's command line, as a user runs it (it is an ES module jest cannot load).
    execFileSync(process.execPath, [
      join(projectRoot(), 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
      documentFile,
      '--output',
      join(workDirectory, 'schema.d.ts'),
    ]);
    const programFile = join(workDirectory, 'client-program.ts');
    writeFileSync(programFile, CLIENT_PROGRAM);
    expect(typeCheck(programFile)).toEqual([]);

    const program = (await import(programFile)) as { exercise: Exercise };
    const results = await program.exercise(baseUrl, token, organizationId, workloadId);
    expect(results).toEqual({
      listWorkloads: 2,
      getWorkload: 4,
      getWorkloadStats: 2,
      getWorkloadMetrics: workloadId,
      listRankedWorkloadMetrics: 2,
      getCapacity: 100,
      getHealth: 'healthy',
      getLiveness: 'alive',
      badLimit: 'VALIDATION_ERROR limit',
      unknownWorkload: 'NOT_FOUND',
      badToken: 'UNAUTHENTICATED',
      otherOrganization: 'FORBIDDEN',
    });
  });
});

const ERROR_STATUSES = ['400', '401', '403', '404', '405', '429', '500', '503'];

type Exercise = (
  baseUrl: string,
  token: string,
  organizationId: string,
  workloadId: string,
) => Promise<Record<string, unknown>>;

interface SchemaProperty {
  type?: string;
  format?: string;
  properties?: Record<string, SchemaProperty>;
  enum?: string[];
}

/** Just the parts of the document the assertions read. */
interface OpenApiDocument {
  paths: Record<
    string,
    {
      get: {
        operationId: string;
        parameters: ({ name: string } | { $ref: string })[];
        responses: Record<string, unknown>;
      };
    }
  >;
  components: {
    responses: Record<string, { headers: Record<string, unknown> }>;
    schemas: Record<string, { properties: Record<string, SchemaProperty> }>;
  };
}

/**
 * Redocly's linter is an ES module, which jest's module system cannot load: it runs in a child Node
 * process and reports the errors as JSON lines.
 */
function lintErrors(documentFile: string): string[] {
  const script = `
    import { createConfig, lintFromString } from '@redocly/openapi-core';
    import { readFileSync } from 'node:fs';
    const problems = await lintFromString({
      source: readFileSync(process.argv[1], 'utf8'),
      absoluteRef: process.argv[1],
      config: await createConfig({ extends: ['recommended'] }),
    });
    for (const problem of problems.filter((p) => p.severity === 'error')) {
      console.log(JSON.stringify(problem.ruleId + ': ' + problem.message + ' at ' + problem.location[0]?.pointer));
    }`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script, documentFile], {
    cwd: projectRoot(),
    encoding: 'utf8',
  });
  return output
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as string);
}

function typeCheck(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    skipLibCheck: true,
    types: [],
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}

function getClosing(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    httpGet(url, { agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    }).on('error', reject);
  });
}

/**
 * Every operation through openapi-fetch, and the error branch read as `error.error.code`: it only
 * compiles when the document declares the error responses.
 */
const CLIENT_PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths } from './schema';

export async function exercise(baseUrl: string, token: string, organizationId: string, workloadId: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer ' + token } });
  const header = { 'X-Organization-Id': organizationId };
  const results: Record<string, unknown> = {};

  const list = await client.GET('/v1/workloads', { params: { header, query: { limit: 1 } } });
  results.listWorkloads = list.error ? list.error.error.code : list.data.metadata.total_count;

  const detail = await client.GET('/v1/workloads/{workload_id}', {
    params: { header, path: { workload_id: workloadId } },
  });
  results.getWorkload = detail.error ? detail.error.error.code : detail.data.data.gpu_count;

  const stats = await client.GET('/v1/workloads/stats', {
    params: { header, query: { time_range: 'last_7_days', group_by: 'initiative_id' } },
  });
  results.getWorkloadStats = stats.error ? stats.error.error.code : stats.data.data.summary.total_workloads;

  const metrics = await client.GET('/v1/workloads/{workload_id}/metrics', {
    params: { header, path: { workload_id: workloadId }, query: { time_range: 'job_lifetime' } },
  });
  results.getWorkloadMetrics = metrics.error ? metrics.error.error.code : metrics.data.data.workload_id;

  const ranked = await client.GET('/v1/workloads/metrics', {
    params: { header, query: { sort_by: 'gpu_hours', order: 'asc', limit: 5 } },
  });
  results.listRankedWorkloadMetrics = ranked.error ? ranked.error.error.code : ranked.data.metadata.total_count;

  const capacity = await client.GET('/v1/capacity', { params: { header } });
  results.getCapacity = capacity.error
    ? capacity.error.error.code
    : capacity.data.data.summary.total_allocated_gpu_hours;

  // Health answers 503 in its own shape (status "unhealthy"), other errors in the shared envelope.
  const health = await client.GET('/v1/health');
  if (health.error) results.getHealth = 'error' in health.error ? health.error.error.code : health.error.data.status;
  else results.getHealth = health.data.data.status;
  const live = await client.GET('/v1/health/live');
  results.getLiveness = live.error ? live.error.error.code : live.data.data.status;

  const badLimit = await client.GET('/v1/workloads', { params: { header, query: { limit: 0 } } });
  if (badLimit.error) {
    const detailEntry = badLimit.error.error.details[0];
    results.badLimit = badLimit.error.error.code + ' ' + detailEntry.field;
  }
  const unknown = await client.GET('/v1/workloads/{workload_id}', {
    params: { header, path: { workload_id: 'no-such-workload' } },
  });
  if (unknown.error) results.unknownWorkload = unknown.error.error.code;
  const anonymous = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer not-a-token' } });
  const unauthenticated = await anonymous.GET('/v1/capacity', { params: { header } });
  if (unauthenticated.error) results.badToken = unauthenticated.error.error.code;
  const elsewhere = await client.GET('/v1/capacity', {
    params: { header: { 'X-Organization-Id': organizationId + '-elsewhere' } },
  });
  if (elsewhere.error) results.otherOrganization = elsewhere.error.error.code;
  return results;
}
`;
