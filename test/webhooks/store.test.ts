// The delivery side of the webhook store on a manual clock, on the engine of the run (SQLite, or
// PostgreSQL with PETSTORE_TEST_ENGINE=postgres): live owners at the fan-out and at the claim
// (issue 48 finding 3), each key holder's share of the claim (finding 2), replays bounded and
// never queued twice (finding 4), recovery of what failed, and a success that settles the
// event's other deliveries (issue 49 section 2).
import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import type { Caller } from '../../src/accounts/caller.ts'
import type { Role } from '../../src/accounts/plans.ts'
import { AppError } from '../../src/errors.ts'
import type { EventDraft } from '../../src/events/events.store.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { createWebhookService } from '../../src/webhooks/webhooks.service.ts'
import { disabledEvent } from '../../src/webhooks/webhooks.view.ts'
import type { ClaimedDelivery, DueClaim, ReplayLimits } from '../../src/webhooks/webhooks.store.ts'
import { T0 } from '../helpers/app.ts'
import { pollUntil } from '../helpers/server.ts'
import { openTestStores } from '../helpers/stores.ts'

const HOUR = 3_600_000
const LIMITS: ReplayLimits = { max: 1000, perHour: 10_000 }
/** Every event of a test: they are written from T0 + 1 on, a millisecond apart. */
const RANGE = { since: T0, until: T0 + 100 }

async function setup (t: TestContext): Promise<{
  stores: Stores
  key (role: Role, expiresAt?: number): Promise<number>
  endpoint (ownerKeyId: number, types?: string[]): Promise<string>
  categories (n: number): Promise<number[]>
  queueTests (webhookId: string, ownerKeyId: number, n: number): Promise<void>
  claim (over: Partial<DueClaim> & { now: number }): Promise<ClaimedDelivery[]>
  record (d: ClaimedDelivery, at: number, outcome: 'succeeded' | 'failed', nextAttemptAt?: number | null): Promise<void>
}> {
  const stores = await openTestStores(t)
  let keys = 0
  let endpoints = 0
  let names = 0
  return {
    stores,
    async key (role, expiresAt) {
      keys++
      return (await stores.keys.createKey({
        name: null, role, plan: 'enterprise', perMinute: null, perDay: null, hash: `h-${keys}`, prefix: `psk_${keys}`, now: T0,
        ...(expiresAt !== undefined && { expiresAt })
      })).id
    },
    async endpoint (ownerKeyId, types = ['category.*']) {
      const id = `wh_${String(++endpoints).padStart(24, '0')}`
      await stores.webhooks.createWebhook({
        id, ownerKeyId, url: 'http://127.0.0.1:9/', types, description: null, secret: 'whsec_store', now: T0
      }, 10)
      return id
    },
    /** `n` category.created events, one a millisecond from T0 + 1 on; returns their instants. */
    async categories (n) {
      const at: number[] = []
      for (let i = 0; i < n; i++) {
        names++
        await stores.categories.createCategory({ name: `Category ${names}` }, T0 + names)
        at.push(T0 + names)
      }
      return at
    },
    async queueTests (webhookId, ownerKeyId, n) {
      const draft: EventDraft = { type: 'webhook.test', audience: 'webhook', subjectKeyId: ownerKeyId, data: { webhookId } }
      for (let i = 0; i < n; i++) await stores.webhooks.queueTest(webhookId, draft, T0)
    },
    claim: (over) => stores.webhooks.claimDue({
      leaseOwner: 'instance-a', leaseUntil: over.now + 15_000, limit: 64, perEndpoint: 4, inFlight: {}, ...over
    }),
    async record (d, at, outcome, nextAttemptAt = null) {
      await stores.webhooks.recordAttempt({
        deliveryId: d.id, webhookId: d.webhookId, leaseOwner: 'instance-a', attempt: d.attempts + 1, kind: d.kind, at, outcome,
        status: outcome === 'succeeded' ? 204 : 500, error: outcome === 'succeeded' ? null : 'HTTP 500', durationMs: 1,
        nextAttemptAt: outcome === 'succeeded' ? null : nextAttemptAt, disableIfFailingSince: at - 5 * 24 * HOUR,
        disabledEvent: disabledEvent('failing')
      })
    }
  }
}

test('an endpoint whose owner has no live key at the fan-out or the claim gets nothing, and is disabled owner_inactive', async (t) => {
  const { stores, key, endpoint, categories, queueTests, claim } = await setup(t)
  const expiring = await key('staff', T0 + 1000)
  const live = await key('staff')
  const dead = await endpoint(expiring)
  const alive = await endpoint(live)
  await categories(1)
  // A test queued while the key lived, claimed after it expired: not attempted.
  await queueTests(dead, expiring, 1)
  await queueTests(alive, live, 1)

  assert.ok(await stores.webhooks.fanOut(T0 + 2000, 500) > 0)
  const claimed = await claim({ now: T0 + 2000 })
  assert.deepEqual([...new Set(claimed.map((d) => d.webhookId))], [alive], 'the expired owner\'s test delivery is not claimed')
  assert.deepEqual((await stores.webhooks.listDeliveries(alive, 10)).map((d) => d.type).sort(), ['category.created', 'webhook.test'])
  assert.deepEqual((await stores.webhooks.listDeliveries(dead, 10)).map((d) => d.type), ['webhook.test'], 'no delivery fanned out')

  const disabled = await stores.webhooks.disableInactiveOwners(T0 + 2000, disabledEvent('owner_inactive'))
  assert.deepEqual(disabled.map((w) => [w.id, w.status, w.disabledReason]), [[dead, 'disabled', 'owner_inactive']])
  assert.equal((await stores.webhooks.getWebhook(alive))!.status, 'enabled')
  assert.deepEqual(await stores.webhooks.disableInactiveOwners(T0 + 3000, disabledEvent('owner_inactive')), [], 'once')
  // On PostgreSQL the feed shows a transaction once every older one on the server has ended.
  const { value: [event] } = await pollUntil(async () => {
    const events = await stores.events.listEvents({
      visibility: { role: 'admin' },
      types: { exact: ['webhook.disabled'], prefixes: [] },
      after: null,
      limit: 10
    })
    return events.length > 0 ? events : undefined
  }, { timeoutMs: 5000, message: 'the webhook.disabled event in the feed' })
  assert.deepEqual([(event!.data as { id: string }).id, (event!.data as { reason: string }).reason], [dead, 'owner_inactive'])
})

test('the claim gives each key holder at most its share, and the holders with the fewest attempts in flight go first', async (t) => {
  const { key, endpoint, queueTests, claim } = await setup(t)
  const [a, b, c] = [await key('admin'), await key('admin'), await key('admin')]
  const aEndpoints = [await endpoint(a), await endpoint(a), await endpoint(a)]
  const bEndpoint = await endpoint(b)
  const cEndpoint = await endpoint(c)
  for (const id of aEndpoints) await queueTests(id, a, 5)
  await queueTests(bEndpoint, b, 5)
  await queueTests(cEndpoint, c, 1)

  const first = await claim({ now: T0 + 10, perOwner: 6, limit: 64 })
  const count = (claimed: ClaimedDelivery[], owner: number) => claimed.filter((d) => d.ownerKeyId === owner).length
  assert.deepEqual([count(first, a), count(first, b), count(first, c)], [6, 4, 1], 'a\'s three endpoints hold 6, not 12')

  // One slot left: it goes to the holder with none in flight, not to the first endpoint in turn.
  const { key: key2, endpoint: endpoint2, queueTests: queue2, claim: claim2 } = await setup(t)
  const [x, y] = [await key2('admin'), await key2('admin')]
  const xEndpoint = await endpoint2(x)
  const yEndpoint = await endpoint2(y)
  await queue2(xEndpoint, x, 5)
  await queue2(yEndpoint, y, 1)
  const next = await claim2({
    now: T0 + 10, limit: 1, perOwner: 16, inFlight: { [xEndpoint]: 2 }, inFlightByOwner: { [x]: 2 }
  })
  assert.deepEqual(next.map((d) => d.webhookId), [yEndpoint])
})

test('a replay queues at most its cap, oldest first, says where the rest begins, never queues an event twice, and keeps to the hour\'s count', async (t) => {
  const { stores, key, endpoint, categories } = await setup(t)
  const admin = await key('admin')
  const id = await endpoint(admin)
  const at = await categories(7)
  const range = RANGE
  const limits = { max: 3, perHour: 8 }
  const now = T0 + 200

  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { queued: 3, nextSince: at[3] })
  // The same range again: the three already queued are not queued twice.
  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { queued: 3, nextSince: at[6] })
  assert.equal((await stores.webhooks.pendingStats()).pending, 6)
  // Two of the hour's eight are left: one event is, and the request is not cut.
  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { queued: 1, nextSince: null })
  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { queued: 0, nextSince: null })
  const eightMore = await categories(2)
  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { queued: 1, nextSince: eightMore[1] })
  const hourEnds = T0 - (T0 % HOUR) + HOUR
  assert.deepEqual(await stores.webhooks.replay(id, range, now, limits), { refused: 'rate', retryAt: hourEnds })
  assert.deepEqual(await stores.webhooks.replay(id, range, hourEnds, limits), { queued: 1, nextSince: null }, 'a new hour')
  assert.deepEqual(await stores.webhooks.replay(id, range, hourEnds, LIMITS), { queued: 0, nextSince: null })
  assert.equal((await stores.webhooks.pendingStats()).pending, 9)
})

// Issue 49: the attempt a replay made due was listed as a retry; it is the replay's (kind replay),
// and only the retries after it, on the schedule, are retries again.
test('a replay of an event whose retry waits makes that delivery due now instead of queuing another, and that attempt is a replay', async (t) => {
  const { stores, key, endpoint, categories, claim, record } = await setup(t)
  const admin = await key('admin')
  const id = await endpoint(admin)
  await categories(1)
  await stores.webhooks.fanOut(T0 + 10, 500)
  const [first] = await claim({ now: T0 + 20 })
  assert.equal(first!.kind, 'first')
  await record(first!, T0 + 30, 'failed', T0 + HOUR)
  const kinds = async () => (await stores.webhooks.listDeliveries(id, 10)).map((d) => [d.attempt, d.kind, d.outcome])
  assert.deepEqual(await kinds(), [[2, 'retry', 'pending'], [1, 'first', 'failed']])
  assert.deepEqual(await stores.webhooks.replay(id, RANGE, T0 + 40, LIMITS), { queued: 1, nextSince: null })
  assert.deepEqual(await kinds(), [[2, 'replay', 'pending'], [1, 'first', 'failed']], 'the waiting retry is now the replay')
  const [again] = await claim({ now: T0 + 40 })
  assert.deepEqual([again!.id, again!.attempts, again!.kind], [first!.id, 1, 'replay'], 'the same delivery, its second attempt, a replay')
  await record(again!, T0 + 50, 'failed', T0 + 2 * HOUR)
  assert.deepEqual(await kinds(), [[3, 'retry', 'pending'], [2, 'replay', 'failed'], [1, 'first', 'failed']], 'the next on the schedule is a retry')
  const [third] = await claim({ now: T0 + 2 * HOUR })
  await record(third!, T0 + 2 * HOUR, 'succeeded')
  assert.deepEqual(await kinds(), [[3, 'retry', 'succeeded'], [2, 'replay', 'failed'], [1, 'first', 'failed']])
  assert.equal((await stores.webhooks.pendingStats()).pending, 0)
})

test('a success settles the event\'s other waiting deliveries to the endpoint, even one in flight', async (t) => {
  const { stores, key, endpoint, categories, claim, record } = await setup(t)
  const admin = await key('admin')
  const id = await endpoint(admin)
  await categories(1)
  // The replay comes before the fan-out has read the event: two deliveries of one event.
  assert.deepEqual(await stores.webhooks.replay(id, RANGE, T0 + 5, LIMITS), { queued: 1, nextSince: null })
  await stores.webhooks.fanOut(T0 + 6, 500)
  assert.equal((await stores.webhooks.pendingStats()).pending, 2)
  const both = await claim({ now: T0 + 10 })
  assert.equal(both.length, 2)
  await record(both[0]!, T0 + 20, 'succeeded')
  assert.deepEqual(await stores.webhooks.pendingStats(), { pending: 0, oldestCreatedAt: null })
  // The other attempt, in flight meanwhile, fails: its delivery stays settled, never retried.
  await record(both[1]!, T0 + 30, 'failed', T0 + 1000)
  assert.equal((await stores.webhooks.pendingStats()).pending, 0)
  assert.deepEqual(await claim({ now: T0 + 2000 }), [])
  const list = await stores.webhooks.listDeliveries(id, 10)
  assert.deepEqual(list.map((d) => [d.kind, d.outcome]).sort(), [['first', 'failed'], ['replay', 'succeeded']].sort())
  assert.ok(list.every((d) => typeof d.id === 'number'), 'attempts have ids')
})

test('a recovery queues only the events whose delivery failed for good and that nothing brought since', async (t) => {
  const { stores, key, endpoint, categories, claim, record } = await setup(t)
  const admin = await key('admin')
  const id = await endpoint(admin)
  const [lost, delivered, retrying, recovered] = await categories(4)
  await stores.webhooks.fanOut(T0 + 10, 500)
  const claimed = await claim({ now: T0 + 20 })
  const of = (at: number) => claimed.find((d) => d.event.createdAt === at)!
  await record(of(lost!), T0 + 30, 'failed', null)
  await record(of(delivered!), T0 + 30, 'succeeded')
  await record(of(retrying!), T0 + 30, 'failed', T0 + HOUR)
  await record(of(recovered!), T0 + 30, 'failed', null)
  // The last one failed for good, then a replay brought it.
  await stores.webhooks.replay(id, { eventIds: [of(recovered!).event.id] }, T0 + 40, LIMITS)
  const [replayed] = await claim({ now: T0 + 50 })
  await record(replayed!, T0 + 60, 'succeeded')

  const recover = { since: T0, until: T0 + 100, onlyFailed: true } as const
  assert.deepEqual(await stores.webhooks.replay(id, recover, T0 + 70, LIMITS), { queued: 1, nextSince: null })
  const [again] = await claim({ now: T0 + 80 })
  assert.equal(again!.event.id, of(lost!).event.id)
  assert.deepEqual(await stores.webhooks.replay(id, recover, T0 + 90, LIMITS), { queued: 0, nextSince: null }, 'not twice')
})

test('past the hour\'s count a replay or recovery is 429 rate_limited, with Retry-After until the hour ends', async (t) => {
  const { stores, key, endpoint, categories } = await setup(t)
  const staff = await key('staff')
  const id = await endpoint(staff)
  await categories(3)
  const now = T0 + 1000
  const webhooks = createWebhookService(stores.webhooks, { now: () => now }, {
    allowedHosts: [],
    replayLimits: { max: 2, perHour: 2 }
  })
  const caller: Caller = { keyId: staff, role: 'staff', plan: 'enterprise', subject: `key:${staff}` }
  const since = new Date(T0).toISOString()
  assert.deepEqual(await webhooks.replay(caller, id, { since }), { queued: 2, nextSince: T0 + 3 })
  const refused = await webhooks.recover(caller, id, { since }).then(() => null, (error: unknown) => error)
  assert.ok(refused instanceof AppError)
  const secondsLeft = Math.ceil((T0 - (T0 % HOUR) + HOUR - now) / 1000)
  assert.deepEqual([refused.code, refused.status, refused.headers], ['rate_limited', 429, { 'retry-after': String(secondsLeft) }])
})
