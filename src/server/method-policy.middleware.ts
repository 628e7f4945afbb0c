import { METHODS } from 'node:http';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../common/http/api-error';
import { ErrorCode } from '../common/http/error-codes';
import { assignRequestId } from '../common/http/request-id';
import { writeError } from '../common/http/write-error';

/** What the policy reads of a layer of Express's router: a route's methods, and its own path matching. */
interface RouterLayer {
  route?: { methods: Record<string, boolean | undefined> };
  handle: { stack?: unknown };
  match(path: string): unknown;
}

interface ServedRoute {
  layer: RouterLayer;
  methods: string[];
}

/**
 * The HTTP method rule (contract §2), read from the routes the application registers rather than kept
 * by hand, so no route escapes it: on a path some route serves, a method none of its routes serves is
 * 405 with `Allow` naming exactly the ones they do; OPTIONS is answered here and never an error; any
 * other path falls through to routing (404). It runs before authentication, like routing does.
 */
export class MethodPolicy {
  private routes: ServedRoute[] | undefined;
  /** Methods every route serves: no path refuses them, so they skip the path lookup. */
  private servedEverywhere = new Set<string>();
  /** Every method some path serves: `Allow` on an OPTIONS for a path no route serves. */
  private servedAnywhere: string[] = [];

  /**
   * Reads the routes of the application's router. Nest registers its controllers' routes in
   * `app.init()`, so this is called after it and before the server listens.
   */
  readRoutes(server: Express): void {
    const stack = (server.router as unknown as { stack: RouterLayer[] }).stack;
    const routes: ServedRoute[] = [];
    for (const layer of stack) {
      // Routes of a router mounted with use() would be out of reach of this rule: refuse to start.
      if (!layer.route && layer.handle.stack) {
        throw new Error('the method policy reads only routes registered on the application itself');
      }
      if (layer.route) routes.push({ layer, methods: methodsOf(layer.route.methods) });
    }
    this.routes = routes;
    this.servedAnywhere = [...new Set(routes.flatMap((route) => route.methods))];
    this.servedEverywhere = new Set(
      this.servedAnywhere.filter((method) => routes.every((route) => route.methods.includes(method))),
    );
  }

  /** The methods the routes matching `path` serve, or null where no route matches it. */
  allowedOn(path: string): string[] | null {
    if (!this.routes) throw new Error('the method policy was asked before it read the routes');
    const methods = this.routes
      .filter((route) => matches(route.layer, path))
      .flatMap((route) => route.methods);
    return methods.length ? [...new Set(methods)] : null;
  }

  /** The 405 for `method` on `path`; null where it is served there or no route serves `path`. */
  refusal(method: string, path: string): ApiError | null {
    const allowed = this.allowedOn(path);
    return allowed && !allowed.includes(method) ? methodNotAllowed(method, path, allowed) : null;
  }

  readonly middleware: RequestHandler = (request: Request, response: Response, next: NextFunction) => {
    const requestId = assignRequestId(request, response);
    if (this.servedEverywhere.has(request.method)) return next();
    const allowed = this.allowedOn(request.path);
    if (allowed?.includes(request.method)) return next();
    if (request.method === 'OPTIONS') {
      response.setHeader('Allow', allowHeader([...(allowed ?? this.servedAnywhere), 'OPTIONS']));
      response.status(204).end();
      return;
    }
    if (!allowed) return next();
    writeError(response, methodNotAllowed(request.method, request.path, allowed), requestId);
  };
}

function methodNotAllowed(method: string, path: string, allowed: string[]): ApiError {
  // HEAD is GET without a body: where GET is served, naming it alone is the advice.
  const advised = allowed.filter((served) => served !== 'HEAD' || !allowed.includes('GET'));
  return new ApiError(
    ErrorCode.METHOD_NOT_ALLOWED,
    `Method ${method} is not allowed on ${path}; use ${advised.sort().join(' or ')}`,
    [],
    { Allow: allowHeader(allowed) },
  );
}

/** A route's methods as Express dispatches them: HEAD goes to GET's handler, `all()` takes every one. */
function methodsOf(registered: Record<string, boolean | undefined>): string[] {
  if (registered._all) return [...METHODS];
  const methods = Object.keys(registered)
    .filter((method) => registered[method])
    .map((method) => method.toUpperCase());
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods;
}

/**
 * Express's own matching (its case sensitivity and trailing slash). A path parameter that is not
 * valid percent-encoding throws only once the path has matched, so the route is the path's.
 */
function matches(layer: RouterLayer, path: string): boolean {
  try {
    return Boolean(layer.match(path));
  } catch {
    return true;
  }
}

function allowHeader(methods: string[]): string {
  return [...new Set(methods)].sort().join(', ');
}
