// Headers for typed and sensitive answers (docs/product.md section 9): every response says it
// must be read only as the type it declares, and key administration (key records and new keys)
// must never be stored by a cache. Set in the first hook, so that 401s and 429s carry them too.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export const NO_STORE_PREFIX = '/v1/admin'

export function responseHeadersOf (request: FastifyRequest): Record<string, string> {
  // The route it matched, or the path for one that matched none (a 404 under /v1/admin).
  const path = request.routeOptions.url ?? request.url.split('?', 1)[0] ?? ''
  return path === NO_STORE_PREFIX || path.startsWith(`${NO_STORE_PREFIX}/`)
    ? { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }
    : { 'x-content-type-options': 'nosniff' }
}

export function installResponseHeaders (app: FastifyInstance): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => { reply.headers(responseHeadersOf(request)) })
}
