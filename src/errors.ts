// The error catalogue: every code a client can receive, its HTTP status and what it means.
// One table, used by the error handler (code -> status), by the OpenAPI document (which codes
// an operation can return, with their descriptions) and by the tests. No framework imports.

export const ERROR_CATALOGUE = {
  validation_failed: { status: 400, description: 'The body, path or query is malformed: wrong type, out of bounds, unknown field, malformed JSON or cursor.' },
  unauthenticated: { status: 401, description: 'The API key is missing, unknown or revoked.' },
  api_key_expired: { status: 401, description: 'The API key has expired (its `expiresAt` has passed, at the end of a rotation\'s grace period for instance); the message names the instant. Use its successor or ask an admin for a new key.' },
  portal_link_invalid: { status: 401, description: 'Partner portal only (POST /portal/session): the one-time link is unknown, already used, expired (15 minutes), or made for a key revoked or expired since; the message says which. Ask for a new link.' },
  portal_session_ended: { status: 401, description: 'Partner portal only (/portal/session, /portal/api/v1/*): no portal session, or it ended (signed out, idle for an hour, 24 hours old, or its key revoked, expired or rotated past its grace period). Open a new link.' },
  forbidden: { status: 403, description: 'The API key is valid but its role may not do this.' },
  csrf_token_invalid: { status: 403, description: 'Partner portal only (/portal/api/v1/*, DELETE /portal/session): a request other than GET or HEAD without the session\'s `X-CSRF-Token`, or with another value; nothing was changed.' },
  insufficient_scope: { status: 403, description: 'The API key is restricted to scopes, and this operation needs one it does not hold (the message names it); nothing was changed. Ask an admin for a key with that scope.' },
  not_found: { status: 404, description: 'No such record or path (also: an order that belongs to another customer).' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method; see the Allow header.' },
  pet_not_available: { status: 409, description: 'The pet is not available for ordering.' },
  insufficient_stock: { status: 409, description: 'The stock does not cover the quantity ordered.' },
  order_already_complete: { status: 409, description: 'A complete order cannot be changed or cancelled.' },
  category_in_use: { status: 409, description: 'The category still has pets.' },
  pet_has_open_orders: { status: 409, description: 'The pet has open orders.' },
  order_limit_reached: { status: 409, description: 'The customer key already holds as many open orders, or as many units of this pet in open orders, as its plan allows (free: 5 orders, 10 units of a pet); complete, cancel or let an open order expire first.' },
  order_cooldown: { status: 409, description: 'The customer key cancelled an order of this pet, or let one lapse, a short while ago (5 minutes by default): it may not hold the same pet again until the cool-down ends, so that others get their turn. The message names the instant it ends.' },
  idempotency_key_reused: { status: 409, description: 'The Idempotency-Key was already used with another request.' },
  api_key_not_rotatable: { status: 409, description: 'Only a live key can be rotated: this one is revoked, expired, or already replaced by an earlier rotation (rotate its successor instead).' },
  webhook_limit_reached: { status: 409, description: 'The key holder already has 10 webhook endpoints; delete one first.' },
  webhook_url_forbidden: { status: 400, description: 'The webhook URL is refused: it must be https, carry no user name or password, and its host must resolve only to public addresses (no loopback, private, link-local, CGNAT, multicast or reserved range; SECURITY.md).' },
  operation_sunset: { status: 410, description: 'The operation has passed its sunset date.' },
  request_timeout: { status: 408, description: 'The request did not arrive in time: its headers within 10 s, the whole request within 30 s (the defaults). Answered before the request is read, so without rate-limit headers; the connection is closed.' },
  precondition_failed: { status: 412, description: 'If-Match does not match the current ETag.' },
  payload_too_large: { status: 413, description: 'The body is larger than 64 KiB.' },
  unsupported_media_type: { status: 415, description: 'The body is not application/json.' },
  expectation_failed: { status: 417, description: 'The request carries an Expect header other than `100-continue`, which the server cannot meet. Answered before the request is read, so without rate-limit headers; the connection is closed.' },
  category_not_found: { status: 422, description: 'The body names a category that does not exist.' },
  pet_not_found: { status: 422, description: 'The body names a pet that does not exist.' },
  headers_too_large: { status: 431, description: 'The request line and headers exceed 16 KiB. Answered before the request is read, so without rate-limit headers; the connection is closed.' },
  rate_limited: { status: 429, description: 'A quota window is used up; retry after Retry-After seconds.' },
  tool_call_repeated: { status: 429, description: 'Through MCP only (a tool result, never an HTTP answer): the same tool with the same arguments was called more than MCP_REPEAT_LIMIT times in a minute by one key; change the arguments or wait retryAfter seconds.' },
  api_key_banned: { status: 429, description: 'The key kept calling while told to wait and is banned until Retry-After.' },
  address_banned: { status: 429, description: 'Requests without a valid key from this client address kept calling while told to wait, and are banned until Retry-After; the message names the address. A valid key from the same address is still served.' },
  internal_error: { status: 500, description: 'An unexpected error; it is logged with the request id.' },
  service_unavailable: {
    status: 503,
    description: 'A backing service is unreachable, or the answer was not ready within REQUEST_TIMEOUT_MS; retry after Retry-After seconds.'
  },
  connection_limit_reached: { status: 503, description: 'The connection arrived past a connection cap (the client address\'s share, or the whole server\'s) while no connection could make room; retry after Retry-After seconds. Answered before the request is routed, so without rate-limit headers; the connection is closed.' }
} as const satisfies Record<string, { status: number; description: string }>

export type ErrorCode = keyof typeof ERROR_CATALOGUE

export interface ErrorDetail { path: string; message: string }

/**
 * An error answer lists at most this many details, then `detailsTotal` says how many there were:
 * a 63 KB body of unknown fields once drew a 358 KB answer, so a refusal now costs less than
 * the request that caused it.
 */
export const MAX_ERROR_DETAILS = 20
/** A detail's path and message are cut to this many characters (a field name may be 60 KB long). */
export const MAX_DETAIL_TEXT = 120

export function clipText (text: string, max = MAX_DETAIL_TEXT): string {
  if (text.length <= max) return text
  // Never cut a surrogate pair in half.
  const end = /[\uD800-\uDBFF]/.test(text.charAt(max - 2)) ? max - 2 : max - 1
  return `${text.slice(0, end)}…`
}

/**
 * An error a client can be told about. The handler maps `code` to the status via the catalogue.
 *
 * A refusal (a 4xx) is built without a stack trace: it is an answer, not a fault. Nothing reads
 * its stack (the handler logs the errors of 5xx answers only), and capturing one was 12% of the
 * CPU of an order refused at the owner's cap (docs/performance.md). Its `stack` is then the
 * first line alone ("Error: message"). A 5xx (ServiceUnavailableError) keeps its whole stack.
 */
export class AppError extends Error {
  readonly code: ErrorCode
  readonly details: ErrorDetail[] | undefined
  /** Extra response headers (Allow, Retry-After). */
  readonly headers: Record<string, string> | undefined

  constructor (
    code: ErrorCode,
    message: string,
    options?: { details?: ErrorDetail[]; headers?: Record<string, string>; cause?: unknown }
  ) {
    const limit = Error.stackTraceLimit
    if (ERROR_CATALOGUE[code].status < 500) Error.stackTraceLimit = 0
    try {
      super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    } finally {
      Error.stackTraceLimit = limit
    }
    this.name = 'AppError'
    this.code = code
    this.details = options?.details
    this.headers = options?.headers
  }

  get status (): number {
    return ERROR_CATALOGUE[this.code].status
  }
}

// Named factories: each message that more than one place (a service, both storage engines) can
// send is written here once, so the wording cannot drift between engines. The store contract
// suite (test/storage/contract.ts) asserts these messages on every engine.
export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`)
export const preconditionFailed = (): AppError =>
  new AppError('precondition_failed', 'If-Match does not match the current ETag of the resource')
export const petNotFound = (petId: number): AppError => new AppError('pet_not_found', `pet ${petId} does not exist`)
export const categoryNotFound = (categoryId: number): AppError => new AppError('category_not_found', `category ${categoryId} does not exist`)
export const petNotAvailable = (petId: number, status: string): AppError =>
  new AppError('pet_not_available', `pet ${petId} is ${status}, not available`)
export const insufficientStock = (petId: number, stock: number, quantity: number): AppError =>
  new AppError('insufficient_stock', `only ${stock} left of pet ${petId}; ${quantity} asked`)
export const orderAlreadyComplete = (orderId: number): AppError =>
  new AppError('order_already_complete', `order ${orderId} is complete and can no longer change`)
export const categoryInUse = (categoryId: number): AppError =>
  new AppError('category_in_use', `category ${categoryId} still has pets; move or delete them first`)
export const petHasOpenOrders = (petId: number): AppError =>
  new AppError('pet_has_open_orders', `pet ${petId} has open orders; complete or cancel them first`)
/** Rule 9: the caller's plan caps its open orders (`openOrders`) and its units of one pet in them (`unitsPerPet`). */
export const orderLimitReached = (message: string): AppError => new AppError('order_limit_reached', message)
/** Rule 11: the owner cancelled or let lapse an order of the pet, and may hold it again from `until` (epoch ms). */
export const orderCooldown = (petId: number, until: number): AppError =>
  new AppError('order_cooldown', `you cancelled or let lapse an order of pet ${petId} recently; you may order it again from ${new Date(until).toISOString()}`)
export const webhookLimitReached = (max: number): AppError =>
  new AppError('webhook_limit_reached', `at most ${max} webhook endpoints per key holder; delete one first`)
export const idempotencyKeyReused = (): AppError =>
  new AppError('idempotency_key_reused', 'this Idempotency-Key was already used with a different request')

/** A backing service (database) is unreachable: 503 with Retry-After, never a 500. */
export class ServiceUnavailableError extends AppError {
  constructor (message: string, cause?: unknown) {
    super('service_unavailable', message, { headers: { 'retry-after': '5' }, cause })
  }
}
