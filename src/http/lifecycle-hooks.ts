// The runtime half of the lifecycle: headers on every response of a deprecated operation
// (errors included, so they are set before anything can fail) and 410 after the sunset.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { UsageRecorder } from '../access/usage.ts'
import { AppError } from '../errors.ts'
import type { Clock } from '../shared/clock.ts'
import type { DeprecatedOperation } from '../shared/deprecation.ts'
import { lifecycleHeaders, type Lifecycle } from '../routing/lifecycle.ts'

export interface LifecycleHookOptions {
  clock: Clock
  docsUrl: string
  /** Each call of a deprecated operation, with its key or without (ops/metrics.ts counts them). */
  onDeprecatedCall?: (operationId: string, keyId: number | null) => void
  /** Where a key's calls are counted for the console's deprecation view (access/usage.ts). */
  usage?: Pick<UsageRecorder, 'recordDeprecated'>
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

/** A lifecycle header, its value fixed text or a template filled from the path parameters. */
export type LifecycleHeader = readonly [name: string, value: Template | string]

/**
 * The lifecycle headers of a deprecated operation, built once per route (http/pipeline.ts sets
 * them first, so they are on 401s and 429s too); none for a stable one. A successor given as a
 * template (/v1/pets?id={petId}) is split once and filled from each request's path parameters.
 */
export function lifecycleHead (lifecycle: Lifecycle | undefined, docsUrl: string): readonly LifecycleHeader[] {
  if (lifecycle?.deprecatedAt === undefined) return []
  return Object.entries(lifecycleHeaders(lifecycle, { docsUrl }))
    .map(([name, value]) => [name, compile(value)] as const)
}

/** The value of a lifecycle header for this request. */
export function lifecycleValue (value: Template | string, request: FastifyRequest): string {
  return typeof value === 'string' ? value : fill(value, request.params as Record<string, string>)
}

/** A deprecated operation, as the sunset step reads it. */
export interface Deprecated { readonly operationId: string; readonly lifecycle: Lifecycle }

/**
 * Counts each call of a deprecated operation per key, and refuses it after the sunset: run by
 * the pipeline after the access decision (so the key is known, and the 410 is charged like any
 * call), for deprecated routes only, so other routes pay nothing.
 */
export function sunsetStep (
  options: LifecycleHookOptions
): (request: FastifyRequest, deprecated: Deprecated) => AppError | undefined {
  const { clock, usage } = options
  return (request, { operationId, lifecycle }) => {
    const keyId = request.principal?.keyId ?? null
    const now = clock.now()
    options.onDeprecatedCall?.(operationId, keyId)
    if (keyId !== null) usage?.recordDeprecated(operationId, keyId, now)
    if (lifecycle.sunsetAt === undefined || now < lifecycle.sunsetAt.getTime()) return undefined
    const successor = lifecycle.successor === undefined ? '' : `; use ${lifecycle.successor.method} ${lifecycle.successor.path}`
    return new AppError('operation_sunset', `this operation was retired on ${lifecycle.sunsetAt.toISOString()}${successor}`)
  }
}

/**
 * Adds the deprecated operations to `operations` as routes are declared (GET /admin/deprecations
 * lists them): the array, which the usage flush and the key admin read, fills while the app
 * registers its routes and is complete once it is ready. HEAD routes Fastify adds for GET are the
 * same operation and are skipped.
 */
export function collectDeprecatedOperations (app: FastifyInstance, operations: DeprecatedOperation[]): void {
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
}
