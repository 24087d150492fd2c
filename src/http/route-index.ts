// Which methods a path supports, for `405 Method Not Allowed` with `Allow` (Fastify itself
// answers 404 for a known path with an unknown method). Mirrors every registered route into
// a find-my-way router built with the same options as Fastify's.

import type { FastifyInstance } from 'fastify';
import FindMyWay from 'find-my-way';

export interface RouteIndex {
  /** The methods with a route matching this path (no query string), sorted. */
  allowedMethods(path: string): string[];
}

export function indexRoutes(app: FastifyInstance, maxParamLength: number): RouteIndex {
  const router = FindMyWay({ maxParamLength, defaultRoute: () => {} });
  const methods = new Set<string>();
  app.addHook('onRoute', function indexRoute(route) {
    for (const method of [route.method].flat()) {
      methods.add(method);
      router.on(method as FindMyWay.HTTPMethod, route.url, () => {});
    }
  });
  return {
    allowedMethods(path) {
      return [...methods]
        .filter((method) => router.find(method as FindMyWay.HTTPMethod, path) !== null)
        .sort();
    },
  };
}
