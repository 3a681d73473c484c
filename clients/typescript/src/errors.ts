import type { components } from './openapi.ts'

export type ErrorCode = components['schemas']['Error']['code']
export type ErrorDetail = NonNullable<components['schemas']['Error']['details']>[number]

/**
 * A non-2xx answer that was not retried, or the last one when retries ran out. `code` is from the
 * API's error catalogue; `unexpected_response` when the body was not the API's error object
 * (a proxy's HTML page, say).
 */
export class PetstoreError extends Error {
  readonly status: number
  readonly code: ErrorCode | 'unexpected_response'
  /** The `Request-Id` of the response: quote it when reporting a problem. */
  readonly requestId: string | null
  /** Seconds to wait, from `Retry-After`, when the server sent it. */
  readonly retryAfter: number | null
  /** Field-level problems of a `validation_failed`. */
  readonly details: ErrorDetail[] | undefined

  constructor (init: {
    status: number
    code: PetstoreError['code']
    message: string
    requestId: string | null
    retryAfter: number | null
    details?: ErrorDetail[] | undefined
  }) {
    super(init.message)
    this.name = 'PetstoreError'
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
    this.retryAfter = init.retryAfter
    this.details = init.details
  }
}

/** Builds the error of a non-2xx response from its body (already read as text) and headers. */
export function errorOf (response: Response, text: string): PetstoreError {
  const requestId = response.headers.get('request-id')
  const retryAfter = retryAfterSeconds(response.headers.get('retry-after'))
  let body: Partial<components['schemas']['Error']> | null = null
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { code?: unknown }).code === 'string') {
      body = parsed as Partial<components['schemas']['Error']>
    }
  } catch {
    body = null
  }
  if (body === null) {
    return new PetstoreError({ status: response.status, code: 'unexpected_response', message: `HTTP ${response.status} without the API's error object`, requestId, retryAfter })
  }
  return new PetstoreError({
    status: response.status,
    code: body.code as ErrorCode,
    message: body.message ?? `HTTP ${response.status}`,
    requestId: body.requestId ?? requestId,
    retryAfter,
    ...(body.code === 'validation_failed' && { details: body.details ?? [] })
  })
}

/** Retry-After is whole seconds (what this API sends) or an HTTP-date (RFC 9110). */
export function retryAfterSeconds (value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null
  if (/^\s*\d+\s*$/.test(value)) return Number(value)
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000))
}
