// The runtime half of the lifecycle: headers on every response of a deprecated operation
// (errors included, so they are set before anything can fail) and 410 after the sunset.
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import { lifecycleHeaders, type Lifecycle } from '../routing/lifecycle.ts'

export interface LifecycleHookOptions {
  clock: Clock
  docsUrl: string
  onDeprecatedCall?: (operationId: string, keyId: number | null) => void
}

/** A header value made of fixed text and path parameters: [text, name, text, name, ..., text]. */
type Template = readonly string[]

/** Splits '/v1/pets?id={petId}' once, so a request only concatenates. */
function compile (text: string): Template | string {
  const parts = text.split(/\{(\w+)\}/)
  return parts.length === 1 ? text : parts
}

function fill (template: Template, params: Record<string, string>): string {
  let out = template[0]!
  for (let i = 1; i < template.length; i += 2) out += encodeURIComponent(params[template[i]!] ?? '') + template[i + 1]!
  return out
}

/**
 * The step that sets the lifecycle headers of a deprecated operation. It runs in the first
 * onRequest step (app.ts), before the access step: the headers must be on 401s and 429s too.
 * Each lifecycle's headers are built once; a successor given as a template (/v1/pets?id={petId})
 * is split once and filled from the request's path parameters.
 */
export function lifecycleHeaderStep (options: LifecycleHookOptions): (request: FastifyRequest, reply: FastifyReply, lifecycle: Lifecycle | undefined) => void {
  const cache = new WeakMap<Lifecycle, [string, Template | string][]>()
  return (request, reply, lifecycle) => {
    if (lifecycle?.deprecatedAt === undefined) return
    let headers = cache.get(lifecycle)
    if (headers === undefined) {
      headers = Object.entries(lifecycleHeaders(lifecycle, { docsUrl: options.docsUrl })).map(([name, value]) => [name, compile(value)])
      cache.set(lifecycle, headers)
    }
    for (const [name, value] of headers) {
      reply.header(name, typeof value === 'string' ? value : fill(value, request.params as Record<string, string>))
    }
  }
}

/**
 * Counts each call of a deprecated operation per key, and refuses it after the sunset. A hook of
 * the deprecated routes only (added as they are declared), so other routes pay nothing; route
 * hooks run after the app's, so the key is known by then.
 */
export function installSunset (app: FastifyInstance, options: LifecycleHookOptions): void {
  app.addHook('onRoute', (route) => {
    const lifecycle = route.config?.lifecycle
    if (lifecycle?.deprecatedAt === undefined) return
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId ?? route.url
    const sunset: onRequestHookHandler = (request, _reply, done) => {
      options.onDeprecatedCall?.(operationId, request.principal?.keyId ?? null)
      if (lifecycle.sunsetAt !== undefined && options.clock.now() >= lifecycle.sunsetAt.getTime()) {
        const successor = lifecycle.successor === undefined ? '' : `; use ${lifecycle.successor.method} ${lifecycle.successor.path}`
        done(new AppError('operation_sunset', `this operation was retired on ${lifecycle.sunsetAt.toISOString()}${successor}`))
        return
      }
      done()
    }
    const existing = route.onRequest
    route.onRequest = existing === undefined ? [sunset] : [...(Array.isArray(existing) ? existing : [existing]), sunset]
  })
}

/**
 * The deprecated operations, as routes are declared (GET /admin/deprecations lists them): the
 * array fills while the app registers its routes and is complete once it is ready. HEAD routes
 * Fastify adds for GET are the same operation and are skipped.
 */
export function collectDeprecatedOperations (app: FastifyInstance): DeprecatedOperation[] {
  const operations: DeprecatedOperation[] = []
  app.addHook('onRoute', (route) => {
    const lifecycle = route.config?.lifecycle
    if (lifecycle?.deprecatedAt === undefined) return
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      if (method === 'HEAD') continue
      operations.push({
        operationId: (route.schema as { operationId?: string } | undefined)?.operationId ?? route.url,
        method,
        path: route.url.replace(/:(\w+)/g, '{$1}'),
        deprecatedAt: lifecycle.deprecatedAt,
        ...(lifecycle.sunsetAt !== undefined && { sunsetAt: lifecycle.sunsetAt }),
        ...(lifecycle.successor !== undefined && { successor: lifecycle.successor })
      })
    }
  })
  return operations
}
