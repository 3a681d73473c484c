// node bench/claim.ts: what one webhook claim (WebhookStore.claimDue) costs with a backlog, on
// SQLite and PostgreSQL (docs/performance.md, "Webhooks: the claim"). --endpoints endpoints
// (1 by default), each of its own key holder, share --pending due deliveries (queued as test
// deliveries through the store, in turn); each round claims with the dispatcher's defaults (4 per
// endpoint, 16 per key holder) and then records the claimed attempts as succeeded, so the backlog
// stays about the same. Three cases, --rounds each, median and p90 in ms:
//   room    every endpoint has its 4 slots free: the dispatcher's claim, limit 64
//   refill  the same with limit 1, as a refill: the claim after each attempt that ends (its
//           read of an endpoint starts past what the store last claimed of it)
//   full    every endpoint already has 4 in flight: the claim takes nothing
// and then what a delivery's bookkeeping costs, a record and the refill's claim after it, with
// one endpoint's 4 slots held: `apart` records, then claims (two calls, as before migration 31),
// `together` records with the refill's claim (RefillWithRecord: one call on PostgreSQL).
// SQLite runs on a temporary file with the WAL's fsync left out (a no-op sync): what is measured
// is the claim's own work in the writer, not the disk. PostgreSQL runs in a schema of its own,
// dropped at the end.
//
//   node bench/claim.ts [--engine sqlite|postgres|both] [--pending 20000] [--endpoints 1] [--rounds 40]
//     [--database URL]
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import type { EventDraft } from '../src/events/events.store.ts'
import { createPostgresStores } from '../src/storage/postgres/index.ts'
import { createSqliteStores } from '../src/storage/sqlite/index.ts'
import type { Stores } from '../src/storage/stores.ts'
import type { AttemptRecord, ClaimedDelivery, DueClaim } from '../src/webhooks/webhooks.store.ts'

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'both' },
    pending: { type: 'string', default: '20000' },
    endpoints: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '40' },
    database: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' }
  },
  strict: true
})
const PENDING = Number(values.pending)
const ENDPOINTS = Number(values.endpoints)
const ROUNDS = Number(values.rounds)
const T0 = Date.UTC(2026, 0, 1)
const WEBHOOKS = Array.from({ length: ENDPOINTS }, (_, i) => `wh_claimbench${String(i).padStart(13, '0')}`)

async function seed (stores: Stores): Promise<void> {
  const events: EventDraft[] = []
  for (const [i, webhook] of WEBHOOKS.entries()) {
    const key = await stores.keys.createKey({
      name: 'bench',
      role: 'admin',
      plan: 'enterprise',
      perMinute: null,
      perDay: null,
      hash: `h-bench-${i}`,
      prefix: 'psk_bench',
      now: T0
    })
    await stores.webhooks.createWebhook({
      id: webhook,
      ownerKeyId: key.id,
      url: 'http://127.0.0.1:9/hook',
      types: ['webhook.test'],
      description: null,
      secret: 'whsec_bench',
      now: T0
    }, 10)
    events.push({ type: 'webhook.test' as const, audience: 'webhook' as const, subjectKeyId: key.id, data: { webhookId: webhook } })
  }
  for (let done = 0; done < PENDING; done += 500) {
    await Promise.all(Array.from({ length: Math.min(500, PENDING - done) }, (_, i) => {
      const n = done + i
      return stores.webhooks.queueTest(WEBHOOKS[n % ENDPOINTS]!, events[n % ENDPOINTS]!, T0 + n)
    }))
  }
}

/** A delivery's attempt recorded as succeeded at `at`. */
const recordOf = (d: ClaimedDelivery, at: number): AttemptRecord => ({
  deliveryId: d.id,
  webhookId: d.webhookId,
  leaseOwner: 'bench',
  attempt: d.attempts + 1,
  at,
  outcome: 'succeeded',
  status: 204,
  error: null,
  durationMs: 1,
  nextAttemptAt: null,
  disableIfFailingSince: 0,
  disabledEvent: () => { throw new Error('not disabled here') }
})

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

async function measure (engine: string, stores: Stores): Promise<void> {
  const started = performance.now()
  await seed(stores)
  console.log(`${engine}: ${PENDING} pending deliveries for ${ENDPOINTS} endpoints queued in ${Math.round(performance.now() - started)} ms`)
  let now = T0 + PENDING + 1000
  const full = Object.fromEntries(WEBHOOKS.map((webhook) => [webhook, 4]))
  for (const [name, limit, inFlight] of [['room', 64, {}], ['refill', 1, {}], ['full', 64, full]] as const) {
    const times: number[] = []
    let claimedCount = 0
    for (let round = 0; round < ROUNDS; round++) {
      now += 1
      const at = performance.now()
      const claimed = await stores.webhooks.claimDue({
        now,
        leaseOwner: 'bench',
        leaseUntil: now + 15_000,
        limit,
        perEndpoint: 4,
        inFlight,
        perOwner: 16,
        refill: name === 'refill'
      })
      times.push(performance.now() - at)
      claimedCount += claimed.length
      await Promise.all(claimed.map((d) => stores.webhooks.recordAttempt(recordOf(d, now))))
    }
    times.sort((a, b) => a - b)
    console.log(`${engine} ${name}: claimDue median ${quantile(times, 0.5).toFixed(2)} ms, p90 ${quantile(times, 0.9).toFixed(2)} ms over ${ROUNDS} rounds (${claimedCount / ROUNDS} claimed a round)`)
  }
  await recordThenClaim(engine, stores, now)
}

/** A delivery's record and its refill's claim, apart and together, one endpoint at its 4 slots. */
async function recordThenClaim (engine: string, stores: Stores, from: number): Promise<void> {
  let now = from + 1_000
  const webhook = WEBHOOKS[0]!
  const refillOf = (at: number, held: number): DueClaim => ({
    now: at,
    leaseOwner: 'bench',
    leaseUntil: at + 15_000,
    limit: 1,
    perEndpoint: 4,
    inFlight: { [webhook]: held },
    perOwner: 16,
    refill: true
  })
  let slots = await stores.webhooks.claimDue({ ...refillOf(now, 0), limit: 4, refill: false })
  for (const name of ['apart', 'together'] as const) {
    const times: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      now += 1
      const [ending, ...held] = slots
      if (ending === undefined) break
      const at = performance.now()
      let next: ClaimedDelivery[] = []
      if (name === 'apart') {
        await stores.webhooks.recordAttempt(recordOf(ending, now))
        next = await stores.webhooks.claimDue(refillOf(now, held.length))
      } else {
        await stores.webhooks.recordAttempt(recordOf(ending, now), {
          claim: () => refillOf(now, held.length),
          claimed: (deliveries) => { next = deliveries }
        })
        // A store that does not carry the claim (SQLite): the refill after the record.
        if (engine === 'sqlite') next = await stores.webhooks.claimDue(refillOf(now, held.length))
      }
      times.push(performance.now() - at)
      slots = [...held, ...next]
    }
    times.sort((a, b) => a - b)
    console.log(`${engine} record and refill, ${name}: median ${quantile(times, 0.5).toFixed(2)} ms, p90 ${quantile(times, 0.9).toFixed(2)} ms over ${times.length} deliveries`)
  }
}

if (values.engine === 'sqlite' || values.engine === 'both') {
  const dir = mkdtempSync(path.join(tmpdir(), 'petstore-claim-'))
  const stores = createSqliteStores(path.join(dir, 'petstore.db'), { sync: async () => {} })
  try { await measure('sqlite', stores) } finally {
    await stores.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
if (values.engine === 'postgres' || values.engine === 'both') {
  const schema = `petstore_claim_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: values.database })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  try {
    const stores = await createPostgresStores(values.database, { schema, poolMax: 4 })
    try { await measure('postgres', stores) } finally { await stores.close() }
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    await admin.end()
  }
}
