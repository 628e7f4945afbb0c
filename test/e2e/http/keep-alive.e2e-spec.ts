import { connect, type Socket } from 'node:net';
import { listenOnLoopback } from '../../support/raw-http';
import { createTestApp, type TestApp } from '../../support/test-app';

const REQUEST = 'GET /v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** One persistent connection, as a load balancer keeps to each target: every answer on one socket. */
class KeptConnection {
  private received = '';
  private readonly socket: Socket;
  readonly closed: Promise<number>;
  private readonly connected: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.socket.on('error', () => undefined);
    this.socket.on('data', (chunk: Buffer) => (this.received += chunk.toString('latin1')));
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve(Date.now())));
  }

  get isOpen(): boolean {
    return !this.socket.destroyed && this.socket.readyState === 'open';
  }

  /** Sends the request and waits for its whole answer (the body's length is known from its header). */
  async ask(): Promise<string> {
    await this.connected;
    this.received = '';
    this.socket.write(REQUEST);
    const deadline = Date.now() + 5_000;
    for (;;) {
      const headerEnd = this.received.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(this.received)?.[1];
      if (headerEnd !== -1 && length && this.received.length >= headerEnd + 4 + Number(length)) {
        return this.received;
      }
      if (!this.isOpen || Date.now() > deadline) throw new Error(`no answer: ${this.received}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  end(): void {
    this.socket.destroy();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('keep-alive behind a load balancer', () => {
  let testApp: TestApp | undefined;

  afterEach(async () => {
    await testApp?.close();
    testApp = undefined;
  });

  it('by default keeps an idle connection past 30 s and answers a request reusing it', async () => {
    testApp = await createTestApp();
    const server = testApp.server;
    expect(server.keepAliveTimeout).toBe(65_000);
    expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout);
    const connection = new KeptConnection(await listenOnLoopback(testApp.app));
    try {
      expect(await connection.ask()).toMatch(/^HTTP\/1\.1 200 .*\r\n[\s\S]*Keep-Alive: timeout=65/i);
      await sleep(30_000);
      expect(connection.isOpen).toBe(true);
      const again = await connection.ask();
      expect(again).toMatch(/^HTTP\/1\.1 200 /);
      expect(again).toContain('"status":"alive"');
    } finally {
      connection.end();
    }
  }, 45_000);

  it('closes an idle connection once the configured time has passed, not before', async () => {
    testApp = await createTestApp({ HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '2' });
    const connection = new KeptConnection(await listenOnLoopback(testApp.app));
    await connection.ask();
    const idleFrom = Date.now();
    await sleep(1_500);
    expect(connection.isOpen).toBe(true);
    const closedAt = await connection.closed;
    expect(closedAt - idleFrom).toBeGreaterThanOrEqual(1_900);
    expect(closedAt - idleFrom).toBeLessThan(4_000);
  }, 15_000);
});
