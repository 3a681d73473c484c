// The dispatcher's rules outside its slots, driven by hand like dispatcher-slots.test.ts: a
// stand-in store hands out the deliveries a test queued and keeps what each attempt recorded, a
// manual clock says when each attempt runs, and real receivers on 127.0.0.1 answer (204, 503, or
// nothing at all until the test ends; a closed port refuses). What is asserted is what the
// dispatcher does around an attempt: the warn line of a failed attempt (at most one a minute per
// endpoint, the next saying how many it left out, the entries of quiet endpoints forgotten), the
// attempt's record, its outcome counted, the endpoint disabled by it logged, the body sent (the
// rendered event, a test type's example, or the body of earlier attempts), the address refused
// before connecting, a round asked for while one runs, a round that fails, the drain, and the
// seams of tracing (a stand-in of telemetry/hooks.ts's webhooks slot).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import type { ServerResponse } from 'node:http'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import type { StoredEvent } from '../../src/events/events.store.ts'
import { manualClock } from '../../src/shared/clock.ts'
import { telemetry, type WebhookAttemptEnd, type WebhookAttemptFacts } from '../../src/telemetry/hooks.ts'
import {
  createDispatcher,
  FAILURE_LOG_INTERVAL_MS as I,
  type DeliveryOutcome,
  type RenderEvent,
  type WebhookSettings
} from '../../src/webhooks/dispatcher.ts'
import { newSecret } from '../../src/webhooks/signature.ts'
import type {
  AttemptRecord,
  ClaimedDelivery,
  DueClaim,
  WebhookRecord,
  WebhookStore
} from '../../src/webhooks/webhooks.store.ts'
import { isLoopback, T0 } from '../helpers/app.ts'
import { disabledEndpoint } from './helpers.ts'
import { closedPort, startReceiver } from './receiver.ts'

const SECRET = newSecret()

/** An endpoint as the store keeps it (what recordAttempt answers when the attempt disabled it). */
function record (id: string, ownerKeyId: number): WebhookRecord {
  return disabledEndpoint(id, ownerKeyId, { secret: SECRET, disabledReason: 'failing', failingSince: T0, version: 2 })
}

interface Line { fields: Record<string, unknown>; message: string }

interface Options {
  settings?: Partial<WebhookSettings>
  /** Without a logger (deps.log absent). */
  noLog?: boolean
  /** Without metrics (deps.metrics absent). */
  noMetrics?: boolean
  render?: RenderEvent
  /** Without resolve (deps.resolve absent: the system resolver). */
  noResolve?: boolean
}

/** Where a delivery goes: the receiver's 204 or 503, a request held until the test ends, or a closed port. */
type Target = 'ok' | 'down' | 'hold' | 'refused'

type Extra = Partial<Omit<ClaimedDelivery, 'event'>> & { event?: Partial<StoredEvent> }

async function harness (t: TestContext, options: Options = {}) {
  const clock = manualClock(T0)
  const held: ServerResponse[] = []
  const receiver = await startReceiver(t, (req, res) => {
    if (req.url!.startsWith('/hold/')) held.push(res)
    else if (req.url!.startsWith('/down/')) res.writeHead(503).end('down')
    else res.writeHead(204).end()
  })
  const refusedPort = await closedPort()
  const answers: ClaimedDelivery[][] = []
  const claims: DueClaim[] = []
  const recorded: AttemptRecord[] = []
  const disables: Array<WebhookRecord | null> = []
  const pruned: Array<[number, number]> = []
  const warned: Line[] = []
  const informed: Line[] = []
  const outcomes: DeliveryOutcome[] = []
  const state = { rounds: 0, failRounds: 0, gate: null as Promise<void> | null, open: (): void => {} }
  const store = {
    async disableInactiveOwners () {
      state.rounds++
      if (state.gate !== null) await state.gate
      if (state.failRounds > 0) {
        state.failRounds--
        throw new Error('the database went away')
      }
      return []
    },
    fanOut: async () => 0,
    async claimDue (claim: DueClaim) {
      claims.push({ ...claim })
      return answers.shift() ?? []
    },
    async recordAttempt (attempt: AttemptRecord) {
      recorded.push(attempt)
      return disables.shift() ?? null
    },
    async pruneAttemptDetails (before: number, max: number) {
      pruned.push([before, max])
      return 7
    }
  } as unknown as WebhookStore
  const settings: WebhookSettings = {
    timeoutMs: 2000,
    retryScheduleMs: [5000],
    allowedHosts: ['127.0.0.1', 'hook.test', 'far.test'],
    maxInFlight: 64,
    maxInFlightPerEndpoint: 4,
    pollMs: 250,
    ...options.settings
  }
  const dispatcher = createDispatcher({
    store,
    clock,
    settings,
    mayConnect: isLoopback,
    ...(options.render !== undefined && { render: options.render }),
    ...(options.noResolve !== true && {
      // hook.test is this machine; far.test is an address no test may connect to.
      resolve: async (host: string) => [{ address: host === 'far.test' ? '10.0.0.5' : '127.0.0.1', family: 4 }]
    }),
    ...(options.noMetrics !== true && { metrics: { onWebhookOutcome: (outcome) => { outcomes.push(outcome) } } }),
    ...(options.noLog !== true && {
      log: {
        warn: (fields, message) => { warned.push({ fields: fields as Record<string, unknown>, message }) },
        info: (fields, message) => { informed.push({ fields: fields as Record<string, unknown>, message }) }
      }
    })
  })
  t.after(async () => {
    // A round a failed test left at its gate goes on, so that the drain ends.
    state.open()
    for (const res of held.splice(0)) res.writeHead(204).end()
    await dispatcher.drain()
  })
  const delivery = (id: number, webhookId: string, target: Target = 'ok', extra: Extra = {}): ClaimedDelivery => {
    const { event, ...rest } = extra
    return {
      id,
      webhookId,
      ownerKeyId: 1,
      url: target === 'refused'
        ? `http://127.0.0.1:${refusedPort}/${id}`
        : `http://127.0.0.1:${receiver.port}/${target}/${id}`,
      secrets: [SECRET],
      attempts: 0,
      testType: null,
      kind: 'first',
      requestBody: '{}',
      ...rest,
      event: {
        id: `evt_${id}`,
        type: 'webhook.test',
        createdAt: T0,
        audience: 'webhook',
        subjectKeyId: 1,
        data: {},
        position: { tx: '1', seq: id },
        ...event
      }
    }
  }
  /** Queues these deliveries for the next claim, runs a round, and waits until their attempts have ended. */
  const run = async (...deliveries: ClaimedDelivery[]): Promise<void> => {
    answers.push(deliveries)
    await dispatcher.tick()
    await until(() => dispatcher.inFlight() === 0, 'the attempts ended')
  }
  return {
    clock,
    dispatcher,
    receiver,
    held,
    state,
    claims,
    recorded,
    disables,
    pruned,
    warned,
    informed,
    outcomes,
    delivery,
    run,
    queue (...deliveries: ClaimedDelivery[]) { answers.push(deliveries) },
    /** One attempt of `webhookId` at `at` that fails (a closed port). */
    async fail (id: number, webhookId: string, at: number) {
      clock.set(at)
      await run(delivery(id, webhookId, 'refused'))
    },
    /** Opens a gate the next round waits at (before its claim); call the result to let it on. */
    hold (): () => void {
      let open!: () => void
      state.gate = new Promise((resolve) => { open = resolve })
      state.open = () => { state.gate = null; open() }
      return state.open
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

const quiet = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 30))

const RETRIED = 'a webhook attempt failed; it is retried'
const LAST = 'a webhook attempt failed, the last of its schedule: replay or recover it'

/** The `suppressed` counts of the failure lines of `webhookId`, in order. */
function suppressedOf (warned: Line[], webhookId: string): unknown[] {
  return warned.filter((l) => l.fields.webhookId === webhookId).map((l) => l.fields.suppressed)
}

test('a failed attempt\'s line: endpoint, event, type (the test\'s first), status, error, next attempt', async (t) => {
  const h = await harness(t, { settings: { retryScheduleMs: [5000] } })
  // A retried one: the receiver answered 503; a test of key.banned sent through a webhook.test event.
  await h.run(h.delivery(1, 'wh_a', 'down', { testType: 'key.banned' }))
  // The last of its schedule, no answer at all, an event's own type.
  h.clock.advance(10)
  await h.run(h.delivery(2, 'wh_b', 'refused', { attempts: 1, event: { type: 'pet.created' } }))
  assert.deepEqual(h.warned, [
    {
      fields: {
        webhookId: 'wh_a',
        eventId: 'evt_1',
        type: 'key.banned',
        attempt: 1,
        status: 503,
        error: 'HTTP 503',
        nextAttemptAt: new Date(T0 + 5000).toISOString(),
        suppressed: 0
      },
      message: RETRIED
    },
    {
      fields: {
        webhookId: 'wh_b',
        eventId: 'evt_2',
        type: 'pet.created',
        attempt: 2,
        status: null,
        error: 'connection refused',
        nextAttemptAt: null,
        suppressed: 0
      },
      message: LAST
    }
  ])
  assert.deepEqual(h.outcomes, ['retrying', 'failed'])
})

test('failures within a minute of an endpoint\'s last line are left out, counted on its next', async (t) => {
  const h = await harness(t)
  await h.fail(1, 'wh_a', T0)
  await h.fail(2, 'wh_a', T0 + 1)
  await h.fail(3, 'wh_b', T0 + 2)
  await h.fail(4, 'wh_a', T0 + I - 1)
  assert.deepEqual(h.warned.map((l) => [l.fields.webhookId, l.fields.suppressed]), [['wh_a', 0], ['wh_b', 0]])
  // A minute after its last line, to the millisecond: logged, with the two left out.
  await h.fail(5, 'wh_a', T0 + I)
  await h.fail(6, 'wh_a', T0 + I + 1)
  await h.fail(7, 'wh_a', T0 + 2 * I)
  assert.deepEqual(suppressedOf(h.warned, 'wh_a'), [0, 2, 1])
  const logged = h.warned.filter((l) => l.fields.webhookId === 'wh_a').map((l) => l.fields.eventId)
  assert.deepEqual(logged, ['evt_1', 'evt_5', 'evt_7'])
  assert.deepEqual(h.outcomes, Array(7).fill('retrying'), 'every failure is counted, logged or not')
})

test('a success clears its endpoint\'s failures: the next is logged at once; the success logs nothing', async (t) => {
  const h = await harness(t)
  await h.fail(1, 'wh_a', T0)
  h.clock.set(T0 + 1)
  await h.run(h.delivery(2, 'wh_a', 'ok'))
  assert.equal(h.warned.length, 1)
  await h.fail(3, 'wh_a', T0 + 2)
  assert.deepEqual(h.warned.map((l) => [l.fields.eventId, l.fields.suppressed]), [['evt_1', 0], ['evt_3', 0]])
  assert.deepEqual(h.outcomes, ['retrying', 'succeeded', 'retrying'])
})

test('a sweep runs at most once a minute; an endpoint with failures left out stays till an hour quiet', async (t) => {
  const h = await harness(t)
  await h.fail(1, 'wh_a', T0)
  await h.fail(2, 'wh_a', T0 + 1)
  // A sweep (a minute since the last): wh_a, quiet 10 ms short of an hour, is kept.
  await h.fail(3, 'wh_b', T0 + 60 * I - 10)
  // Not a minute since that sweep: none, though wh_a is now an hour quiet.
  await h.fail(4, 'wh_c', T0 + 60 * I)
  await h.fail(5, 'wh_a', T0 + 60 * I + 1)
  assert.deepEqual(suppressedOf(h.warned, 'wh_a'), [0, 1], 'its count kept')
})

test('a sweep a minute after the last forgets an endpoint an hour quiet, with the failures it left out', async (t) => {
  const h = await harness(t)
  await h.fail(1, 'wh_a', T0)
  await h.fail(2, 'wh_a', T0 + 1)
  await h.fail(3, 'wh_b', T0 + 59 * I)
  // A minute after that sweep, to the millisecond; wh_a an hour quiet, to the millisecond.
  await h.fail(4, 'wh_c', T0 + 60 * I)
  await h.fail(5, 'wh_a', T0 + 60 * I + 1)
  assert.deepEqual(suppressedOf(h.warned, 'wh_a'), [0, 0], 'its count forgotten')
})

test('the record: next attempt null on success, else the schedule\'s; the answer, null when none', async (t) => {
  const h = await harness(t, { settings: { retryScheduleMs: [5000, 60_000] } })
  await h.run(h.delivery(1, 'wh_a', 'ok'))
  h.clock.advance(100)
  await h.run(h.delivery(2, 'wh_b', 'down', { attempts: 1, kind: 'retry' }))
  h.clock.advance(100)
  await h.run(h.delivery(3, 'wh_c', 'refused'))
  const [ok, down, refused] = h.recorded
  assert.equal(ok!.outcome, 'succeeded')
  assert.equal(ok!.nextAttemptAt, null)
  assert.equal(ok!.response?.status, 204)
  assert.deepEqual([down!.outcome, down!.attempt, down!.kind, down!.at], ['failed', 2, 'retry', T0 + 100])
  assert.equal(down!.nextAttemptAt, T0 + 100 + 60_000)
  assert.deepEqual([down!.response?.status, down!.response?.body], [503, 'down'])
  assert.deepEqual([down!.status, down!.error], [503, 'HTTP 503'])
  assert.equal(refused!.nextAttemptAt, T0 + 200 + 5000)
  assert.equal(refused!.response, null)
  assert.deepEqual([refused!.status, refused!.error], [null, 'connection refused'])
  assert.deepEqual(h.outcomes, ['succeeded', 'retrying', 'retrying'])
})

test('each attempt\'s lease owner is its claim\'s: the process id and a random id, one per dispatcher', async (t) => {
  const h = await harness(t)
  await h.run(h.delivery(1, 'wh_a'))
  const owner = h.claims[0]!.leaseOwner
  assert.match(owner, new RegExp(`^${process.pid}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
  assert.equal(h.recorded[0]!.leaseOwner, owner)
  const other = await harness(t)
  await other.dispatcher.tick()
  assert.notEqual(other.claims[0]!.leaseOwner, owner)
})

test('an endpoint the failure disabled is logged, reason failing; its outcome is still counted', async (t) => {
  const h = await harness(t, { settings: { retryScheduleMs: [] } })
  h.disables.push(record('wh_a', 9))
  await h.run(h.delivery(1, 'wh_a', 'refused'))
  assert.deepEqual(h.informed, [
    { fields: { webhookId: 'wh_a', ownerKeyId: 9, reason: 'failing' }, message: 'a webhook endpoint was disabled' }
  ])
  assert.deepEqual(h.outcomes, ['failed'])
  assert.equal(h.warned.length, 1)
})

test('without a logger, a failed attempt that disabled its endpoint is still counted', async (t) => {
  const h = await harness(t, { noLog: true })
  h.disables.push(record('wh_a', 9))
  await h.run(h.delivery(1, 'wh_a', 'refused'))
  await h.run(h.delivery(2, 'wh_b', 'refused'))
  assert.deepEqual(h.outcomes, ['retrying', 'retrying'])
})

test('without metrics, an attempt ends and is recorded with no warning', async (t) => {
  const h = await harness(t, { noMetrics: true })
  await h.run(h.delivery(1, 'wh_a', 'ok'))
  assert.equal(h.recorded.length, 1)
  assert.deepEqual(h.warned, [])
})

test('the body: the event rendered (its data by default), a test\'s example, or the earlier attempts\'', async (t) => {
  const plain = await harness(t)
  const event = { type: 'pet.created', data: { name: 'Rex' } }
  await plain.run(plain.delivery(1, 'wh_a', 'ok', { requestBody: null, event }))
  assert.deepEqual(JSON.parse(plain.receiver.received[0]!.body), {
    id: 'evt_1',
    type: 'pet.created',
    timestamp: new Date(T0).toISOString(),
    data: { name: 'Rex' }
  })
  assert.deepEqual(plain.recorded[0]!.request?.body, plain.receiver.received[0]!.body)
  // A test of another type: its documented example, whatever the render.
  await plain.run(plain.delivery(2, 'wh_a', 'ok', { requestBody: null, testType: 'key.banned' }))
  const test2 = JSON.parse(plain.receiver.received[1]!.body) as { type: string; data: unknown }
  assert.deepEqual(test2, {
    id: 'evt_2',
    type: 'key.banned',
    timestamp: new Date(T0).toISOString(),
    data: { keyId: 1, until: '2026-11-21T12:15:00.000Z', strike: 1 }
  })
  // The body of the earlier attempts, as it was.
  await plain.run(plain.delivery(3, 'wh_a', 'ok', { requestBody: '{"kept":true}', event: { data: { name: 'Rex' } } }))
  assert.equal(plain.receiver.received[2]!.body, '{"kept":true}')

  const rendered = await harness(t, { render: (event) => ({ shown: event.id }) })
  await rendered.run(rendered.delivery(4, 'wh_a', 'ok', { requestBody: null, event: { data: { name: 'Rex' } } }))
  assert.deepEqual((JSON.parse(rendered.receiver.received[0]!.body) as { data: unknown }).data, { shown: 'evt_4' })
})

test('an address mayConnect refuses fails with nothing sent; a host resolves by the resolve given', async (t) => {
  const h = await harness(t)
  await h.run(h.delivery(1, 'wh_a', 'ok', { url: `http://far.test:${h.receiver.port}/ok/1` }))
  assert.deepEqual(h.recorded[0], {
    ...h.recorded[0],
    outcome: 'failed',
    status: null,
    error: 'address not reachable from here',
    durationMs: 0,
    request: null,
    response: null
  })
  assert.equal(h.receiver.received.length, 0)
  // hook.test resolves to 127.0.0.1 by the resolve given (the system resolver knows no such host).
  await h.run(h.delivery(2, 'wh_b', 'ok', { url: `http://hook.test:${h.receiver.port}/ok/2` }))
  assert.equal(h.recorded[1]!.outcome, 'succeeded')
  assert.equal(h.receiver.received[0]!.headers.host, `hook.test:${h.receiver.port}`)
  assert.equal(h.recorded[1]!.request?.url, `http://hook.test:${h.receiver.port}/ok/2`)
  assert.deepEqual(h.outcomes, ['retrying', 'succeeded'])
})

test('a tick or a wake while a round runs returns that round and makes it run once more', async (t) => {
  const h = await harness(t)
  const open = h.hold()
  const first = h.dispatcher.tick()
  await until(() => h.state.rounds === 1, 'the round at its gate')
  const second = h.dispatcher.tick()
  assert.equal(second, first, 'the running round')
  await quiet()
  assert.equal(h.state.rounds, 1, 'no second round beside it')
  open()
  await second
  assert.deepEqual([h.state.rounds, h.claims.length], [2, 2], 'it ran again')

  const reopen = h.hold()
  const third = h.dispatcher.tick()
  await until(() => h.state.rounds === 3, 'the next round at its gate')
  h.dispatcher.wake()
  await quiet()
  assert.equal(h.state.rounds, 3)
  reopen()
  await third
  assert.deepEqual([h.state.rounds, h.claims.length], [4, 4], 'the wake made it run again')
})

test('a round that fails after a wake is logged as a warning; the next round runs', async (t) => {
  const h = await harness(t)
  h.state.failRounds = 1
  h.dispatcher.wake()
  await until(() => h.warned.length === 1, 'the warning')
  const [line] = h.warned
  assert.equal(line!.message, 'a webhook dispatch round failed; the next one retries')
  assert.equal((line!.fields.err as Error).message, 'the database went away')
  h.dispatcher.wake()
  await until(() => h.claims.length === 1, 'the next round')
})

test('without a logger, a round that fails after a wake throws nothing', async (t) => {
  const h = await harness(t, { noLog: true })
  h.state.failRounds = 1
  h.dispatcher.wake()
  await until(() => h.state.rounds === 1 && h.state.failRounds === 0, 'the failed round')
  await quiet()
  await h.dispatcher.tick()
  assert.equal(h.claims.length, 1)
})

test('drain waits for the round that runs, and for the attempts it started', async (t) => {
  const h = await harness(t)
  const open = h.hold()
  h.queue(h.delivery(1, 'wh_a', 'ok'))
  const round = h.dispatcher.tick()
  await until(() => h.state.rounds === 1, 'the round at its gate')
  let drained = false
  const drain = h.dispatcher.drain().then(() => { drained = true })
  await quiet()
  assert.equal(drained, false, 'drained before the round ended')
  open()
  await round
  await drain
  assert.equal(h.recorded.length, 1, 'the attempt the round started ended first')
})

test('drain waits at most 2 s for an attempt that does not end', async (t) => {
  const h = await harness(t, { settings: { timeoutMs: 10_000 } })
  h.queue(h.delivery(1, 'wh_a', 'hold'))
  await h.dispatcher.tick()
  await until(() => h.held.length === 1, 'the request at the receiver')
  const started = Date.now()
  await h.dispatcher.drain()
  const waited = Date.now() - started
  assert.ok(waited >= 1900 && waited < 4000, `drain waited ${waited} ms`)
  assert.equal(h.dispatcher.inFlight(), 1)
})

test('a wake does not keep an idle process alive: one that has nothing else to do exits before the round', async () => {
  const dispatcher = new URL('../../src/webhooks/dispatcher.ts', import.meta.url).href
  const script = `
    const { createDispatcher } = await import(${JSON.stringify(dispatcher)})
    const store = {
      disableInactiveOwners: async () => { process.stdout.write('round'); return [] },
      fanOut: async () => 0,
      claimDue: async () => []
    }
    const settings = {
      timeoutMs: 1, retryScheduleMs: [], allowedHosts: [], maxInFlight: 1, maxInFlightPerEndpoint: 1, pollMs: 1
    }
    createDispatcher({ store, clock: { now: () => 0 }, settings }).wake()
    process.stdout.write('woken;')
  `
  const args = ['--input-type=module', '-e', script]
  const { stdout } = await promisify(execFile)(process.execPath, args, { timeout: 20_000 })
  assert.equal(stdout, 'woken;')
})

test('pruneAttemptDetails is the store\'s', async (t) => {
  const h = await harness(t)
  assert.equal(await h.dispatcher.pruneAttemptDetails(T0 - 1000, 50), 7)
  assert.deepEqual(h.pruned, [[T0 - 1000, 50]])
})

test('an attempt that fails inside the dispatcher is warned of with its own error', async (t) => {
  const h = await harness(t, { render: () => { throw new Error('render failed') } })
  await h.run(h.delivery(1, 'wh_a', 'ok', { requestBody: null }))
  assert.equal(h.warned.length, 1)
  assert.match(h.warned[0]!.message, /could not be recorded/)
  assert.equal((h.warned[0]!.fields.err as Error).message, 'render failed')
})

test('tracing on: an attempt is a span (facts, traceparent sent, end told); a wake runs detached', async (t) => {
  const facts: WebhookAttemptFacts[] = []
  const ends: WebhookAttemptEnd[] = []
  const calls = { run: 0, detached: 0 }
  telemetry.webhooks = {
    startAttempt (fact) {
      facts.push(fact)
      return {
        traceparent: `00-${'a'.repeat(32)}-${String(fact.deliveryId).padStart(16, '0')}-01`,
        run: (fn) => { calls.run++; return fn() },
        end: (result) => { ends.push(result) }
      }
    },
    detached: (fn) => { calls.detached++; fn() }
  }
  t.after(() => { telemetry.webhooks = null })
  let failRender = false
  const h = await harness(t, {
    render: (event) => {
      if (failRender) throw new Error('render failed')
      return event.data
    }
  })
  const sent = h.delivery(1, 'wh_a', 'ok', { attempts: 2, testType: 'key.banned' })
  await h.run(sent)
  assert.deepEqual(facts, [
    { url: sent.url, webhookId: 'wh_a', deliveryId: 1, eventId: 'evt_1', eventType: 'key.banned', attempt: 3 }
  ])
  const received = h.receiver.received[0]!
  assert.equal(received.headers.traceparent, `00-${'a'.repeat(32)}-0000000000000001-01`)
  assert.equal(received.headers['webhook-id'], 'evt_1')
  assert.equal(calls.run, 1)
  assert.deepEqual([ends[0]!.outcome, ends[0]!.status], ['succeeded', 204])

  // An attempt that throws ends its span as an internal error.
  failRender = true
  await h.run(h.delivery(2, 'wh_a', 'ok', { requestBody: null }))
  assert.deepEqual(ends[1], { outcome: 'failed', error: 'internal error' })
  assert.equal((h.warned[0]!.fields.err as Error).message, 'render failed')

  h.dispatcher.wake()
  await until(() => h.claims.length === 3, 'the round the wake asked for')
  assert.equal(calls.detached, 1)
})
