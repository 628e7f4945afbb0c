import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import {
  AlertmanagerUnavailableError,
  postAlerts,
  type PostableAlert,
} from '../../../src/alerts/alertmanager-client';
import type { AlertmanagerTarget } from '../../../src/alerts/alerts-config';

const ALERT: PostableAlert = {
  labels: { alertname: 'GpucapSyncStale', organization_id: 'org-acme', source: 'slurm', severity: 'warning' },
  annotations: { summary: 'stale', description: 'stale for long' },
  startsAt: '2026-11-26T10:00:00.000Z',
  generatorURL: 'https://gpucap.example.com/',
};

describe('postAlerts', () => {
  let server: Server;
  let url: string;
  let answer: { status: number; body: string; delayMs?: number };
  const received: { method?: string; path?: string; headers: IncomingHttpHeaders; body: unknown }[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({
          method: request.method,
          path: request.url,
          headers: request.headers,
          body: JSON.parse(body),
        });
        setTimeout(() => response.writeHead(answer.status).end(answer.body), answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => (received.length = 0));

  const target = (overrides: Partial<AlertmanagerTarget> = {}): AlertmanagerTarget => ({
    url,
    basicAuth: null,
    bearerToken: null,
    timeoutMs: 2_000,
    ...overrides,
  });

  it("posts the alerts as JSON to Alertmanager's v2 API, with basic auth when configured", async () => {
    answer = { status: 200, body: '' };
    await postAlerts(target({ basicAuth: { username: 'gpucap', password: 'pw' } }), [ALERT]);
    expect(received).toEqual([
      expect.objectContaining({ method: 'POST', path: '/api/v2/alerts', body: [ALERT] }),
    ]);
    expect(received[0].headers.authorization).toBe(`Basic ${Buffer.from('gpucap:pw').toString('base64')}`);
    expect(received[0].headers['content-type']).toBe('application/json');
  });

  it('sends a bearer token when configured', async () => {
    answer = { status: 200, body: '' };
    await postAlerts(target({ bearerToken: 't0k' }), []);
    expect(received[0].headers.authorization).toBe('Bearer t0k');
  });

  it('refuses a 5xx answer with its status and first line', async () => {
    answer = { status: 503, body: 'cluster not ready\nmore' };
    await expect(postAlerts(target(), [ALERT])).rejects.toThrow(
      new AlertmanagerUnavailableError('Alertmanager answered 503: cluster not ready'),
    );
  });

  it('gives up on a silent Alertmanager at the deadline', async () => {
    answer = { status: 200, body: '', delayMs: 1_000 };
    await expect(postAlerts(target({ timeoutMs: 100 }), [ALERT])).rejects.toThrow(
      'Alertmanager unreachable (no answer within the timeout)',
    );
  });

  it('names a refused connection by its code, not its address', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await postAlerts(target({ url: `http://127.0.0.1:${port}` }), [ALERT]).catch(
      (caught: Error) => caught,
    );
    expect(error).toBeInstanceOf(AlertmanagerUnavailableError);
    expect((error as Error).message).toBe('Alertmanager unreachable (ECONNREFUSED)');
  });
});
