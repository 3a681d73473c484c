// Pass: the headers of every response. Route schemas declare only a route's own headers (ETag,
// Location, Link, a Retry-After of its own); the headers the pipeline adds to every response
// (rate limits, Request-Id, nosniff), to some statuses (WWW-Authenticate on 401, Retry-After on
// 429 and 503), to key administration (Cache-Control) and to deprecated operations are added
// here as $refs to components.headers, so the document says every header the server sends.
import type { OpenApiDocument } from '../types.ts'

/** Route schemas name headers in lower case (Fastify's); the document spells them as sent. */
const HEADER_NAMES: Record<string, string> = { etag: 'ETag', location: 'Location', link: 'Link', 'retry-after': 'Retry-After' }

/** Headers of every response of a deprecated operation (routing/lifecycle.ts sends them). */
const DEPRECATION_HEADERS = {
  Deprecation: { description: 'RFC 9745: when the operation was deprecated, as `@` and Unix seconds.', schema: { type: 'string' } },
  Sunset: { description: 'RFC 8594: when the operation stops working, as an HTTP-date.', schema: { type: 'string' } },
  Warning: { description: 'A `299` warning naming the sunset date.', schema: { type: 'string' } },
  'Link-Deprecation': { description: 'Links to the successor (`rel="successor-version"`) and to the deprecation notice (`rel="deprecation"`). Sent as `Link`.', schema: { type: 'string' } }
}

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: 'The quota of the window that binds first (the one with the fewest requests left).', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in that window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix time (seconds) at which that window resets.', schema: { type: 'integer' } },
  RateLimit: { description: 'Both windows, IETF draft syntax: `"minute";r=42;t=18, "day";r=958;t=40213` (r: remaining, t: seconds until reset).', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'Both quotas, IETF draft syntax: `"minute";q=60;w=60, "day";q=1000;w=86400`.', schema: { type: 'string' } },
  'Request-Id': { description: 'The request id, also in error bodies and the logs: the request\'s own `Request-Id` header when it looks like an id (a UUID, or 1 to 64 of `A-Z a-z 0-9 . _ : -`) and not like an API key (nothing containing `psk_`), else a new UUID.', schema: { type: 'string' } }
}

const OTHER_HEADERS = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
  'X-Content-Type-Options': { description: 'Always `nosniff`: a response is only ever read as the type it declares.', schema: { type: 'string', enum: ['nosniff'] } },
  'Cache-Control': { description: 'Always `no-store` on key administration: key records and new keys must not be kept by any cache.', schema: { type: 'string', enum: ['no-store'] } },
  'WWW-Authenticate': { description: 'The authentication scheme to use: `Bearer realm="petstore"` (the key may also be sent as `X-API-Key`).', schema: { type: 'string' } }
}

/** Headers on every /v1 response (http/response-headers.ts and the access hook send them). */
const EVERY_RESPONSE_HEADERS = [...Object.keys(RATE_LIMIT_HEADERS), 'X-Content-Type-Options']

/**
 * Statuses Node answers at the connection level (transport/connections.ts), before a request exists:
 * nothing is charged, so they carry Request-Id but no rate-limit or lifecycle header.
 */
const CONNECTION_LEVEL_STATUSES = new Set(['408', '431'])

/**
 * Node also answers malformed HTTP at the connection level, with a 400 that carries only these
 * (transport/connections.ts). Every other header of a 400 is therefore documented as not required:
 * the 400s of a parsed request (validation_failed) do carry them, charged as any request.
 */
const MALFORMED_HTTP_STATUS = '400'
const CONNECTION_LEVEL_HEADERS = new Set(['Request-Id', 'X-Content-Type-Options'])

export function addResponseHeaders (doc: OpenApiDocument): void {
  const components = doc.components
  const shared: Record<string, unknown> = Object.fromEntries(
    Object.entries({ ...RATE_LIMIT_HEADERS, ...DEPRECATION_HEADERS, ...OTHER_HEADERS })
      .map(([name, header]) => [name, { ...header, required: true }])
  )
  components.headers = shared
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers: Record<string, unknown> = {}
        if (CONNECTION_LEVEL_STATUSES.has(status)) {
          response.headers = { 'Request-Id': { $ref: '#/components/headers/Request-Id' }, 'X-Content-Type-Options': { $ref: '#/components/headers/X-Content-Type-Options' } }
          continue
        }
        for (const name of EVERY_RESPONSE_HEADERS) headers[name] = { $ref: `#/components/headers/${name}` }
        if (path.startsWith('/admin/') || path === '/admin') headers['Cache-Control'] = { $ref: '#/components/headers/Cache-Control' }
        if (status === '401') headers['WWW-Authenticate'] = { $ref: '#/components/headers/WWW-Authenticate' }
        if (status === '429' || status === '503') headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' }
        if (operation.deprecated === true) {
          for (const name of ['Deprecation', 'Sunset', 'Warning']) headers[name] = { $ref: `#/components/headers/${name}` }
          headers.Link = { $ref: '#/components/headers/Link-Deprecation' }
        }
        response.headers = Object.fromEntries(
          Object.entries(response.headers ?? {}).map(([name, header]) => [HEADER_NAMES[name] ?? name, header])
        )
        // Every header we document is always sent, except Link (only when there is a next page)
        // and a route's own Retry-After (GET /rate_limit: only while the caller must wait).
        for (const [name, header] of Object.entries(response.headers ?? {})) {
          if (name !== 'Link' && name !== 'Retry-After') (header as { required?: boolean }).required = true
        }
        response.headers = { ...headers, ...response.headers }
        if (status === MALFORMED_HTTP_STATUS) {
          for (const [name, header] of Object.entries(response.headers)) {
            if (CONNECTION_LEVEL_HEADERS.has(name)) continue
            const ref = (header as { $ref?: string }).$ref
            const target = (ref === undefined ? header : shared[ref.split('/').pop()!]) as { description: string }
            response.headers[name] = { ...target, required: false, description: `${target.description} Absent on a 400 for malformed HTTP, which Node answers before a request exists (like 408 and 431).` }
          }
        }
      }
    }
  }
}
