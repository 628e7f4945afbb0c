import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';

export interface RawResponse {
  /** null when the server closed the connection without an answer. */
  status: number | null;
  headers: Record<string, string>;
  body: string;
}

/** Starts the app on a free loopback port and returns the port. */
export async function listenOnLoopback(app: INestApplication): Promise<number> {
  await app.listen(0, '127.0.0.1');
  return (app.getHttpServer().address() as AddressInfo).port;
}

/**
 * Sends bytes exactly as given (no client-side validation of methods, paths or header values, which
 * supertest and Node's client would refuse) and reads until the server closes the connection.
 * Send `Connection: close` in well-formed requests so that the server closes after answering.
 */
export function rawRequest(port: number, request: Buffer | string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // The server may close before it has read everything (a refused oversized request): not an error.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error);
    });
    socket.on('close', () => resolve(parseResponse(Buffer.concat(chunks).toString('latin1'))));
    socket.write(request);
  });
}

function parseResponse(text: string): RawResponse {
  if (text.length === 0) return { status: null, headers: {}, body: '' };
  const headerEnd = text.indexOf('\r\n\r\n');
  const head = headerEnd === -1 ? text : text.slice(0, headerEnd);
  const [statusLine, ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = headerEnd === -1 ? '' : dechunk(text.slice(headerEnd + 4), headers);
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: Buffer.from(body, 'latin1').toString('utf8'),
  };
}

function dechunk(body: string, headers: Record<string, string>): string {
  if (headers['transfer-encoding'] !== 'chunked') return body;
  let rest = body;
  let out = '';
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, lineEnd), 16);
    if (!size) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}
