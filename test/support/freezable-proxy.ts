import { connect, createServer, Server, Socket } from 'node:net';

/**
 * A loopback TCP proxy a test owns, in front of a server other tests share (Redis), that can fail
 * two ways: `stop()` refuses connections and cuts open ones (a crash), `freeze()` keeps every
 * connection open but lets no byte through until `thaw()` (a hung server or a silent network).
 */
export class FreezableProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private held: Array<() => void> | undefined;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listens on the given port (to come back where it was), or on a free one. */
  async start(port = this.port): Promise<number> {
    const server = createServer((client) => this.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    return this.port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  freeze(): void {
    this.held ??= [];
  }

  /** Delivers what was held, in order, and lets traffic flow again. */
  thaw(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const deliver of held) deliver();
  }

  private relay(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ]) {
      this.sockets.add(from);
      from.on('data', (chunk: Buffer) => this.deliver(() => to.destroyed || to.write(chunk)));
      from.on('close', () => (this.sockets.delete(from), to.destroy()));
      from.on('error', () => from.destroy());
    }
  }

  private deliver(send: () => void): void {
    if (this.held) this.held.push(send);
    else send();
  }
}
