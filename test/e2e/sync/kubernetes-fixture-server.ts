import { createServer, Server } from 'node:http';
import { writeFileSync } from 'node:fs';

/**
 * No real API server can run here: this serves recorded PodList/NodeList documents (the API server's
 * own JSON shapes) on the paths `@kubernetes/client-node` calls, and records which paths were asked.
 */
export class KubernetesFixtureServer {
  pods: Record<string, unknown>[] = [];
  nodes: Record<string, unknown>[] = [];
  readonly requests: string[] = [];
  private server: Server | null = null;
  port = 0;

  /** Listens on `port` (0: any free one); a given port lets a test bring back a server its kubeconfig names. */
  async start(port = 0): Promise<void> {
    this.server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      this.requests.push(url.pathname);
      const namespaced = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
      let body: unknown;
      if (url.pathname === '/api/v1/nodes') body = list('NodeList', this.nodes);
      else if (url.pathname === '/api/v1/pods') body = list('PodList', this.pods);
      else if (namespaced) {
        const namespace = decodeURIComponent(namespaced[1]);
        body = list(
          'PodList',
          this.pods.filter((pod) => (pod.metadata as { namespace: string }).namespace === namespace),
        );
      }
      if (!body) {
        response.writeHead(404, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404 }));
        return;
      }
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** A kubeconfig pointing at this server, as `kubectl config view --raw` would write it. */
  writeKubeconfig(file: string): void {
    writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: fixture-cluster',
        '  cluster:',
        `    server: http://127.0.0.1:${this.port}`,
        // @kubernetes/client-node only speaks plain HTTP when told not to verify TLS.
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: sync-reader',
        '  user:',
        '    token: fixture-token',
        'contexts:',
        '- name: fixture',
        '  context:',
        '    cluster: fixture-cluster',
        '    user: sync-reader',
        'current-context: fixture',
        '',
      ].join('\n'),
    );
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let resourceVersion = 1000;

function list(kind: string, items: unknown[]) {
  resourceVersion += 1;
  return { kind, apiVersion: 'v1', metadata: { resourceVersion: String(resourceVersion) }, items };
}
