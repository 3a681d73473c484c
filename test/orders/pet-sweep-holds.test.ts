// Rule 10's sweep of a pet runs when placing an order only once one of the pet's open orders may
// have lapsed (issue 51 item 1; on SQLite known in memory, storage/sqlite/pet-cache.ts PetHolds),
// and must still return every lapsed order's stock before the order is judged. Faults caught: an
// order that lapses earlier than those known not lowering the pet's known lapse; a sweep rolled
// back (the order refused after it) leaving the pet marked as swept; another process's order
// unseen. On both engines (PostgreSQL: skipped without one), the last on SQLite files only.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { ENGINES } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const NOW = Date.UTC(2026, 10, 29, 12)
const HOLD = 30 * 60_000
const LATER = NOW + 2000

async function shop (stores: Stores, stock: number) {
  const category = await stores.categories.createCategory({ name: 'Fish' }, NOW)
  const { record: pet } = await stores.pets.createPet({ name: 'Goldie', categoryId: category.id, status: 'available' }, null, NOW)
  await stores.inventory.setStock(pet.id, stock, null, NOW)
  const key = async (name: string): Promise<number> => (await stores.keys.createKey({
    name, role: 'customer', plan: 'free', perMinute: null, perDay: null, hash: `h-${name}`, prefix: `psk_${name}`, now: NOW
  })).id
  const place = (owner: number, now: number, expiresAt: number, checkCooldown = false) => stores.orders.placeOrder({
    petId: pet.id, quantity: 1, shipDate: null, ownerKeyId: owner, now, expiresAt, checkCooldown
  }, null)
  return { petId: pet.id, key, place }
}

const expiredEvents = async (rows: <T>(sql: string) => Promise<T[]>): Promise<number> =>
  (await rows<{ n: number }>("SELECT count(*) AS n FROM events WHERE type = 'order.expired'")).map((r) => Number(r.n))[0]!

for (const engine of ENGINES) {
  test(`${engine.name}: an order lapsing earlier than the pet's others is swept when it lapses`, async (t) => {
    const { stores, rows } = await engine.open(t, tempDir(t, 'petstore-holds-'))
    const { key, place } = await shop(stores, 2)
    const owner = await key('owner')
    await place(owner, NOW, NOW + HOLD)
    // Swept once (nothing lapsed): the pet's earliest lapse is known, NOW + HOLD.
    await place(owner, NOW, NOW + 1000)
    await assert.rejects(place(owner, NOW, NOW + HOLD), { code: 'pet_not_available' }, 'both units held: the pet is pending')
    await place(owner, LATER, LATER + HOLD)
    assert.equal(await expiredEvents(rows), 1, 'the order that lapsed at NOW + 1000 was swept: its unit served this one')
  })

  test(`${engine.name}: a sweep undone with the order refused after it is made again by the next order`, async (t) => {
    const { stores, rows } = await engine.open(t, tempDir(t, 'petstore-holds-'))
    const { key, place } = await shop(stores, 1)
    const [first, second] = [await key('first'), await key('second')]
    const order = await place(first, NOW, NOW + HOLD)
    // A cancel starts first's cool-down from the pet (rule 11); then its order that lapses.
    await stores.orders.cancelOrder(order.record.id, { ownerKeyId: first }, null, NOW)
    await place(second, NOW, NOW + 1000)
    // first's order at LATER: the sweep returns second's unit, then the cool-down refuses; on
    // SQLite the savepoint takes the sweep back with it (PostgreSQL's place_order keeps it).
    await assert.rejects(place(first, LATER, LATER + HOLD, true), { code: 'order_cooldown' })
    await place(second, LATER, LATER + HOLD)
    assert.equal(await expiredEvents(rows), 1, 'the lapsed order was swept once, and its unit served this order')
  })
}

test('sqlite: an order another process placed, lapsing earlier than those known here, is swept when it lapses', async (t) => {
  const path = join(tempDir(t, 'petstore-holds-'), 'p.db')
  const here = createSqliteStores(path)
  t.after(() => here.close())
  const { petId, key, place } = await shop(here, 2)
  const owner = await key('owner')
  // Known here: the pet's earliest lapse is NOW + HOLD.
  await place(owner, NOW, NOW + HOLD)
  const there = createSqliteStores(path)
  t.after(() => there.close())
  const theirs = { petId, quantity: 1, shipDate: null, ownerKeyId: owner, now: NOW, expiresAt: NOW + 1000 }
  await there.orders.placeOrder(theirs, null)
  await assert.rejects(place(owner, NOW, NOW + HOLD), { code: 'pet_not_available' }, 'both units held: the pet is pending')
  await place(owner, LATER, LATER + HOLD)
})
