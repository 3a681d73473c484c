// The replay and recovery caps as the service applies them (issue 48 finding 4): what it asks the
// store for (the selection and the limits), what a refusal past the hour's cap answers (429
// rate_limited with Retry-After in whole seconds, at least 1), and that only a replay that queued
// something wakes the dispatcher. The store's own counting is the store contract's
// (test/webhooks/store.test.ts); here a stand-in store records the calls and answers as told.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Caller } from '../../src/accounts/caller.ts'
import { AppError } from '../../src/errors.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { createWebhookService, MAX_REPLAY, REPLAY_PER_HOUR } from '../../src/webhooks/webhooks.service.ts'
import type { ReplayLimits, ReplayResult, ReplaySelection, WebhookRecord, WebhookStore } from '../../src/webhooks/webhooks.store.ts'

const NOW = Date.parse('2026-11-29T10:20:00.000Z')
const OWNER: Caller = { keyId: 7, role: 'customer', plan: 'free', subject: 'key:7' }
const HOOK = { id: 'wh_1', ownerKeyId: 7 } as WebhookRecord

function serviceWith (answer: ReplayResult, replayLimits?: ReplayLimits) {
  const calls: Array<{ id: string; selection: ReplaySelection; now: number; limits: ReplayLimits }> = []
  let woken = 0
  const store = {
    getWebhook: async (id: string) => id === HOOK.id ? HOOK : null,
    replay: async (id: string, selection: ReplaySelection, now: number, limits: ReplayLimits) => {
      calls.push({ id, selection, now, limits })
      return answer
    }
  } as unknown as WebhookStore
  const service = createWebhookService(store, manualClock(NOW), {
    allowedHosts: [],
    onQueued: () => { woken++ },
    ...(replayLimits !== undefined && { replayLimits })
  })
  return { service, calls, woken: () => woken }
}

test('a replay asks the store within the documented caps by default, and one that queued wakes the dispatcher', async () => {
  const { service, calls, woken } = serviceWith({ queued: 3, nextSince: null })
  const since = '2026-11-29T09:00:00.000Z'
  assert.deepEqual(await service.replay(OWNER, HOOK.id, { since }), { queued: 3, nextSince: null })
  const selection = { since: Date.parse(since), until: NOW + 1 }
  assert.deepEqual(calls, [{ id: HOOK.id, selection, now: NOW, limits: { max: 1_000, perHour: 10_000 } }])
  assert.deepEqual([MAX_REPLAY, REPLAY_PER_HOUR], [1_000, 10_000])
  assert.equal(woken(), 1)
})

test('a recovery asks for the failed deliveries of its range only; nothing queued wakes nothing', async () => {
  const { service, calls, woken } = serviceWith({ queued: 0, nextSince: null }, { max: 5, perHour: 20 })
  const since = '2026-11-29T08:00:00.000Z'
  assert.deepEqual(await service.recover(OWNER, HOOK.id, { since }), { queued: 0, nextSince: null })
  const selection = { since: Date.parse(since), until: NOW + 1, onlyFailed: true }
  assert.deepEqual(calls.map((c) => [c.selection, c.limits]), [[selection, { max: 5, perHour: 20 }]])
  assert.equal(woken(), 0)
})

test('past the hour\'s cap: 429 rate_limited, Retry-After the whole seconds to the end of the hour, at least 1', async () => {
  for (const [retryAt, seconds] of [[NOW + 2_400_000, '2400'], [NOW + 1_500, '2'], [NOW + 1, '1'], [NOW, '1']] as const) {
    const { service, woken } = serviceWith({ refused: 'rate', retryAt }, { max: 5, perHour: 20 })
    await assert.rejects(service.replay(OWNER, HOOK.id, { eventIds: ['evt_1'] }), (error: unknown) => {
      assert.ok(error instanceof AppError)
      assert.equal(error.code, 'rate_limited')
      assert.deepEqual(error.headers, { 'retry-after': seconds })
      assert.equal(error.message, `this key holder's replays and recoveries queued 20 deliveries this hour; retry after ${seconds} s`)
      return true
    })
    assert.equal(woken(), 0, 'a refusal wakes nothing')
  }
})

test('another key holder\'s endpoint is not found, and its store is not asked', async () => {
  const { service, calls } = serviceWith({ queued: 1, nextSince: null })
  const other: Caller = { ...OWNER, keyId: 8, subject: 'key:8' }
  await assert.rejects(service.replay(other, HOOK.id, { since: '2026-11-29T09:00:00.000Z' }), (error: unknown) =>
    error instanceof AppError && error.code === 'not_found')
  assert.deepEqual(calls, [])
})

test('a subscription to a type the key may never see is refused before anything is stored, naming only those types', async () => {
  const { service } = serviceWith({ queued: 0, nextSince: null })
  const input = { url: 'https://hooks.example/in', types: ['order.*', 'inventory.low', 'webhook.test', 'pet.created'] }
  await assert.rejects(service.create(OWNER, input as Parameters<typeof service.create>[1]), (error: unknown) => {
    assert.ok(error instanceof AppError)
    assert.equal(error.code, 'forbidden')
    assert.equal(error.message, 'a customer key may not receive inventory.low, pet.created')
    return true
  })
})
