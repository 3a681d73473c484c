// Rule 9's cap from counts kept per owner (issue 51 item 1: a refusal at the cap costs no more than
// a placed order). On SQLite the counts live in memory beside the pet cache; every change that
// opens or closes an order must keep them true: placing, cancelling, completing, a lapse (before
// and after the sweep), a restart, another connection's writes. Faults caught: a count not
// lowered by a cancel, a completion or a sweep (the owner refused below its cap); a lapsed order
// still counted before its sweep; counts lost or doubled across a restart; another process's
// orders unseen (the owner let past its cap). On both engines (PostgreSQL: skipped without one).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import type { OrderLimits } from '../../src/accounts/plans.ts'
import { createPostgresStores } from '../../src/storage/postgres/index.ts'
import { createSqliteStores } from '../../src/storage/sqlite/index.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { openPostgresTestSchema, TEST_DATABASE_URL } from '../helpers/stores.ts'
import { tempDir } from '../helpers/temp.ts'

const NOW = Date.UTC(2026, 10, 29, 12)
const HOLD = 30 * 60_000
const CAP: OrderLimits = { openOrders: 3, unitsPerPet: 5 }

interface Engine {
  stores: Stores
  /** The same database through stores of their own (a restart, or another process). */
  another (): Promise<Stores>
}

const ENGINES: { name: string; open (t: TestContext): Promise<Engine> }[] = [
  {
    name: 'sqlite',
    async open (t) {
      const path = join(tempDir(t, 'petstore-counts-'), 'p.db')
      const stores = createSqliteStores(path)
      t.after(() => stores.close())
      return {
        stores,
        async another () {
          const other = createSqliteStores(path)
          t.after(() => other.close())
          return other
        }
      }
    }
  },
  {
    name: 'postgres',
    async open (t) {
      const { stores, schema } = await openPostgresTestSchema(t, { poolMax: 2 })
      return {
        stores,
        async another () {
          const other = await createPostgresStores(TEST_DATABASE_URL, { poolMax: 2, schema })
          t.after(() => other.close())
          return other
        }
      }
    }
  }
]

async function shop (stores: Stores) {
  const category = await stores.categories.createCategory({ name: 'Fish' }, NOW)
  const pet = async (name: string): Promise<number> => {
    const { record } = await stores.pets.createPet({ name, categoryId: category.id, status: 'available' }, null, NOW)
    await stores.inventory.setStock(record.id, 1000, null, NOW)
    return record.id
  }
  const owner = await stores.keys.createKey({
    name: 'owner', role: 'customer', plan: 'free', perMinute: null, perDay: null, hash: 'h-owner', prefix: 'psk_owner', now: NOW
  })
  return { pet, owner: owner.id }
}

/** Places as the capped owner; 'refused' when the cap refuses it, else the order's id. */
async function place (
  stores: Stores,
  owner: number,
  petId: number,
  options: { quantity?: number; now?: number; expiresAt?: number } = {}
): Promise<number | 'refused'> {
  const now = options.now ?? NOW
  try {
    const { record } = await stores.orders.placeOrder({
      petId, quantity: options.quantity ?? 1, shipDate: null, ownerKeyId: owner, now,
      expiresAt: options.expiresAt ?? now + HOLD, limits: CAP
    }, null)
    return record.id
  } catch (error) {
    if ((error as { code?: string }).code === 'order_limit_reached') return 'refused'
    throw error
  }
}

for (const engine of ENGINES) {
  test(`${engine.name}: the cap counts a placed order, and no longer a cancelled or completed one`, async (t) => {
    const { stores } = await engine.open(t)
    const { pet, owner } = await shop(stores)
    const fish = await pet('Goldie')
    const ids = [await place(stores, owner, fish), await place(stores, owner, fish), await place(stores, owner, fish)]
    assert.equal(await place(stores, owner, fish), 'refused', 'three open orders are the cap')
    await stores.orders.cancelOrder(ids[0] as number, { ownerKeyId: owner }, null, NOW)
    const fourth = await place(stores, owner, fish)
    assert.equal(typeof fourth, 'number', 'a cancelled order frees its place')
    assert.equal(await place(stores, owner, fish), 'refused')
    await stores.orders.updateOrder(ids[1] as number, { complete: true }, null, NOW)
    assert.equal(typeof await place(stores, owner, fish), 'number', 'a complete order is not open')
    assert.equal(await place(stores, owner, fish), 'refused')
  })

  test(`${engine.name}: the cap counts the units of each pet apart`, async (t) => {
    const { stores } = await engine.open(t)
    const { pet, owner } = await shop(stores)
    const [fish, bird] = [await pet('Goldie'), await pet('Tweety')]
    assert.equal(typeof await place(stores, owner, fish, { quantity: 4 }), 'number')
    assert.equal(await place(stores, owner, fish, { quantity: 2 }), 'refused', '4 + 2 units of one pet is past 5')
    assert.equal(typeof await place(stores, owner, bird, { quantity: 5 }), 'number', 'another pet has its own 5')
    const one = await place(stores, owner, fish, { quantity: 1 })
    assert.equal(typeof one, 'number', '4 + 1 is 5')
    await stores.orders.cancelOrder(one as number, { ownerKeyId: owner }, null, NOW)
    assert.equal(typeof await place(stores, owner, fish, { quantity: 1 }), 'number', 'the cancelled unit is free again')
  })

  test(`${engine.name}: a lapsed order stops counting at its lapse, before and after the sweep`, async (t) => {
    const { stores } = await engine.open(t)
    const { pet, owner } = await shop(stores)
    const [fish, bird] = [await pet('Goldie'), await pet('Tweety')]
    // Two lapse at NOW + 1000; they hold bird, so placing fish never sweeps them lazily.
    await place(stores, owner, bird, { expiresAt: NOW + 1000 })
    await place(stores, owner, bird, { expiresAt: NOW + 1000 })
    await place(stores, owner, fish)
    assert.equal(await place(stores, owner, fish), 'refused', 'before the lapse')
    const later = NOW + 2000
    assert.equal(typeof await place(stores, owner, fish, { now: later }), 'number', 'lapsed, not yet swept: not counted')
    assert.equal(typeof await place(stores, owner, fish, { now: later }), 'number')
    assert.equal(await place(stores, owner, fish, { now: later }), 'refused', 'three live ones')
    assert.deepEqual(await stores.orders.sweepExpired(later, 100), { orders: 2, pets: 1 })
    assert.equal(await place(stores, owner, fish, { now: later }), 'refused', 'the sweep took only the lapsed ones')
    const open = await stores.orders.listOrders({ ownerKeyId: owner }, { afterId: null, limit: 10 }, later)
    await stores.orders.cancelOrder(open[0]!.id, { ownerKeyId: owner }, null, later)
    assert.equal(typeof await place(stores, owner, fish, { now: later }), 'number', 'after the sweep, a cancel frees a place')
  })

  test(`${engine.name}: after a restart the cap counts the orders already open`, async (t) => {
    const { stores, another } = await engine.open(t)
    const { pet, owner } = await shop(stores)
    const fish = await pet('Goldie')
    const first = await place(stores, owner, fish)
    await place(stores, owner, fish)
    await stores.close()
    const restarted = await another()
    await place(restarted, owner, fish)
    assert.equal(await place(restarted, owner, fish), 'refused', 'two from before the restart, one after')
    await restarted.orders.cancelOrder(first as number, { ownerKeyId: owner }, null, NOW)
    assert.equal(typeof await place(restarted, owner, fish), 'number')
    assert.equal(await place(restarted, owner, fish), 'refused')
  })

  test(`${engine.name}: the cap counts the orders another process placed and cancelled`, async (t) => {
    const { stores, another } = await engine.open(t)
    const { pet, owner } = await shop(stores)
    const fish = await pet('Goldie')
    const other = await another()
    await place(stores, owner, fish)
    assert.equal(typeof await place(stores, owner, fish), 'number', 'this process has counted the owner')
    const theirs = await place(other, owner, fish)
    assert.equal(await place(stores, owner, fish), 'refused', 'the other process\'s order counts here at once')
    await other.orders.cancelOrder(theirs as number, { ownerKeyId: owner }, null, NOW)
    assert.equal(typeof await place(stores, owner, fish), 'number', 'and its cancel frees the place here')
  })
}
