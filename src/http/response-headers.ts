// Headers for typed and sensitive answers (docs/product.md section 9): every response says it
// must be read only as the type it declares, and key administration (key records and new keys)
// must never be stored by a cache. Set first by the pipeline (http/pipeline.ts), so that 401s and
// 429s carry them too, and by the error answer of a request that never reached it.
import type { FastifyRequest } from 'fastify'
import { routeConfigOf } from '../routing/route-config.ts'

export const NO_STORE_PREFIX = '/v1/admin'

const TYPED = { 'x-content-type-options': 'nosniff' } as const
const TYPED_NO_STORE = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const

/** Key administration: its answers must never be stored (a route's path, or a path no route matched). */
export function isNoStorePath (path: string): boolean {
  return path === NO_STORE_PREFIX || path.startsWith(`${NO_STORE_PREFIX}/`)
}

export function responseHeadersOf (request: FastifyRequest): Readonly<Record<string, string>> {
  // The route it matched, or the path for one that matched none (a 404 under /v1/admin).
  return isNoStorePath(routeConfigOf(request).url ?? request.url.split('?', 1)[0] ?? '') ? TYPED_NO_STORE : TYPED
}
