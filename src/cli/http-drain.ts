import type { Server, ServerResponse } from 'node:http';

/**
 * Shutdown for an HTTP server: stop accepting, let the requests being answered finish (up to a
 * deadline), then close every connection left, idle keep-alive ones and requests whose headers never
 * finished arriving included, which would otherwise hold `close()` open for minutes.
 */
export class HttpDrain {
  private inFlight = 0;
  private onIdle?: () => void;

  constructor(private readonly server: Server) {
    server.on('request', (_request, response: ServerResponse) => {
      this.inFlight++;
      response.once('close', () => {
        if (--this.inFlight === 0) this.onIdle?.();
      });
    });
  }

  async drain(deadlineMs: number): Promise<void> {
    this.server.close();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (this.inFlight === 0 ? resolve() : (this.onIdle = resolve))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, deadlineMs))),
    ]);
    clearTimeout(timer);
    this.server.closeAllConnections();
  }
}
