// GET /openapi.json: the document (document.ts), serialised once per thread.
import type { TemplatedApp } from 'uWebSockets.js';
import { route, type RouteOptions } from '../http/route.js';
import { openApiDocument } from './document.js';

export function registerOpenApi(uws: TemplatedApp, version: string, tiers: string[], o: RouteOptions): void {
  const openapi = JSON.stringify(openApiDocument(version, { tiers }));
  route(uws, 'get', '/openapi.json', (_req, reply) => reply.json(200, openapi, [['Cache-Control', 'public, max-age=300']]), o);
}
