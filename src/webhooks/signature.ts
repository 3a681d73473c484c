// Standard Webhooks signatures (https://www.standardwebhooks.com): what a receiver checks with the
// official `standardwebhooks` package or the typed client's verifyWebhook. Written here on
// node:crypto because signing is one HMAC; the package is a test dependency that verifies it.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'
const SECRET_BYTES = 32
// Strict base64: Buffer.from(…, 'base64') would silently skip stray characters and sign with
// other bytes than the receiver decodes.
const SECRET_PATTERN = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret (): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

export interface SignInput {
  /** The event id: the webhook-id header, the same on every attempt. */
  id: string
  /** Unix seconds of this attempt: the webhook-timestamp header. */
  timestamp: number
  /** The exact bytes sent as the request body. */
  body: string
  /** The endpoint's secrets; during a rotation the old and the new, so a receiver holding either accepts. */
  secrets: readonly string[]
}

/** The webhook-signature header: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` per secret, space-separated. */
export function sign ({ id, timestamp, body, secrets }: SignInput): string {
  if (secrets.length === 0) throw new TypeError('a webhook is signed with at least one secret')
  if (!Number.isSafeInteger(timestamp)) throw new TypeError('the webhook timestamp is whole Unix seconds')
  const content = `${id}.${timestamp}.${body}`
  return secrets.map((secret) => `v1,${createHmac('sha256', secretKey(secret)).update(content).digest('base64')}`).join(' ')
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders (input: SignInput): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': sign(input)
  }
}

/**
 * The secrets' keys, made once: an HMAC given the key's bytes makes a key object of them at every
 * call (12 µs of the 15 a signature took; 2.4 with the object kept, docs/performance-history.md,
 * "Session 27"). At most KEYS_KEPT, the first made forgotten first: a secret no longer used
 * (rotated, its endpoint deleted) leaves once that many others came after it.
 */
const keys = new Map<string, KeyObject>()
export const KEYS_KEPT = 1024

/** How many secrets' keys are kept now (for the test of the bound). */
export const keptKeys = (): number => keys.size

function secretKey (secret: string): KeyObject {
  let key = keys.get(secret)
  if (key === undefined) {
    if (!SECRET_PATTERN.test(secret) || secret.length === SECRET_PREFIX.length) throw new TypeError('a webhook secret is whsec_ followed by base64')
    key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'))
    if (keys.size >= KEYS_KEPT) keys.delete(keys.keys().next().value!)
    keys.set(secret, key)
  }
  return key
}
