// The SQLite writer (src/storage/sqlite/writer.ts): group commit, each write answered only after
// its own commit is durable, a failing write failing alone, and a lock held by another connection
// answered with 503 within a bound instead of freezing the process.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { AppError } from '../../../src/errors.ts'
import { DEFAULT_ORDER_HOLD_MS as HOLD } from '../../../src/orders/orders.store.ts'
import { createSqliteStores } from '../../../src/storage/sqlite/index.ts'
import { tempDir } from '../../helpers/temp.ts'

function tempFile (t: TestContext): string {
  const dir = tempDir(t, 'petstore-writer-')
  return join(dir, 'petstore.db')
}

/** An fsync the test completes by hand: `calls` counts them, `finish()` completes the oldest. */
function gatedSync () {
  const waiting: (() => void)[] = []
  let calls = 0
  return {
    sync: () => new Promise<void>((resolve) => { calls++; waiting.push(resolve) }),
    get calls () { return calls },
    get inFlight () { return waiting.length },
    finish () { waiting.shift()?.() }
  }
}

/** An order of `quantity` of the pet by key 1 at 0, held as long as the order service holds one. */
function newOrder (petId: number, quantity: number) {
  return { petId, quantity, shipDate: null, ownerKeyId: 1, now: 0, expiresAt: HOLD }
}

/** Lets every pending immediate, timer of 0 ms and promise callback run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** A pet with that stock (and the key id 1 the orders name as their owner). */
async function petWithStock (stores: ReturnType<typeof createSqliteStores>, stock: number): Promise<number> {
  await stores.keys.createKey({ name: 'owner', role: 'customer', plan: 'pro', perMinute: null, perDay: null, hash: 'h', prefix: 'psk_', now: 0 })
  const category = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  const { record } = await stores.pets.createPet({ name: 'Rex', categoryId: category.id, status: 'available' }, null, Date.now())
  await stores.inventory.setStock(record.id, stock, null, 0)
  return record.id
}

test('writer: orders of one turn share one commit and one fsync; each is answered only after an fsync that began after its commit; a failing order fails alone', async (t) => {
  const gate = gatedSync()
  const path = tempFile(t)
  const stores = createSqliteStores(path, { sync: gate.sync })
  t.after(async () => {
    while (gate.inFlight > 0) gate.finish()
    await stores.close()
  })
  // Set-up writes: complete their fsyncs as they come.
  const setUp = petWithStock(stores, 3)
  while (true) {
    await settle()
    if (gate.inFlight === 0) break
    gate.finish()
  }
  const petId = await setUp
  const before = gate.calls

  const answered: string[] = []
  const place = (name: string, quantity: number) =>
    stores.orders.placeOrder(newOrder(petId, quantity), null).then(
      (result) => { answered.push(`${name}:${result.record.quantity}`) },
      (error: unknown) => { answered.push(`${name}:${(error as AppError).code}`) }
    )

  // One turn: a and c fit the stock, b asks for more than is left after a.
  const first = [place('a', 2), place('b', 2), place('c', 1)]
  await settle()
  assert.equal(gate.calls, before + 1, 'one fsync for the batch')
  assert.deepEqual(answered, ['b:insufficient_stock'], 'the failing order is answered at once; the others wait for the fsync')

  // A later order commits while that fsync is in flight: it must wait for the next one.
  const later = place('d', 1)
  await settle()
  assert.equal(gate.calls, before + 1, 'no second fsync while one is in flight')
  // a and c committed (the pet is pending at stock 0), so d is refused at once, while a and c
  // still wait for their fsync.
  assert.deepEqual(answered, ['b:insufficient_stock', 'd:pet_not_available'])

  gate.finish()
  await Promise.all(first)
  assert.deepEqual(answered, ['b:insufficient_stock', 'd:pet_not_available', 'a:2', 'c:1'])
  await later

  // The committed orders are in the file, read by another connection.
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  assert.deepEqual(other.prepare('SELECT quantity FROM orders ORDER BY id').all().map((r) => r.quantity), [2, 1])
  assert.equal(other.prepare('SELECT stock FROM pets WHERE id = ?').get(petId)?.stock, 0)
})

test('writer: a commit made while an fsync is in flight is answered only after the next fsync completes', async (t) => {
  const gate = gatedSync()
  const stores = createSqliteStores(tempFile(t), { sync: gate.sync })
  t.after(async () => {
    while (gate.inFlight > 0) gate.finish()
    await stores.close()
  })
  const setUp = petWithStock(stores, 10)
  while (true) {
    await settle()
    if (gate.inFlight === 0) break
    gate.finish()
  }
  const petId = await setUp

  const answered: string[] = []
  const place = (name: string) => stores.orders.placeOrder(
    newOrder(petId, 1),
    null
  ).then(() => { answered.push(name) })
  const a = place('a')
  await settle()
  const b = place('b') // commits while a's fsync is in flight
  await settle()
  assert.equal(gate.inFlight, 1)
  gate.finish() // a's fsync: it began before b's commit, so it does not cover b
  await a
  await settle()
  assert.deepEqual(answered, ['a'])
  assert.equal(gate.inFlight, 1, 'the next fsync, for b, has started')
  gate.finish()
  await b
  assert.deepEqual(answered, ['a', 'b'])
})

test('writer: a failed fsync fails the writes it was to make durable (never acknowledged)', async (t) => {
  let fail = false
  const stores = createSqliteStores(tempFile(t), { sync: async () => { if (fail) throw new Error('EIO: fsync failed') } })
  t.after(() => stores.close())
  const petId = await petWithStock(stores, 5)
  fail = true
  await assert.rejects(stores.orders.placeOrder(newOrder(petId, 1), null), /EIO/)
})

test('writer: while another connection holds the write lock, reads answer at once and a write fails with 503 service_unavailable and Retry-After within the bound', async (t) => {
  const path = tempFile(t)
  const stores = createSqliteStores(path, { lockBoundMs: 150 })
  t.after(() => stores.close())
  const petId = await petWithStock(stores, 5)

  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  other.exec("UPDATE categories SET name = 'Locked'")

  const readStarted = performance.now()
  assert.equal((await stores.pets.getPet(petId))?.name, 'Rex')
  assert.ok(performance.now() - readStarted < 50, 'a read does not wait for the lock')

  // The event loop keeps turning while the write waits: timers fire during it.
  let ticks = 0
  const ticker = setInterval(() => { ticks++ }, 10)
  const started = performance.now()
  const error = await stores.orders.placeOrder(newOrder(petId, 1), null)
    .then(() => null, (e: unknown) => e)
  const waited = performance.now() - started
  clearInterval(ticker)
  assert.ok(error instanceof AppError, String(error))
  assert.equal(error.code, 'service_unavailable')
  assert.equal(error.status, 503)
  assert.deepEqual(error.headers, { 'retry-after': '1' })
  assert.ok(waited >= 150 && waited < 1000, `answered after ${waited} ms`)
  assert.ok(ticks >= 5, `the event loop kept turning (${ticks} ticks)`)

  // Once the lock is released, writes go through again.
  other.exec('ROLLBACK')
  const { record } = await stores.orders.placeOrder(newOrder(petId, 1), null)
  assert.equal(record.quantity, 1)
})

test('writer: a write queued behind a lock goes through when the lock is released within the bound', async (t) => {
  const path = tempFile(t)
  const stores = createSqliteStores(path, { lockBoundMs: 5000 })
  t.after(() => stores.close())
  const petId = await petWithStock(stores, 5)
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const placed = stores.orders.placeOrder(newOrder(petId, 2), null)
  await settle() // the first attempt finds the lock taken
  other.exec('COMMIT')
  assert.equal((await placed).record.quantity, 2)
})
