import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { NextFunction, Request, Response } from 'express';
import { projectRoot } from '../core/project-root';

/** The page's own files, built from web/ (the checkout's sources) once per process. */
export interface WebPage {
  html: Buffer;
  assets: Map<string, { body: Buffer; type: string }>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The page is bundled at start-up with esbuild (tens of milliseconds), uPlot included, into memory:
 * nothing is fetched at run time from anywhere but this service, and nothing generated is committed.
 * Asset names carry their content hash, so they can be cached for a year.
 */
export async function buildWebPage(): Promise<WebPage> {
  const { build } = await import('esbuild');
  const directory = join(projectRoot(), 'web');
  const result = await build({
    entryPoints: [join(directory, 'app.ts')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2020',
    outdir: join(directory, 'out'),
    entryNames: 'app.[hash]',
    write: false,
    logLevel: 'silent',
  });
  const assets = new Map<string, { body: Buffer; type: string }>();
  const names: Record<string, string> = {};
  for (const file of result.outputFiles) {
    const name = basename(file.path);
    const extension = name.slice(name.lastIndexOf('.'));
    assets.set(name, { body: Buffer.from(file.contents), type: CONTENT_TYPES[extension] });
    names[extension] = name;
  }
  const html = readFileSync(join(directory, 'index.html'), 'utf8')
    .replace('%APP_JS%', names['.js'])
    .replace('%APP_CSS%', names['.css']);
  return { html: Buffer.from(html), assets };
}

/**
 * Only the page's own origin, no inline script or style, no framing: a token pasted into the page
 * can only ever be sent to this service.
 */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/** `GET /` and `/assets/<hashed name>` (GET or HEAD); every other request goes on to the API. */
export function serveWebPage(page: WebPage) {
  const etag = `"${createHash('sha256').update(page.html).digest('base64url').slice(0, 16)}"`;
  return (request: Request, response: Response, next: NextFunction): void => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return next();
    if (request.path === '/') {
      response.set({
        ...SECURITY_HEADERS,
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-cache',
        ETag: etag,
      });
      if (request.headers['if-none-match'] === etag) {
        response.status(304).end();
        return;
      }
      response.end(request.method === 'HEAD' ? undefined : page.html);
      return;
    }
    const asset = request.path.startsWith('/assets/')
      ? page.assets.get(request.path.slice('/assets/'.length))
      : undefined;
    if (!asset) return next();
    response.set({
      ...SECURITY_HEADERS,
      'Content-Type': asset.type,
      'Cache-Control': 'public, max-age=31536000, immutable',
    });
    response.end(request.method === 'HEAD' ? undefined : asset.body);
  };
}
