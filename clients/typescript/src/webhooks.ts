// Verifying a webhook delivery as Standard Webhooks says, with Web Crypto only (browsers, Node
// 18+, workers): the signature over `id.timestamp.body` with the endpoint's secret, and a
// timestamp within 5 minutes of the receiver's clock, so a captured delivery cannot be replayed
// later. Deliveries are at least once: deduplicate on `webhook-id` (the event id).

/**
 * What a delivery carries: the event's id (the feed's, and the `webhook-id` header's), its type,
 * when it happened, and the resource as a GET would show it.
 */
export interface WebhookPayload<T = unknown> { id: string; type: string; timestamp: string; data: T }

export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>

export interface VerifyWebhookOptions {
  /** The receiver's clock in epoch ms (default Date.now). */
  now?: () => number
  /** How far the timestamp may be from now, in seconds (default 300). */
  toleranceSeconds?: number
}

/** Why a delivery was refused: never process it. */
export class WebhookVerificationError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'WebhookVerificationError'
  }
}

const DEFAULT_TOLERANCE_SECONDS = 300

function header (headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const value = (headers as Record<string, string | readonly string[] | undefined>)[name]
  return typeof value === 'string' ? value : value?.[0]
}

function base64Bytes (text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

function base64Of (bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/** Compares without stopping at the first difference, so the time taken says nothing of the expected value. */
function sameText (a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/**
 * Checks a delivery and returns its payload; throws WebhookVerificationError when a header is
 * missing, the timestamp is more than 5 minutes off, or no `v1` signature matches the secret.
 * Pass the body exactly as received (the raw text, before any JSON parsing).
 */
export async function verifyWebhook<T = unknown> (
  body: string,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {}
): Promise<WebhookPayload<T>> {
  const id = header(headers, 'webhook-id')
  const timestamp = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (id === undefined || timestamp === undefined || signatures === undefined) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header')
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not Unix seconds')
  const now = Math.floor((options.now ?? Date.now)() / 1000)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (Math.abs(now - Number(timestamp)) > tolerance) throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`)
  if (!secret.startsWith('whsec_')) throw new WebhookVerificationError('the secret is whsec_ followed by base64')
  let keyBytes: Uint8Array<ArrayBuffer>
  try {
    keyBytes = base64Bytes(secret.slice('whsec_'.length))
  } catch {
    throw new WebhookVerificationError('the secret is whsec_ followed by base64')
  }
  const key = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`))
  const expected = base64Of(new Uint8Array(mac))
  // One `v1,<base64>` per live secret, space-separated (two during a secret rotation).
  const matches = signatures.split(' ').some((entry) => entry.startsWith('v1,') && sameText(entry.slice(3), expected))
  if (!matches) throw new WebhookVerificationError('no webhook-signature matches the secret')
  return JSON.parse(body) as WebhookPayload<T>
}
