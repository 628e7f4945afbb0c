/**
 * The ceiling for warm reads: a bare node:http server that answers each known path with bytes the
 * service sent for it (captured beforehand), and nothing else. Whatever the service does per cached
 * request beyond this (routing, authentication, rate limiting, the version check, the envelope) is
 * the gap the warm rows measure. Reads `CEILING_ANSWERS` (a JSON file: path → {contentType, body}).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

interface CapturedAnswer {
  contentType: string;
  body: string;
}

const answers = new Map<string, { contentType: string; body: Buffer }>(
  Object.entries(
    JSON.parse(readFileSync(process.env.CEILING_ANSWERS ?? '', 'utf8')) as Record<string, CapturedAnswer>,
  ).map(([path, answer]) => [path, { contentType: answer.contentType, body: Buffer.from(answer.body) }]),
);

createServer((request, response) => {
  if (request.url === '/health') {
    response.end('ok');
    return;
  }
  const answer = answers.get(request.url ?? '');
  if (!answer) {
    response.statusCode = 404;
    response.end();
    return;
  }
  response.setHeader('Content-Type', answer.contentType);
  response.setHeader('Content-Length', answer.body.length);
  response.end(answer.body);
}).listen(Number(process.env.PORT), '127.0.0.1');
