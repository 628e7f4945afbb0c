import autocannon from 'autocannon';

export interface LoadSettings {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
}

/** A few sequential requests before the load: statuses, and a body to compare between servers. */
export async function preflight(
  baseUrl: string,
  headers: Record<string, string>,
  paths: string[],
): Promise<{ statuses: { path: string; status: number; body: string }[] }> {
  const statuses = [];
  for (const path of paths.slice(0, 3)) {
    const response = await fetch(`${baseUrl}${path}`, { headers });
    statuses.push({ path, status: response.status, body: await response.text() });
  }
  return { statuses };
}

/** Every request draws its path at random from the pool, so caches see a realistic spread. */
export async function drive(
  baseUrl: string,
  headers: Record<string, string>,
  paths: string[],
  settings: LoadSettings,
): Promise<LoadResult> {
  const options = (duration: number) => ({
    url: baseUrl,
    connections: settings.connections,
    duration,
    timeout: 30,
    headers,
    requests: [
      {
        method: 'GET',
        setupRequest: (request: { path?: string }) => ({
          ...request,
          path: paths[Math.floor(Math.random() * paths.length)],
        }),
      },
    ],
  });
  if (settings.warmupSeconds > 0) await autocannon(options(settings.warmupSeconds));
  const result = await autocannon(options(settings.durationSeconds));
  const statusCodes: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stats.count;
  const completed = Object.values(statusCodes).reduce((sum, count) => sum + count, 0);
  return {
    requests: completed,
    requestsPerSecond: completed / result.duration,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    statusCodes,
  };
}
