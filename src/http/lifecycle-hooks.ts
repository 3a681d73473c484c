// The runtime half of the lifecycle: headers on every response of a deprecated operation
// (errors included, so they are set before anything can fail) and 410 after the sunset.
import type { FastifyInstance } from 'fastify'
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import { lifecycleHeaders, type Lifecycle } from './lifecycle.ts'

export interface LifecycleHookOptions {
  clock: Clock
  docsUrl: string
  onDeprecatedCall?: (operationId: string, keyId: number | null) => void
}

/** Call before the access hook: the headers must be on 401s and 429s too. */
export function installLifecycleHeaders (app: FastifyInstance, options: LifecycleHookOptions): void {
  const cache = new WeakMap<Lifecycle, Record<string, string>>()
  app.addHook('onRequest', async (request, reply) => {
    const lifecycle = request.routeOptions.config.lifecycle
    if (lifecycle?.deprecatedAt === undefined) return
    let headers = cache.get(lifecycle)
    if (headers === undefined) {
      headers = lifecycleHeaders(lifecycle, { docsUrl: options.docsUrl })
      cache.set(lifecycle, headers)
    }
    // The successor is a template (/v1/pets?id={petId}): fill it in from this request's path.
    if (lifecycle.successor?.path.includes('{') === true) {
      const params = request.params as Record<string, string>
      const fill = (text: string) => text.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''))
      reply.headers({ ...headers, link: fill(headers.link!), warning: fill(headers.warning!) })
      return
    }
    reply.headers(headers)
  })
}

/** Call after the access hook: the call is counted per key, and refused after the sunset. */
export function installSunset (app: FastifyInstance, options: LifecycleHookOptions): void {
  app.addHook('onRequest', async (request) => {
    const lifecycle = request.routeOptions.config.lifecycle
    if (lifecycle?.deprecatedAt === undefined) return
    const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId ?? request.routeOptions.url ?? ''
    options.onDeprecatedCall?.(operationId, request.principal?.keyId ?? null)
    if (lifecycle.sunsetAt !== undefined && options.clock.now() >= lifecycle.sunsetAt.getTime()) {
      const successor = lifecycle.successor === undefined ? '' : `; use ${lifecycle.successor.method} ${lifecycle.successor.path}`
      throw new AppError('operation_sunset', `this operation was retired on ${lifecycle.sunsetAt.toISOString()}${successor}`)
    }
  })
}
