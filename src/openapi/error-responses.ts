// Error responses, added to each /v1 route's schema as it is declared (an onRoute hook, before
// @fastify/swagger reads the schema): one response per status, listing the codes the operation
// can return, derived from what the route declares (config.errors, config.role, config.scope, its schemas,
// config.lifecycle) plus the cross-cutting codes of every authenticated operation.
import type { FastifySchema, RouteOptions } from 'fastify'
import { ERROR_CATALOGUE, type ErrorCode } from '../errors.ts'
import { isApiPath } from '../shared/api-path.ts'
import { ErrorSchema, Reply } from '../shared/schemas.ts'

/**
 * Codes any authenticated /v1 operation can return, whatever it declares (validation_failed: a key
 * sent in the query string; request_timeout, headers_too_large: answered by Node at the connection
 * level).
 */
const CROSS_CUTTING: ErrorCode[] = ['validation_failed', 'unauthenticated', 'api_key_expired', 'rate_limited', 'api_key_banned', 'address_banned', 'internal_error', 'service_unavailable', 'request_timeout', 'headers_too_large']

/** The error codes an operation can return: its own and the cross-cutting ones, derived from its declaration. */
export function errorCodesOf (route: Pick<RouteOptions, 'schema' | 'config' | 'method'>): ErrorCode[] {
  const config = route.config as {
    role?: string
    scope?: unknown
    errors?: ErrorCode[]
    lifecycle?: { sunsetAt?: Date }
  } | undefined
  const schema = route.schema as FastifySchema | undefined
  const codes = new Set<ErrorCode>(config?.errors ?? [])
  if (schema?.params !== undefined || schema?.querystring !== undefined || schema?.body !== undefined
    || schema?.headers !== undefined) codes.add('validation_failed')
  if (schema?.body !== undefined) { codes.add('payload_too_large'); codes.add('unsupported_media_type') }
  if (config?.role !== undefined && config.role !== 'customer' && config.role !== 'none') codes.add('forbidden')
  // A restricted key without the operation's scope (access/refusals.ts).
  if (config?.scope !== undefined && config.scope !== null) codes.add('insufficient_scope')
  if (config?.lifecycle?.sunsetAt !== undefined) codes.add('operation_sunset')
  // Role none needs no key, so no key is refused for it (a valid one is still charged, and may be banned).
  for (const code of CROSS_CUTTING) if (config?.role !== 'none' || (code !== 'unauthenticated' && code !== 'api_key_expired')) codes.add(code)
  return [...codes]
}

/** Adds the error responses (one per status, listing its codes) to every /v1 route's schema. */
export function addErrorResponses (route: RouteOptions): void {
  if (!isApiPath(route.url) || route.schema === undefined) return
  // @fastify/swagger copies x- keys to the operation; finish() turns this one into requestBody.required.
  if (route.config?.optionalBody === true) (route.schema as Record<string, unknown>)['x-optional-body'] = true
  const response = ((route.schema as FastifySchema).response ??= {}) as Record<string, unknown>
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of errorCodesOf(route)) {
    const status = ERROR_CATALOGUE[code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    // The example is the first code's error object, so every response body has one.
    const first = codes[0]!
    const own = route.config?.errorExamples?.find((e) => ERROR_CATALOGUE[e.code].status === status)
    const example = {
      code: own?.code ?? first,
      message: own?.message ?? ERROR_CATALOGUE[first].description,
      status,
      requestId: '6f1c2b8e-3d4a-4c5b-9e7f-0a1b2c3d4e5f',
      ...(own?.details !== undefined && { details: own.details })
    }
    response[status] = Reply(
      codes.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].description}`).join(' '),
      { ...ErrorSchema, examples: [example] }
    )
  }
}
