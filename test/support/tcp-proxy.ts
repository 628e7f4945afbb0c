import { createServer, Server, Socket, connect } from 'node:net';

/**
 * A loopback TCP proxy in front of a server the other tests share (PostgreSQL, Redis), so a test can
 * make it "go away" (`stop`), "hang" (`freeze`) and "come back" for one application.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  private frozen = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /**
   * Listens on `port`, or on the first free port tried from below the kernel's ephemeral range
   * (32768+), so that the port cannot be taken by some outgoing connection while the proxy is down.
   */
  async start(port = this.port): Promise<number> {
    if (this.server?.listening) return this.port;
    if (port !== 0) return this.listen(port);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.listen(20_000 + Math.floor(Math.random() * 10_000));
      } catch (error) {
        if (attempt > 20) throw error;
      }
    }
  }

  private async listen(port: number): Promise<number> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const socket of pair) {
        this.sockets.add(socket);
        socket.on('close', () => {
          this.sockets.delete(socket);
          this.pairs.delete(pair);
        });
        socket.on('error', () => socket.destroy());
      }
      if (this.frozen) hold(pair);
      else forward(pair);
    });
    const server = this.server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  /**
   * A database that hangs (stopped process, network black hole): connections stay open and new ones
   * are accepted, but no byte moves in either direction until `resume()`.
   */
  freeze(): void {
    this.frozen = true;
    for (const pair of this.pairs) hold(pair);
  }

  /** Everything held by `freeze()` moves again. */
  resume(): void {
    this.frozen = false;
    for (const pair of this.pairs) forward(pair);
  }

  /** Stops listening and cuts every open connection, as a database crash would. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }
}

function forward([client, upstream]: [Socket, Socket]): void {
  client.pipe(upstream);
  upstream.pipe(client);
}

function hold([client, upstream]: [Socket, Socket]): void {
  client.unpipe(upstream);
  upstream.unpipe(client);
  client.pause();
  upstream.pause();
}

export function proxiedUrl(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
