// The app for webhook tests: receivers on 127.0.0.1 allowed (WEBHOOK_ALLOWED_HOSTS), a short poll,
// and the system clock unless a test brings its own, so that the webhook-timestamp of a delivery
// is the real time the standardwebhooks package checks.
import type { TestContext } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { systemClock, type Clock } from '../../src/shared/clock.ts'
import type { Resolve } from '../../src/webhooks/url-guard.ts'
import type { WebhookRecord } from '../../src/webhooks/webhooks.store.ts'
import { buildTestApp, T0, type TestApp } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import type { Received, Receiver } from './receiver.ts'

export interface WebhookAppOptions {
  env?: Record<string, string>
  clock?: Clock
  resolve?: Resolve
}

export async function webhookApp (t: TestContext, options: WebhookAppOptions = {}): Promise<TestApp> {
  return await buildTestApp(t, {
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', ...options.env },
    deps: {
      clock: options.clock ?? systemClock,
      ...(options.resolve !== undefined && { webhooks: { resolve: options.resolve } })
    }
  })
}

export interface Subscribed { id: string; secret: string; url: string; types: string[]; status: string }

/** POST /v1/webhooks for the receiver's port on 127.0.0.1; fails the test on anything but 201. */
export async function subscribe (
  app: TestApp,
  receiver: Pick<Receiver, 'port'> | string,
  types: string[],
  key?: string
): Promise<Subscribed> {
  const url = typeof receiver === 'string' ? receiver : `http://127.0.0.1:${receiver.port}/hook`
  const response = await app.call({ method: 'POST', url: '/v1/webhooks', payload: { url, types }, ...(key !== undefined && { key }) })
  if (response.statusCode !== 201) throw new Error(`subscribe: ${response.statusCode} ${response.body}`)
  return response.json()
}

/** Waits until the receiver has `count` requests (at most `timeoutMs`), and returns them. */
export async function received (receiver: Receiver, count: number, timeoutMs = 3000): Promise<Received[]> {
  try {
    return (await pollUntil(
      async () => receiver.received.length >= count ? receiver.received.slice() : undefined,
      { timeoutMs, intervalMs: 10, message: `the receiver did not get ${count} deliveries` }
    )).value
  } catch (error) {
    // The count when the wait gave up (a message built before the wait would say 0).
    throw new Error(`${(error as Error).message}: it got ${receiver.received.length}`, { cause: error })
  }
}

/** Verifies one delivery with the official package and returns its payload. */
export function verified (
  delivery: Received,
  secret: string
): { id: string; type: string; timestamp: string; data: unknown } {
  return new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
    id: string
    type: string
    timestamp: string
    data: unknown
  }
}

/** An endpoint as a store keeps it, disabled (what a store's disabling methods answer), for stand-in stores. */
export function disabledEndpoint (
  id: string,
  ownerKeyId: number,
  fields: Pick<WebhookRecord, 'secret' | 'disabledReason' | 'failingSince' | 'version'>
): WebhookRecord {
  return {
    seq: 1,
    id,
    ownerKeyId,
    url: 'http://127.0.0.1:9/hook',
    types: ['webhook.test'],
    description: null,
    status: 'disabled',
    previousSecret: null,
    previousSecretUntil: null,
    createdAt: T0,
    updatedAt: T0,
    ...fields
  }
}
