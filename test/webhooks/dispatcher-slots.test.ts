// The dispatcher's slot rules (issue 48 finding 2) driven by hand: a stand-in store records what
// each claim asks for and hands out the deliveries a test queued; a real receiver on 127.0.0.1
// holds every request until the test answers it, so each attempt stays in flight exactly as long
// as the test wants. What is asserted is what the dispatcher does with its slots: the room and
// the counts per endpoint and per key holder it gives the claim, the lease it asks for, and
// whether an attempt that ends starts the next round at once (the claim filled its room or a
// share), makes a running round run again, or waits for the next poll. The HTTP tests
// (fairness, owners, settle) see one snapshot of these; the fair-slots part of scripts/mutate.ts
// runs this file before them (a mutant it kills costs a second, not a server).
import assert from 'node:assert/strict'
import type { ServerResponse } from 'node:http'
import { test, type TestContext } from 'node:test'
import { manualClock } from '../../src/shared/clock.ts'
import { telemetry } from '../../src/telemetry/hooks.ts'
import { createDispatcher, ownerShare, type WebhookSettings } from '../../src/webhooks/dispatcher.ts'
import { newSecret } from '../../src/webhooks/signature.ts'
import type {
  AttemptRecord, ClaimedDelivery, DueClaim, RefillWithRecord, WebhookRecord, WebhookStore
} from '../../src/webhooks/webhooks.store.ts'
import { isLoopback, T0 } from '../helpers/app.ts'
import { disabledEndpoint } from './helpers.ts'
import { startReceiver } from './receiver.ts'

const SECRET = newSecret()
const TIMEOUT_MS = 2000
const LEASE_MARGIN_MS = 5000

/** What one claim asked for, copied when it was made (the dispatcher counts on in its own maps). */
interface Claim {
  now: number
  leaseUntil: number
  limit: number
  perEndpoint: number
  perOwner: number | undefined
  inFlight: Record<string, number>
  inFlightByOwner: Record<string, number>
  refill: boolean | undefined
}

/** An endpoint as the store keeps it (what disableInactiveOwners answers). */
function record (id: string, ownerKeyId: number): WebhookRecord {
  return disabledEndpoint(id, ownerKeyId, { secret: SECRET, disabledReason: 'owner_inactive', failingSince: null, version: 1 })
}

interface Line { fields: Record<string, unknown>; message: string }

interface Options {
  settings?: Partial<WebhookSettings>
  /** Without a logger (deps.log absent). */
  noLog?: boolean
  /**
   * The store runs a record's refill (RefillWithRecord) as PostgreSQL's does: the claim asked for
   * when the record is written, answered from the queue, and kept in `refills` (not `claims`).
   */
  refillWithRecord?: boolean
}

/** A claim as it was asked for (the dispatcher counts on in its own maps). */
const copy = (claim: DueClaim): Claim => ({
  now: claim.now,
  leaseUntil: claim.leaseUntil,
  limit: claim.limit,
  perEndpoint: claim.perEndpoint,
  perOwner: claim.perOwner,
  inFlight: { ...claim.inFlight },
  inFlightByOwner: { ...claim.inFlightByOwner },
  refill: claim.refill
})

async function harness (t: TestContext, options: Options = {}) {
  const clock = manualClock(T0)
  // Each request is held, by its delivery id (the URL's path), until the test answers it.
  const held = new Map<number, ServerResponse>()
  const receiver = await startReceiver(t, (req, res) => { held.set(Number(req.url!.slice(1)), res) })
  const claims: Claim[] = []
  const refills: Claim[] = []
  const answers: ClaimedDelivery[][] = []
  const recorded: AttemptRecord[] = []
  const failRecording = new Set<number>()
  const inactive: WebhookRecord[][] = []
  const disableCalls: Array<{ now: number; reason: unknown }> = []
  // What each fan-out answers (how many events it read; none queued: 0), and what each asked.
  const fanOutAnswers: number[] = []
  const fanOuts: Array<{ now: number; max: number }> = []
  let failClaims = 0
  const warned: Line[] = []
  const informed: Line[] = []
  let gate: Promise<void> | null = null
  const store = {
    async disableInactiveOwners (now: number, event: (webhook: WebhookRecord) => { data: unknown }) {
      disableCalls.push({ now, reason: (event(record('wh_probe', 1)).data as { reason: unknown }).reason })
      if (gate !== null) await gate
      return inactive.shift() ?? []
    },
    async fanOut (now: number, max: number) {
      fanOuts.push({ now, max })
      return fanOutAnswers.shift() ?? 0
    },
    async claimDue (claim: DueClaim) {
      if (failClaims > 0) {
        failClaims--
        throw new Error('the database went away')
      }
      claims.push(copy(claim))
      return answers.shift() ?? []
    },
    async recordAttempt (record: AttemptRecord, refill?: RefillWithRecord) {
      recorded.push(record)
      if (failRecording.has(record.deliveryId)) throw new Error('the database went away')
      const claim = options.refillWithRecord === true ? refill?.claim() ?? null : null
      if (claim !== null) {
        refills.push(copy(claim))
        refill!.claimed(answers.shift() ?? [], claim)
      }
      return null
    },
    pruneAttemptDetails: async () => 0
  } as unknown as WebhookStore
  const settings: WebhookSettings = {
    timeoutMs: TIMEOUT_MS,
    retryScheduleMs: [3_600_000],
    allowedHosts: ['127.0.0.1'],
    maxInFlight: 64,
    maxInFlightPerEndpoint: 4,
    pollMs: 250,
    ...options.settings
  }
  const dispatcher = createDispatcher({
    store,
    clock,
    settings,
    resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    mayConnect: isLoopback,
    ...(options.noLog !== true && {
      log: {
        warn: (fields, message) => { warned.push({ fields: fields as Record<string, unknown>, message }) },
        info: (fields, message) => { informed.push({ fields: fields as Record<string, unknown>, message }) }
      }
    })
  })
  const answer = (id: number): void => {
    const res = held.get(id)
    assert.ok(res !== undefined, `delivery ${id} is held`)
    held.delete(id)
    res.writeHead(204).end()
  }
  t.after(async () => {
    for (const id of [...held.keys()]) answer(id)
    await dispatcher.drain()
  })
  return {
    clock,
    dispatcher,
    claims,
    refills,
    recorded,
    failRecording,
    inactive,
    disableCalls,
    fanOutAnswers,
    fanOuts,
    warned,
    informed,
    /** What the next claim hands out (each claim takes one list; none queued: nothing). */
    queue (...deliveries: ClaimedDelivery[]) { answers.push(deliveries) },
    /** The next claim throws (a database gone away): the round fails. */
    failNextClaim () { failClaims++ },
    /** Whether a claim is still to fail. */
    claimFailing: () => failClaims > 0,
    delivery (id: number, webhookId: string, ownerKeyId: number): ClaimedDelivery {
      return {
        id,
        webhookId,
        ownerKeyId,
        url: `http://127.0.0.1:${receiver.port}/${id}`,
        secrets: [SECRET],
        attempts: 0,
        event: {
          id: `evt_${id}`,
          type: 'webhook.test',
          createdAt: T0,
          audience: 'webhook',
          subjectKeyId: ownerKeyId,
          data: {},
          position: { tx: '1', seq: id }
        },
        testType: null,
        kind: 'first',
        requestBody: '{}'
      }
    },
    /** Until these deliveries' requests are at the receiver (their attempts in flight). */
    async arrived (...ids: number[]) {
      await until(() => ids.every((id) => held.has(id)), `deliveries ${ids.join(', ')} at the receiver`)
    },
    /**
     * Answers these held requests and waits until their attempts have ended: recorded, then
     * released (the release follows the recording within the same turn of the event loop).
     */
    async end (...ids: number[]) {
      for (const id of ids) answer(id)
      await until(() => ids.every((id) => recorded.some((r) => r.deliveryId === id)), `deliveries ${ids.join(', ')} recorded`)
      await new Promise((resolve) => setImmediate(resolve))
    },
    /** Opens a gate the next round waits at (before its fan-out and claim); call the result to let it on. */
    hold (): () => void {
      let open!: () => void
      gate = new Promise((resolve) => { open = resolve })
      return () => { gate = null; open() }
    }
  }
}

/** Polls every 2 ms, up to 3 s. */
async function until (condition: () => boolean, what: string): Promise<void> {
  const started = Date.now()
  while (!condition()) {
    if (Date.now() - started > 3000) throw new Error(`gave up waiting: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/**
 * Long enough for a round a wake asked for to have claimed: the wake's timer is 0 ms and the
 * stand-in store answers at once (microtasks).
 */
const quiet = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 30))

test('a key holder\'s share: maxInFlightPerOwner when set, else a quarter of the slots but never less than an endpoint\'s', async (t) => {
  const base = { timeoutMs: 1, retryScheduleMs: [], allowedHosts: [], pollMs: 1 }
  assert.equal(ownerShare({ ...base, maxInFlight: 64, maxInFlightPerEndpoint: 4 }), 16)
  assert.equal(ownerShare({ ...base, maxInFlight: 10, maxInFlightPerEndpoint: 1 }), 2, 'a quarter, rounded down')
  assert.equal(ownerShare({ ...base, maxInFlight: 8, maxInFlightPerEndpoint: 4 }), 4, 'an endpoint\'s share at least')
  assert.equal(ownerShare({ ...base, maxInFlight: 64, maxInFlightPerEndpoint: 4, maxInFlightPerOwner: 3 }), 3)
  // And the claim is given it, with the endpoint's share.
  const { dispatcher, claims } = await harness(t, { settings: { maxInFlight: 40, maxInFlightPerEndpoint: 3 } })
  await dispatcher.tick()
  assert.deepEqual([claims[0]!.perEndpoint, claims[0]!.perOwner], [3, 10])
})

test('the room: the claim asks for maxInFlight less the attempts held, none at all when they fill it, and at once when one ends', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 3, maxInFlightPerEndpoint: 2, maxInFlightPerOwner: 2 } })
  h.queue(h.delivery(1, 'wh_a', 1))
  await h.dispatcher.tick()
  await h.arrived(1)
  assert.deepEqual(h.claims[0], {
    now: T0,
    leaseUntil: T0 + TIMEOUT_MS + LEASE_MARGIN_MS,
    limit: 3,
    perEndpoint: 2,
    perOwner: 2,
    inFlight: {},
    inFlightByOwner: {},
    refill: false
  })
  assert.equal(h.dispatcher.inFlight(), 1)

  // The lease counts from the claim's own time.
  h.clock.advance(1000)
  h.queue(h.delivery(2, 'wh_b', 2), h.delivery(3, 'wh_c', 3))
  await h.dispatcher.tick()
  await h.arrived(2, 3)
  assert.deepEqual(h.claims[1], {
    now: T0 + 1000,
    leaseUntil: T0 + 1000 + TIMEOUT_MS + LEASE_MARGIN_MS,
    limit: 2,
    perEndpoint: 2,
    perOwner: 2,
    inFlight: { wh_a: 1 },
    inFlightByOwner: { 1: 1 },
    refill: false
  })

  // Three held of three: a round makes no claim at all.
  await h.dispatcher.tick()
  assert.equal(h.claims.length, 2, 'no claim with no room')

  // One ends: the next claim follows at once (no poll runs here), for the room it left.
  await h.end(2)
  await until(() => h.claims.length === 3, 'a claim after the attempt ended')
  assert.equal(h.claims[2]!.limit, 1)
  assert.deepEqual([h.claims[2]!.inFlight, h.claims[2]!.inFlightByOwner], [{ wh_a: 1, wh_c: 1 }, { 1: 1, 3: 1 }])

  // That claim took nothing and no share is reached: the next end waits for the poll.
  await h.end(1)
  await quiet()
  assert.equal(h.claims.length, 3, 'no round until the next poll')
  await h.dispatcher.tick()
  const last = h.claims[3]!
  assert.deepEqual([last.limit, last.inFlight, last.inFlightByOwner], [2, { wh_c: 1 }, { 3: 1 }])
})

test('the counts per endpoint and per key holder: each attempt held, two of one endpoint in one claim, down to absent as they end', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 10, maxInFlightPerEndpoint: 3, maxInFlightPerOwner: 5 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_a', 1), h.delivery(3, 'wh_b', 1), h.delivery(4, 'wh_c', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2, 3, 4)
  const next = async () => {
    await h.dispatcher.tick()
    const claim = h.claims.at(-1)!
    return { limit: claim.limit, inFlight: claim.inFlight, byOwner: claim.inFlightByOwner }
  }
  assert.deepEqual(await next(), { limit: 6, inFlight: { wh_a: 2, wh_b: 1, wh_c: 1 }, byOwner: { 1: 3, 2: 1 } })
  await h.end(2)
  assert.deepEqual(await next(), { limit: 7, inFlight: { wh_a: 1, wh_b: 1, wh_c: 1 }, byOwner: { 1: 2, 2: 1 } })
  await h.end(4)
  assert.deepEqual(await next(), { limit: 8, inFlight: { wh_a: 1, wh_b: 1 }, byOwner: { 1: 2 } })
  await h.end(1)
  assert.deepEqual(await next(), { limit: 9, inFlight: { wh_b: 1 }, byOwner: { 1: 1 } })
  await h.end(3)
  assert.deepEqual(await next(), { limit: 10, inFlight: {}, byOwner: {} })

  // The other order: the lone endpoint and holder first, then the pair one by one.
  h.queue(h.delivery(5, 'wh_c', 2), h.delivery(6, 'wh_a', 1), h.delivery(7, 'wh_a', 1))
  await h.dispatcher.tick()
  await h.arrived(5, 6, 7)
  await h.end(5)
  assert.deepEqual(await next(), { limit: 8, inFlight: { wh_a: 2 }, byOwner: { 1: 2 } })
  await h.end(7)
  assert.deepEqual(await next(), { limit: 9, inFlight: { wh_a: 1 }, byOwner: { 1: 1 } })
  await h.end(6)
  assert.deepEqual(await next(), { limit: 10, inFlight: {}, byOwner: {} })
})

test('a claim that filled its room: each attempt that ends starts the next round at once', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 2, maxInFlightPerEndpoint: 4, maxInFlightPerOwner: 4 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_b', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2)
  h.queue(h.delivery(3, 'wh_a', 1))
  await h.end(1)
  await until(() => h.claims.length === 2, 'a claim after the attempt ended')
  await h.arrived(3)
  assert.equal(h.claims[1]!.limit, 1)
  // That one filled its room of one as well: the next end asks again.
  await h.end(2)
  await until(() => h.claims.length === 3, 'another claim after the attempt ended')
  assert.deepEqual([h.claims[2]!.limit, h.claims[2]!.inFlight], [1, { wh_a: 1 }])
  // The last claim took nothing (room left, no share full): the last end waits for the poll.
  await h.end(3)
  await quiet()
  assert.equal(h.claims.length, 3)
})

test('a claim that left room and no share full: an attempt that ends waits for the next poll', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 10, maxInFlightPerEndpoint: 2, maxInFlightPerOwner: 3 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_b', 1), h.delivery(3, 'wh_c', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2, 3)
  await h.end(3)
  await quiet()
  await h.end(1)
  await quiet()
  assert.equal(h.claims.length, 1, 'no round before the poll')
})

test('an endpoint at its share after the claim (two of it in one claim): each attempt that ends starts the next round at once', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 10, maxInFlightPerEndpoint: 2, maxInFlightPerOwner: 5 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_a', 1), h.delivery(3, 'wh_b', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2, 3)
  // Another endpoint, below its share, ends: the round comes at once.
  await h.end(3)
  await until(() => h.claims.length === 2, 'a claim after the attempt ended')
  assert.deepEqual(h.claims[1]!.inFlight, { wh_a: 2 })
  // That claim took nothing, but saw wh_a at its share (an earlier claim filled it): again at once.
  await h.end(1)
  await until(() => h.claims.length === 3, 'a claim after the second attempt ended')
  assert.deepEqual(h.claims[2]!.inFlight, { wh_a: 1 })
  // Now nothing is at its share: the last end waits for the poll.
  await h.end(2)
  await quiet()
  assert.equal(h.claims.length, 3)
})

test('a key holder at its share after the claim (two endpoints of it in one claim): an attempt that ends starts the next round at once', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 10, maxInFlightPerEndpoint: 4, maxInFlightPerOwner: 2 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_b', 1), h.delivery(3, 'wh_c', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2, 3)
  await h.end(3)
  await until(() => h.claims.length === 2, 'a claim after the attempt ended')
  assert.deepEqual(h.claims[1]!.inFlightByOwner, { 1: 2 })
  await h.end(1)
  await until(() => h.claims.length === 3, 'a claim after the second attempt ended')
  await h.end(2)
  await quiet()
  assert.equal(h.claims.length, 3)
})

/**
 * A dispatcher with one attempt in flight, a second round held at its gate, and that attempt
 * ended while the round waits: the round owes one more run.
 */
async function attemptEndedDuringRound (t: TestContext) {
  const h = await harness(t, { settings: { maxInFlight: 10 } })
  h.queue(h.delivery(1, 'wh_a', 1))
  await h.dispatcher.tick()
  await h.arrived(1)
  const open = h.hold()
  const round = h.dispatcher.tick()
  await until(() => h.disableCalls.length === 2, 'the round started')
  await h.end(1)
  return { h, open, round }
}

test('an attempt that ends while a round runs makes that round run again', async (t) => {
  const { h, open, round } = await attemptEndedDuringRound(t)
  await quiet()
  assert.equal(h.claims.length, 1, 'the round is still at its gate')
  open()
  await round
  assert.equal(h.claims.length, 3, 'the round ran twice')
  assert.equal(h.disableCalls.length, 2, 'the second run only claims: the fan-out and the owners\' check are the poll\'s')
})

test('a tick asked for while a round runs makes the next run a full one (fan-out first), not only a claim', async (t) => {
  const { h, open, round } = await attemptEndedDuringRound(t)
  const polled = h.dispatcher.tick()
  open()
  await Promise.all([round, polled])
  assert.deepEqual([h.claims.length, h.disableCalls.length], [3, 3])
})

test('once the dispatcher drains, an attempt that ends starts no round', async (t) => {
  const h = await harness(t, { settings: { maxInFlight: 1 } })
  h.queue(h.delivery(1, 'wh_a', 1))
  await h.dispatcher.tick()
  await h.arrived(1)
  const drained = h.dispatcher.drain()
  await h.end(1)
  await drained
  await quiet()
  assert.equal(h.claims.length, 1)
})

test('a record that carries the refill: its claim frees only the ending slot, what it took starts, and no claim round follows', async (t) => {
  const h = await harness(t, {
    refillWithRecord: true,
    settings: { maxInFlight: 10, maxInFlightPerEndpoint: 2, maxInFlightPerOwner: 5 }
  })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_a', 1), h.delivery(3, 'wh_b', 2))
  await h.dispatcher.tick()
  await h.arrived(1, 2, 3)
  // wh_a at its share: the end of 1 refills with its record, counting 2 and 3 still in flight.
  h.queue(h.delivery(4, 'wh_a', 1))
  await h.end(1)
  await h.arrived(4)
  assert.deepEqual(h.refills, [{
    now: T0, leaseUntil: T0 + TIMEOUT_MS + LEASE_MARGIN_MS, limit: 8, perEndpoint: 2, perOwner: 5,
    inFlight: { wh_a: 1, wh_b: 1 }, inFlightByOwner: { 1: 1, 2: 1 }, refill: true
  }])
  await quiet()
  assert.equal(h.claims.length, 1, 'the refill rode with the record: no claim of its own')
  // 4 refilled the slot: wh_a is at its share again, so the end of 2 refills too; it takes nothing.
  await h.end(2)
  const second = h.refills[1]
  assert.deepEqual(
    [h.refills.length, second?.inFlight, second?.inFlightByOwner],
    [2, { wh_a: 1, wh_b: 1 }, { 1: 1, 2: 1 }]
  )
  // Nothing taken, room left and no share full: the next end asks for no claim, with its record or after.
  await h.end(3)
  await quiet()
  assert.deepEqual([h.refills.length, h.claims.length], [2, 1])
})

// With the refill carried by the record too: a record that fails claimed nothing, and a claim
// round refills the slot, as before.
for (const refillWithRecord of [false, true]) {
  const carried = refillWithRecord ? ' (the record carrying the refill)' : ''
  test(`an attempt whose recording fails is logged with its endpoint, and its slot is released${carried}`, async (t) => {
    await recordingFails(t, refillWithRecord)
  })
}

async function recordingFails (t: TestContext, refillWithRecord: boolean): Promise<void> {
  const h = await harness(t, {
    refillWithRecord,
    settings: { maxInFlight: 2, maxInFlightPerEndpoint: 4, maxInFlightPerOwner: 4 }
  })
  h.failRecording.add(1)
  h.queue(h.delivery(1, 'wh_a', 7), h.delivery(2, 'wh_b', 8))
  await h.dispatcher.tick()
  await h.arrived(1, 2)
  await h.end(1)
  // The claim filled its room: the release asks for the next round at once.
  await until(() => h.claims.length === 2, 'a claim after the attempt ended')
  const next = h.claims[1]!
  assert.deepEqual([next.limit, next.inFlight, next.inFlightByOwner], [1, { wh_b: 1 }, { 8: 1 }])
  assert.deepEqual([h.refills.length, next.refill], [0, true])
  assert.equal(h.disableCalls.length, 1, 'that round only claims: no fan-out, no owners\' check, per delivery')
  assert.deepEqual(h.recorded.map((r) => r.deliveryId), [1])
  assert.equal(h.warned.length, 1)
  const [line] = h.warned
  assert.equal(line!.fields.webhookId, 'wh_a')
  assert.equal((line!.fields.err as Error).message, 'the database went away')
  assert.match(line!.message, /could not be recorded/)
}

test('without a logger, a failed recording still releases its slot and throws nothing', async (t) => {
  const h = await harness(t, { noLog: true, settings: { maxInFlight: 3 } })
  h.failRecording.add(1)
  h.queue(h.delivery(1, 'wh_a', 7))
  await h.dispatcher.tick()
  await h.arrived(1)
  await h.end(1)
  // drain() waits on the attempts: a failed one would reject it.
  await h.dispatcher.drain()
  await h.dispatcher.tick()
  assert.deepEqual([h.claims[1]!.limit, h.claims[1]!.inFlight, h.claims[1]!.inFlightByOwner], [3, {}, {}])
})

test('the endpoints whose owner is no longer live are logged as disabled, reason owner_inactive', async (t) => {
  const h = await harness(t)
  h.inactive.push([record('wh_gone1', 5), record('wh_gone2', 6)])
  h.clock.advance(500)
  await h.dispatcher.tick()
  assert.deepEqual(h.disableCalls, [{ now: T0 + 500, reason: 'owner_inactive' }])
  assert.deepEqual(h.informed.map((l) => l.fields), [
    { webhookId: 'wh_gone1', ownerKeyId: 5, reason: 'owner_inactive' },
    { webhookId: 'wh_gone2', ownerKeyId: 6, reason: 'owner_inactive' }
  ])
  assert.ok(h.informed.every((l) => /disabled/.test(l.message)))
})

test('a fan-out reads on while each batch comes back full (a backlog), then the round claims', async (t) => {
  // Catches a round that fans out one batch only (`while (false)`): a backlog of 1,000 events
  // waited a poll per 500.
  const h = await harness(t)
  h.fanOutAnswers.push(500, 500, 12)
  h.clock.advance(700)
  await h.dispatcher.tick()
  assert.deepEqual(h.fanOuts, [{ now: T0 + 700, max: 500 }, { now: T0 + 700, max: 500 }, { now: T0 + 700, max: 500 }])
  assert.equal(h.claims.length, 1)
})

test('a tick while a round runs starts no round beside it: that round runs once more, a full one, and the room is claimed once', async (t) => {
  // Catches the running round not reused (`if (running !== null) {}`, or the condition made
  // false): a second round beside the first fanned out at once and claimed the same room again,
  // four attempts in flight of a maxInFlight of two.
  const h = await harness(t, { settings: { maxInFlight: 2, maxInFlightPerEndpoint: 4, maxInFlightPerOwner: 4 } })
  h.queue(h.delivery(1, 'wh_a', 1), h.delivery(2, 'wh_b', 2))
  h.queue(h.delivery(3, 'wh_c', 3), h.delivery(4, 'wh_d', 4))
  const open = h.hold()
  const first = h.dispatcher.tick()
  await until(() => h.disableCalls.length === 1, 'the round at its gate')
  const second = h.dispatcher.tick()
  await quiet()
  // Read before the gate opens, which it must whatever they say (a round left at it holds drain()).
  const beside = [h.disableCalls.length, h.claims.length]
  open()
  assert.deepEqual(beside, [1, 0], 'no second round beside the first')
  // The second tick's promise is the running round's: it settles once the run it asked for is done.
  await second
  assert.equal(h.disableCalls.length, 2, 'the round ran once more, a full one (the owners\' check, the fan-out)')
  assert.deepEqual(h.claims.map((c) => c.limit), [2], 'one claim for the room of two; the run after it found none')
  await first
  await h.arrived(1, 2)
  assert.equal(h.dispatcher.inFlight(), 2)
})

test('a wake runs a full round in a timer of its own that keeps no process alive', async (t) => {
  // Catches the wake's timer left referenced (`timer.unref()` dropped): a process with nothing
  // else to do (a command that queued a replay) waited for a round it had no use for.
  const h = await harness(t)
  const timers: NodeJS.Timeout[] = []
  const real = globalThis.setTimeout
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    const timer = real(...args)
    timers.push(timer)
    return timer
  }) as typeof setTimeout
  try {
    h.dispatcher.wake()
  } finally {
    globalThis.setTimeout = real
  }
  assert.equal(timers.length, 1)
  assert.equal(timers[0]!.hasRef(), false, 'the wake\'s timer is unref\'d')
  assert.equal(h.claims.length, 0, 'not in the caller\'s turn')
  await until(() => h.claims.length === 1, 'the round the wake asked for')
  assert.deepEqual([h.disableCalls.length, h.fanOuts.length], [1, 1], 'a full round')
})

test('tracing on: a wake\'s round runs detached from the caller\'s trace, and claims', async (t) => {
  // Catches the round run in the caller's trace (`true ? round : …`: detached never asked) and a
  // wake never followed by a round (detached given a function that drops it).
  let detached = 0
  telemetry.webhooks = {
    startAttempt () { throw new Error('no attempt in this test') },
    detached: (fn) => { detached++; fn() }
  }
  t.after(() => { telemetry.webhooks = null })
  const h = await harness(t)
  h.dispatcher.wake()
  await until(() => h.claims.length === 1, 'the round the wake asked for')
  assert.equal(detached, 1)
  assert.deepEqual([h.disableCalls.length, h.fanOuts.length], [1, 1], 'a full round')
})

test('without a logger, a round a wake asked for that fails throws nothing; the next wake runs a round', async (t) => {
  // Catches `deps.log.warn` without `?.`: the catch itself threw, a rejection nobody handles
  // (one that ends the process).
  const h = await harness(t, { noLog: true })
  h.failNextClaim()
  h.dispatcher.wake()
  await until(() => !h.claimFailing() && h.disableCalls.length === 1, 'the failed round')
  await quiet()
  h.dispatcher.wake()
  await until(() => h.claims.length === 1, 'the next round')
})
