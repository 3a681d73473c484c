// The store contract: what every engine must do, port by port, success and failure paths alike.
// Each engine's test file runs it on a fresh database per test (sqlite/stores.test.ts, postgres/stores.test.ts).
// Errors are checked by their stable code (the one the HTTP layer maps to a status) and their message.
import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { AppError, type ErrorCode } from '../../src/errors.ts'
import { DEFAULT_ORDER_HOLD_MS } from '../../src/orders/orders.store.ts'
import type { PetStatus } from '../../src/pets/pets.schema.ts'
import { IDEMPOTENCY_TTL_MS, type IdempotencyClaim } from '../../src/shared/store.ts'
import type { Stores } from '../../src/storage/stores.ts'
import { disabledEvent } from '../../src/webhooks/webhooks.view.ts'
import type { ClaimedDelivery, DueClaim } from '../../src/webhooks/webhooks.store.ts'

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0)
/** The hold the order service gives an order (the stores take the lapse as given). */
const HOLD = DEFAULT_ORDER_HOLD_MS

/**
 * Rejects with an AppError of this code (and so this HTTP status) and this message: the wording
 * is part of the contract, so no engine can drift from the other. Messages are written out here,
 * not taken from the factories in src/errors.ts, so a change of wording shows in this file.
 */
async function rejectsWith (promise: Promise<unknown>, code: ErrorCode, message: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AppError, `expected an AppError ${code}, got ${String(error)}`)
    assert.deepEqual({ code: error.code, message: error.message }, { code, message })
    return true
  })
}

const PRECONDITION_FAILED = 'If-Match does not match the current ETag of the resource'
const IDEMPOTENCY_KEY_REUSED = 'this Idempotency-Key was already used with a different request'

const page = (limit: number, afterId: number | null = null) => ({ afterId, limit })

/** Walks every page of a keyset list; asserts ids strictly grow, so no row comes twice. */
async function walk<T extends { id: number }> (
  list: (afterId: number | null) => T[] | Promise<T[]>,
  limit: number
): Promise<T[]> {
  const all: T[] = []
  let afterId: number | null = null
  for (;;) {
    const rows = await list(afterId)
    assert.ok(rows.length <= limit)
    for (const row of rows) {
      assert.ok(afterId === null || row.id > afterId, 'pages run in id order')
      afterId = row.id
    }
    all.push(...rows)
    if (rows.length < limit) return all
  }
}

const claimOf = (key: string, fingerprint = 'fp-1', now = NOW, scope = 'key:1'): IdempotencyClaim =>
  ({ scope, key, fingerprint, now })

export function runStoreContract (engine: string, open: (t: TestContext) => Promise<Stores>): void {
  async function withPet (t: TestContext, status: PetStatus = 'available') {
    const stores = await open(t)
    const category = await stores.categories.createCategory({ name: 'Dogs' }, NOW)
    const { record: pet } = await stores.pets.createPet({ name: 'Rex', categoryId: category.id, status }, null, NOW)
    const owner = await stores.keys.createKey({
      name: 'owner', role: 'customer', plan: 'free', perMinute: null, perDay: null,
      hash: 'h-owner', prefix: 'psk_owner', now: NOW
    })
    const other = await stores.keys.createKey({
      name: 'other', role: 'customer', plan: 'free', perMinute: null, perDay: null,
      hash: 'h-other', prefix: 'psk_other', now: NOW
    })
    const place = (quantity: number, claim: IdempotencyClaim | null = null, petId = pet.id, ownerKeyId = owner.id) =>
      stores.orders.placeOrder({ petId, quantity, shipDate: null, ownerKeyId, now: NOW, expiresAt: NOW + HOLD }, claim)
    return { stores, category, pet, owner, other, place }
  }

  /**
   * `count` endpoints subscribed to webhook.test (A, B, C … in creation order), `queue` to add
   * due test deliveries to one of them, `claim` with the dispatcher's defaults unless told, and
   * `settle` to record claimed attempts as succeeded (what the dispatcher does after each).
   */
  async function withEndpoints (t: TestContext, count: number) {
    const stores = await open(t)
    const owner = await stores.keys.createKey({
      name: 'hooks', role: 'admin', plan: 'enterprise', perMinute: null, perDay: null,
      hash: 'h-hooks', prefix: 'psk_hooks', now: NOW
    })
    const endpoints: string[] = []
    for (let i = 0; i < count; i++) {
      const id = `wh_contract${String.fromCharCode(97 + i).repeat(15)}`
      await stores.webhooks.createWebhook({
        id, ownerKeyId: owner.id, url: `http://127.0.0.1:9/${i}`, types: ['webhook.test'], description: null,
        secret: 'whsec_contract', now: NOW
      }, 10)
      endpoints.push(id)
    }
    /** Queues `n` test deliveries of `webhookId`, due at `at`, `at` + 1 …; returns their event ids. */
    const queue = async (webhookId: string, n: number, at: number): Promise<string[]> => {
      const ids: string[] = []
      for (let i = 0; i < n; i++) {
        ids.push(await stores.webhooks.queueTest(webhookId, {
          type: 'webhook.test', audience: 'webhook', subjectKeyId: owner.id, data: { webhookId }
        }, at + i))
      }
      return ids
    }
    const claim = (over: Partial<DueClaim> & { now: number }) => stores.webhooks.claimDue({
      leaseOwner: 'instance-a', leaseUntil: over.now + 15_000, limit: 64, perEndpoint: 4, inFlight: {}, ...over
    })
    const settle = async (claimed: readonly ClaimedDelivery[], at: number, leaseOwner = 'instance-a'): Promise<void> => {
      for (const d of claimed) {
        await stores.webhooks.recordAttempt({
          deliveryId: d.id, webhookId: d.webhookId, leaseOwner, attempt: d.attempts + 1, at, outcome: 'succeeded',
          status: 204, error: null, durationMs: 1, nextAttemptAt: null, disableIfFailingSince: at - 1000,
          disabledEvent: disabledEvent('failing')
        })
      }
    }
    return { stores, owner, endpoints, queue, claim, settle }
  }

  describe(`${engine} store contract`, () => {
    // ---- lifecycle ----------------------------------------------------------------------------

    test('ping resolves and close can be called twice', async (t) => {
      const stores = await open(t)
      await stores.ping()
      await stores.close()
      await stores.close()
    })

    // ---- categories ---------------------------------------------------------------------------

    test('categories: create, get and list return numbers for ids and versions, and omit a missing description', async (t) => {
      const { categories } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs', description: 'Barks' }, NOW)
      const cats = await categories.createCategory({ name: 'Cats' }, NOW)
      assert.deepEqual(dogs, { id: dogs.id, name: 'Dogs', description: 'Barks', version: 1 })
      assert.deepEqual(cats, { id: cats.id, name: 'Cats', version: 1 })
      assert.equal(typeof dogs.id, 'number')
      assert.ok(cats.id > dogs.id)
      assert.deepEqual(await categories.getCategory(dogs.id), dogs)
      assert.equal(await categories.getCategory(cats.id + 1000), null)
      assert.deepEqual(await categories.listCategories(page(10)), [dogs, cats])
      assert.deepEqual(await categories.listCategories(page(1)), [dogs])
      assert.deepEqual(await categories.listCategories(page(10, dogs.id)), [cats])
      assert.deepEqual(await categories.listCategories(page(10, cats.id)), [])
    })

    test('categories: replace bumps the version, drops an absent description, and honours If-Match', async (t) => {
      const { categories } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs', description: 'Barks' }, NOW)
      await rejectsWith(categories.replaceCategory(dogs.id + 1000, { name: 'X' }, null, NOW), 'not_found', `category ${dogs.id + 1000} not found`)
      await rejectsWith(categories.replaceCategory(dogs.id, { name: 'X' }, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      await rejectsWith(categories.replaceCategory(dogs.id, { name: 'X' }, [], NOW), 'precondition_failed', PRECONDITION_FAILED)
      assert.deepEqual(await categories.getCategory(dogs.id), dogs, 'a refused change changes nothing')
      const v2 = await categories.replaceCategory(dogs.id, { name: 'Hounds' }, [7, 1], NOW)
      assert.deepEqual(v2, { id: dogs.id, name: 'Hounds', version: 2 })
      const v3 = await categories.replaceCategory(dogs.id, { name: 'Hounds', description: 'Woof' }, null, NOW)
      assert.deepEqual(v3, { id: dogs.id, name: 'Hounds', description: 'Woof', version: 3 })
      assert.deepEqual(await categories.getCategory(dogs.id), v3)
    })

    test('categories: delete refuses a category with pets (category_in_use), a wrong version and a missing one', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const { record: rex } = await pets.createPet({ name: 'Rex', categoryId: dogs.id, status: 'available' }, null, NOW)
      await rejectsWith(categories.deleteCategory(dogs.id + 1000, null, NOW), 'not_found', `category ${dogs.id + 1000} not found`)
      await rejectsWith(categories.deleteCategory(dogs.id, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      await rejectsWith(categories.deleteCategory(dogs.id, null, NOW), 'category_in_use', `category ${dogs.id} still has pets; move or delete them first`)
      await pets.deletePet(rex.id, null, NOW)
      await categories.deleteCategory(dogs.id, [1], NOW)
      assert.equal(await categories.getCategory(dogs.id), null)
      await rejectsWith(categories.deleteCategory(dogs.id, null, NOW), 'not_found', `category ${dogs.id} not found`)
    })

    // ---- pets ---------------------------------------------------------------------------------

    test('pets: create makes the pet and its inventory entry with stock 1; get returns it', async (t) => {
      const { categories, pets, inventory } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const created = await pets.createPet({ name: 'Rex', categoryId: dogs.id, status: 'pending' }, null, NOW)
      assert.deepEqual(created, {
        record: { id: created.record.id, name: 'Rex', categoryId: dogs.id, status: 'pending', version: 1 },
        replayed: false
      })
      assert.equal(typeof created.record.id, 'number')
      assert.deepEqual(await pets.getPet(created.record.id), created.record)
      assert.equal(await pets.getPet(created.record.id + 1000), null)
      assert.deepEqual(
        await inventory.getInventory(created.record.id),
        { petId: created.record.id, quantity: 1, status: 'pending', version: 1 }
      )
    })

    test('pets: create in a missing category is category_not_found and creates nothing', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      await rejectsWith(pets.createPet({ name: 'Rex', categoryId: dogs.id + 1000, status: 'available' }, null, NOW), 'category_not_found', `category ${dogs.id + 1000} does not exist`)
      assert.deepEqual(await pets.listPets({}, page(10)), [])
    })

    test('pets: update changes what is given, bumps the version, and refuses missing pets, wrong versions and missing categories', async (t) => {
      const { stores, category, pet } = await withPet(t)
      const { pets } = stores
      const cats = await stores.categories.createCategory({ name: 'Cats' }, NOW)
      await rejectsWith(pets.updatePet(pet.id + 1000, { name: 'X' }, null, NOW), 'not_found', `pet ${pet.id + 1000} not found`)
      await rejectsWith(pets.updatePet(pet.id, { name: 'X' }, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      await rejectsWith(pets.updatePet(pet.id, { categoryId: cats.id + 1000 }, null, NOW), 'category_not_found', `category ${cats.id + 1000} does not exist`)
      assert.deepEqual(await pets.getPet(pet.id), pet, 'a refused change changes nothing')
      const v2 = await pets.updatePet(pet.id, { name: 'Max' }, [1], NOW)
      assert.deepEqual(v2, { id: pet.id, name: 'Max', categoryId: category.id, status: 'available', version: 2 })
      const v3 = await pets.updatePet(pet.id, { categoryId: cats.id, status: 'sold' }, null, NOW)
      assert.deepEqual(v3, { id: pet.id, name: 'Max', categoryId: cats.id, status: 'sold', version: 3 })
      // The search name follows the name.
      assert.deepEqual((await pets.listPets({ nameContains: 'max' }, page(10))).map((p) => p.id), [pet.id])
      assert.deepEqual(await pets.listPets({ nameContains: 'rex' }, page(10)), [])
    })

    test('pets: delete refuses missing pets, wrong versions and pets with open orders (pet_has_open_orders), and removes the inventory entry', async (t) => {
      const { stores, pet, place } = await withPet(t)
      const { pets } = stores
      await rejectsWith(pets.deletePet(pet.id + 1000, null, NOW), 'not_found', `pet ${pet.id + 1000} not found`)
      await rejectsWith(pets.deletePet(pet.id, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      const { record: order } = await place(1)
      await rejectsWith(pets.deletePet(pet.id, null, NOW), 'pet_has_open_orders', `pet ${pet.id} has open orders; complete or cancel them first`)
      const completed = await stores.orders.updateOrder(order.id, { complete: true, shipDate: NOW }, null, NOW)
      const current = (await pets.getPet(pet.id))!
      await pets.deletePet(pet.id, [current.version], NOW)
      assert.equal(await pets.getPet(pet.id), null)
      assert.equal(await stores.inventory.getInventory(pet.id), null)
      // A complete order outlives its pet, as history.
      assert.deepEqual(await stores.orders.getOrder(order.id, null), completed)
      await rejectsWith(pets.deletePet(pet.id, null, NOW), 'not_found', `pet ${pet.id} not found`)
    })

    test('pets: keyset pages walk more than 100 rows exactly once, with every filter and their combinations', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const cats = await categories.createCategory({ name: 'Cats' }, NOW)
      const statuses: PetStatus[] = ['available', 'pending', 'sold']
      const made: { id: number; name: string; categoryId: number; status: PetStatus; version: number }[] = []
      for (let i = 0; i < 230; i++) {
        // Every seventh name carries a non-ASCII upper-case needle; the store sees it lower-cased.
        const name = i % 7 === 0 ? `ÉMILE ${i}` : `Pet ${i}`
        made.push((await pets.createPet(
          { name, categoryId: i % 2 === 0 ? dogs.id : cats.id, status: statuses[i % 3]! },
          null,
          NOW
        )).record)
      }
      const cases: { filter: Parameters<Stores['pets']['listPets']>[0]; expect: typeof made }[] = [
        { filter: {}, expect: made },
        { filter: { status: 'pending' }, expect: made.filter((p) => p.status === 'pending') },
        { filter: { categoryId: cats.id }, expect: made.filter((p) => p.categoryId === cats.id) },
        { filter: { categoryId: cats.id + 1000 }, expect: [] },
        { filter: { nameContains: 'émile' }, expect: made.filter((p) => p.name.startsWith('ÉMILE')) },
        { filter: { nameContains: 'mile 1' }, expect: made.filter((p) => /^ÉMILE 1/.test(p.name)) },
        // The needle comes lower-cased; stored names are compared lower-cased.
        { filter: { nameContains: 'ÉMILE' }, expect: [] },
        { filter: { nameContains: '%' }, expect: [] }, // a substring, not a pattern
        {
          filter: { status: 'available', categoryId: dogs.id, nameContains: 'émile' },
          expect: made.filter((p) => p.status === 'available' && p.categoryId === dogs.id && p.name.startsWith('ÉMILE'))
        },
        {
          filter: { ids: [made[5]!.id, made[150]!.id, made[3]!.id, made[229]!.id + 1000] },
          expect: [made[3]!, made[5]!, made[150]!]
        },
        {
          filter: { ids: [made[5]!.id, made[6]!.id], status: 'sold' },
          expect: made.filter((p, i) => (i === 5 || i === 6) && p.status === 'sold')
        }
      ]
      for (const { filter, expect } of cases) {
        for (const limit of [1 + 100, 7]) {
          const got = await walk((afterId) => pets.listPets(filter, page(limit, afterId)), limit)
          assert.deepEqual(got, expect, `filter ${JSON.stringify(filter)}, pages of ${limit}`)
        }
      }
      assert.ok(made.filter((p) => p.status === 'pending').length > 1 + 100 - 30, 'the status walk spans pages')
    })

    // ---- idempotency --------------------------------------------------------------------------

    test('idempotency: the same key and request replays the first pet; another request is idempotency_key_reused; other scopes are apart', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const input = { name: 'Rex', categoryId: dogs.id, status: 'available' as const }
      const first = await pets.createPet(input, claimOf('k1'), NOW)
      assert.equal(first.replayed, false)
      const again = await pets.createPet(input, claimOf('k1', 'fp-1', NOW + 1000), NOW)
      assert.deepEqual(again, { record: first.record, replayed: true })
      await rejectsWith(pets.createPet(input, claimOf('k1', 'fp-2'), NOW), 'idempotency_key_reused', IDEMPOTENCY_KEY_REUSED)
      const otherScope = await pets.createPet(input, claimOf('k1', 'fp-1', NOW, 'key:2'), NOW)
      assert.equal(otherScope.replayed, false)
      assert.notEqual(otherScope.record.id, first.record.id)
      assert.equal((await pets.listPets({}, page(10))).length, 2)
    })

    test('idempotency: a claim expires after 24 hours and the key can then be used afresh', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const input = { name: 'Rex', categoryId: dogs.id, status: 'available' as const }
      const first = await pets.createPet(input, claimOf('k1'), NOW)
      const late = await pets.createPet(input, claimOf('k1', 'fp-1', NOW + IDEMPOTENCY_TTL_MS - 1), NOW)
      assert.deepEqual(late, { record: first.record, replayed: true }, 'still within 24 h')
      const expired = await pets.createPet(input, claimOf('k1', 'fp-2', NOW + IDEMPOTENCY_TTL_MS), NOW)
      assert.equal(expired.replayed, false, 'after 24 h the key is free, even for another request')
      assert.notEqual(expired.record.id, first.record.id)
      const replay = await pets.createPet(input, claimOf('k1', 'fp-2', NOW + IDEMPOTENCY_TTL_MS + 1), NOW)
      assert.deepEqual(replay, { record: expired.record, replayed: true }, 'the new use is the one remembered')
    })

    test('idempotency: a create that fails records no claim, so a retry with the same key does the work', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      await rejectsWith(
        pets.createPet({ name: 'Rex', categoryId: dogs.id + 1000, status: 'available' }, claimOf('k1'), NOW),
        'category_not_found',
        `category ${dogs.id + 1000} does not exist`
      )
      const retry = await pets.createPet({ name: 'Rex', categoryId: dogs.id, status: 'available' }, claimOf('k1'), NOW)
      assert.equal(retry.replayed, false)
    })

    test('idempotency: concurrent uses of one key create one pet; every other use replays it', async (t) => {
      const { categories, pets } = await open(t)
      const dogs = await categories.createCategory({ name: 'Dogs' }, NOW)
      const input = { name: 'Rex', categoryId: dogs.id, status: 'available' as const }
      const results = await Promise.all(Array.from({ length: 12 }, () => pets.createPet(input, claimOf('race'), NOW)))
      assert.equal(results.filter((r) => !r.replayed).length, 1)
      for (const r of results) assert.deepEqual(r.record, results[0]!.record)
      assert.equal((await pets.listPets({}, page(10))).length, 1)
    })

    // ---- orders -------------------------------------------------------------------------------

    test('orders: placing takes the stock; the last unit makes the pet pending; get and list return the order', async (t) => {
      const { stores, pet, owner, place } = await withPet(t)
      await stores.inventory.setStock(pet.id, 3, null, NOW)
      const { record: order, replayed } = await place(2)
      assert.equal(replayed, false)
      assert.deepEqual(order, {
        id: order.id, petId: pet.id, quantity: 2, shipDate: null, complete: false, ownerKeyId: owner.id, createdAt: NOW,
        expiresAt: NOW + HOLD, version: 1
      })
      assert.equal(typeof order.id, 'number')
      assert.equal(typeof order.createdAt, 'number')
      assert.deepEqual(await stores.orders.getOrder(order.id, null), order)
      assert.deepEqual(await stores.orders.getOrder(order.id, { ownerKeyId: owner.id }), order)
      let entry = await stores.inventory.getInventory(pet.id)
      assert.equal(entry?.quantity, 1)
      assert.equal(entry?.status, 'available')
      await place(1)
      entry = await stores.inventory.getInventory(pet.id)
      assert.equal(entry?.quantity, 0)
      assert.equal(entry?.status, 'pending')
      assert.equal((await stores.pets.getPet(pet.id))?.status, 'pending', 'the inventory shows the pet status')
    })

    test('orders: placing refuses a missing pet (pet_not_found), a pet not available (pet_not_available) and too little stock (insufficient_stock)', async (t) => {
      const { stores, pet, place } = await withPet(t)
      await rejectsWith(place(1, null, pet.id + 1000), 'pet_not_found', `pet ${pet.id + 1000} does not exist`)
      await rejectsWith(place(2), 'insufficient_stock', `only 1 left of pet ${pet.id}; 2 asked`)
      const { record: sold } = await stores.pets.createPet({ name: 'Gone', categoryId: pet.categoryId, status: 'sold' }, null, NOW)
      await rejectsWith(place(1, null, sold.id), 'pet_not_available', `pet ${sold.id} is sold, not available`)
      const { record: pending } = await stores.pets.createPet(
        { name: 'Held', categoryId: pet.categoryId, status: 'pending' },
        null,
        NOW
      )
      await rejectsWith(place(1, null, pending.id), 'pet_not_available', `pet ${pending.id} is pending, not available`)
      assert.deepEqual(await stores.pets.getPet(pet.id), pet, 'refused orders change nothing')
      assert.deepEqual(await stores.orders.listOrders({}, page(10)), [])
    })

    test('orders: an Idempotency-Key replays the first order without taking stock twice; another body is idempotency_key_reused', async (t) => {
      const { stores, pet, place } = await withPet(t)
      await stores.inventory.setStock(pet.id, 5, null, NOW)
      const first = await place(2, claimOf('o1'))
      const again = await place(2, claimOf('o1'))
      assert.deepEqual(again, { record: first.record, replayed: true })
      await rejectsWith(place(3, claimOf('o1', 'fp-other')), 'idempotency_key_reused', IDEMPOTENCY_KEY_REUSED)
      assert.equal((await stores.inventory.getInventory(pet.id))?.quantity, 3)
      assert.equal((await stores.orders.listOrders({}, page(10))).length, 1)
    })

    test('orders: 40 concurrent orders of 1 on a stock of 10: exactly 10 are accepted, the rest refused with 409 codes', async (t) => {
      const { stores, pet, owner } = await withPet(t)
      await stores.inventory.setStock(pet.id, 10, null, NOW)
      const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => stores.orders.placeOrder(
        { petId: pet.id, quantity: 1, shipDate: null, ownerKeyId: owner.id, now: NOW + i, expiresAt: NOW + i + HOLD },
        null
      )))
      const accepted = results.filter((r) => r.status === 'fulfilled')
      assert.equal(accepted.length, 10)
      for (const r of results) {
        if (r.status === 'rejected') {
          assert.ok(r.reason instanceof AppError, String(r.reason))
          assert.ok(['insufficient_stock', 'pet_not_available'].includes(r.reason.code), r.reason.code)
        }
      }
      assert.deepEqual(await stores.inventory.getInventory(pet.id), {
        petId: pet.id, quantity: 0, status: 'pending', version: (await stores.pets.getPet(pet.id))!.version
      })
      assert.equal((await stores.orders.listOrders({ petId: pet.id }, page(100))).length, 10)
    })

    test('orders: concurrent orders of several units never take more than the stock', async (t) => {
      const { stores, pet, owner } = await withPet(t)
      await stores.inventory.setStock(pet.id, 10, null, NOW)
      const quantities = [3, 4, 2, 5, 1, 3, 2, 4, 1, 2, 3, 1]
      const results = await Promise.allSettled(quantities.map((quantity) =>
        stores.orders.placeOrder(
          { petId: pet.id, quantity, shipDate: null, ownerKeyId: owner.id, now: NOW, expiresAt: NOW + HOLD },
          null
        )))
      const taken = results.reduce((sum, r, i) => sum + (r.status === 'fulfilled' ? quantities[i]! : 0), 0)
      const left = (await stores.inventory.getInventory(pet.id))!.quantity
      assert.equal(taken + left, 10)
      assert.ok(taken <= 10)
    })

    test('orders: update sets the ship date, completes, and refuses missing orders, wrong versions and complete orders', async (t) => {
      const { stores, place } = await withPet(t)
      const { record: order } = await place(1)
      await rejectsWith(stores.orders.updateOrder(order.id + 1000, { shipDate: NOW }, null, NOW), 'not_found', `order ${order.id + 1000} not found`)
      await rejectsWith(stores.orders.updateOrder(order.id, { shipDate: NOW }, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      const dated = await stores.orders.updateOrder(order.id, { shipDate: NOW + 5000 }, [1], NOW)
      assert.deepEqual(dated, { ...order, shipDate: NOW + 5000, version: 2 })
      const done = await stores.orders.updateOrder(order.id, { complete: true }, null, NOW)
      assert.deepEqual(done, { ...order, shipDate: NOW + 5000, complete: true, expiresAt: null, version: 3 }, 'completing keeps a known ship date and ends the hold')
      await rejectsWith(stores.orders.updateOrder(order.id, { shipDate: NOW }, null, NOW), 'order_already_complete', `order ${order.id} is complete and can no longer change`)
      await rejectsWith(stores.orders.updateOrder(order.id, { complete: true }, null, NOW), 'order_already_complete', `order ${order.id} is complete and can no longer change`)
      assert.deepEqual(await stores.orders.getOrder(order.id, null), done)
    })

    test('orders: completing the last open order of a pet with stock 0 sells the pet; an earlier completion does not', async (t) => {
      const { stores, pet, place } = await withPet(t)
      await stores.inventory.setStock(pet.id, 2, null, NOW)
      const { record: a } = await place(1)
      const { record: b } = await place(1)
      assert.equal((await stores.pets.getPet(pet.id))?.status, 'pending')
      await stores.orders.updateOrder(a.id, { complete: true, shipDate: NOW }, null, NOW)
      assert.equal((await stores.pets.getPet(pet.id))?.status, 'pending', 'one order is still open')
      await stores.orders.updateOrder(b.id, { complete: true, shipDate: NOW }, null, NOW)
      assert.equal((await stores.pets.getPet(pet.id))?.status, 'sold')
      assert.equal((await stores.inventory.getInventory(pet.id))?.status, 'sold')
    })

    test('orders: the last two open orders completing at once still sell the pet', async (t) => {
      const { stores, pet, place } = await withPet(t)
      // Several pets at once, so the completions of one pet really overlap on an engine with a pool.
      const pets = [pet]
      for (let i = 0; i < 9; i++) {
        pets.push((await stores.pets.createPet({ name: `P${i}`, categoryId: pet.categoryId, status: 'available' }, null, NOW)).record)
      }
      const orders = []
      for (const p of pets) {
        await stores.inventory.setStock(p.id, 2, null, NOW)
        orders.push((await place(1, null, p.id)).record, (await place(1, null, p.id)).record)
      }
      await Promise.all(orders.map((o) =>
        stores.orders.updateOrder(o.id, { complete: true, shipDate: NOW }, null, NOW)))
      for (const p of pets) assert.equal((await stores.pets.getPet(p.id))?.status, 'sold', `pet ${p.id}`)
    })

    test('orders: cancelling returns the stock and makes a pending pet available; it deletes the order', async (t) => {
      const { stores, pet, owner, place } = await withPet(t)
      const { record: order } = await place(1)
      assert.equal((await stores.pets.getPet(pet.id))?.status, 'pending')
      await stores.orders.cancelOrder(order.id, { ownerKeyId: owner.id }, [1], NOW)
      assert.equal(await stores.orders.getOrder(order.id, null), null)
      const entry = await stores.inventory.getInventory(pet.id)
      assert.equal(entry?.quantity, 1)
      assert.equal(entry?.status, 'available')
      await rejectsWith(stores.orders.cancelOrder(order.id, null, null, NOW), 'not_found', `order ${order.id} not found`)
    })

    test('orders: cancelling refuses another owner (not_found), a wrong version and a complete order (order_already_complete)', async (t) => {
      const { stores, other, place } = await withPet(t)
      const { record: order } = await place(1)
      await rejectsWith(stores.orders.cancelOrder(order.id, { ownerKeyId: other.id }, null, NOW), 'not_found', `order ${order.id} not found`)
      assert.equal(await stores.orders.getOrder(order.id, { ownerKeyId: other.id }), null, "another customer's order does not exist for them")
      await rejectsWith(stores.orders.cancelOrder(order.id, null, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      await stores.orders.updateOrder(order.id, { complete: true, shipDate: NOW }, null, NOW)
      await rejectsWith(stores.orders.cancelOrder(order.id, null, null, NOW), 'order_already_complete', `order ${order.id} is complete and can no longer change`)
      assert.equal((await stores.orders.getOrder(order.id, null))?.complete, true)
    })

    test('orders: concurrent cancels of one order return its stock once', async (t) => {
      const { stores, pet, place } = await withPet(t)
      await stores.inventory.setStock(pet.id, 5, null, NOW)
      const { record: order } = await place(3)
      const results = await Promise.allSettled(Array.from({ length: 5 }, () =>
        stores.orders.cancelOrder(order.id, null, null, NOW)))
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1)
      assert.equal((await stores.inventory.getInventory(pet.id))?.quantity, 5)
    })

    test('orders: list filters by pet, completeness and owner, in keyset pages', async (t) => {
      const { stores, pet, owner, other, place } = await withPet(t)
      await stores.inventory.setStock(pet.id, 1000, null, NOW)
      const { record: pet2 } = await stores.pets.createPet({ name: 'Max', categoryId: pet.categoryId, status: 'available' }, null, NOW)
      await stores.inventory.setStock(pet2.id, 1000, null, NOW)
      const made = []
      for (let i = 0; i < 120; i++) {
        const { record } = await place(1, null, i % 3 === 0 ? pet2.id : pet.id, i % 2 === 0 ? owner.id : other.id)
        made.push(i % 5 === 0
          ? await stores.orders.updateOrder(record.id, { complete: true, shipDate: NOW }, null, NOW)
          : record)
      }
      const cases = [
        { filter: {}, expect: made },
        { filter: { petId: pet2.id }, expect: made.filter((o) => o.petId === pet2.id) },
        { filter: { complete: true }, expect: made.filter((o) => o.complete) },
        { filter: { complete: false }, expect: made.filter((o) => !o.complete) },
        { filter: { ownerKeyId: other.id }, expect: made.filter((o) => o.ownerKeyId === other.id) },
        {
          filter: { petId: pet.id, complete: false, ownerKeyId: owner.id },
          expect: made.filter((o) => o.petId === pet.id && !o.complete && o.ownerKeyId === owner.id)
        },
        { filter: { petId: pet.id + 1000 }, expect: [] }
      ]
      for (const { filter, expect } of cases) {
        assert.deepEqual(
          await walk((afterId) => stores.orders.listOrders(filter, page(101, afterId)), 101),
          expect,
          JSON.stringify(filter)
        )
      }
    })

    // ---- inventory ----------------------------------------------------------------------------

    test('inventory: get and list show stock, the pet status and the pet version, in keyset pages', async (t) => {
      const { stores, pet } = await withPet(t)
      const { record: pet2 } = await stores.pets.createPet({ name: 'Max', categoryId: pet.categoryId, status: 'sold' }, null, NOW)
      assert.equal(await stores.inventory.getInventory(pet2.id + 1000), null)
      const all = await stores.inventory.listInventory(page(10))
      assert.deepEqual(all, [
        { petId: pet.id, quantity: 1, status: 'available', version: 1 },
        { petId: pet2.id, quantity: 1, status: 'sold', version: 1 }
      ])
      assert.deepEqual(await stores.inventory.listInventory(page(10, pet.id)), [all[1]])
      const renamed = await stores.pets.updatePet(pet.id, { name: 'Rexy' }, null, NOW)
      assert.equal((await stores.inventory.getInventory(pet.id))?.version, renamed.version, 'any change of the pet changes the entry ETag')
    })

    test('inventory: setting stock applies rule 6 and bumps the pet version; refuses missing pets and wrong versions', async (t) => {
      const { stores, pet, place } = await withPet(t)
      const inv = stores.inventory
      await rejectsWith(inv.setStock(pet.id + 1000, 1, null, NOW), 'not_found', `pet ${pet.id + 1000} not found`)
      await rejectsWith(inv.setStock(pet.id, 1, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      // 0 without open orders: available -> sold.
      assert.deepEqual(await inv.setStock(pet.id, 0, [1], NOW), { petId: pet.id, quantity: 0, status: 'sold', version: 2 })
      assert.deepEqual(await stores.pets.getPet(pet.id), { ...pet, status: 'sold', version: 2 })
      // above 0: sold -> available.
      assert.deepEqual(await inv.setStock(pet.id, 4, null, NOW), { petId: pet.id, quantity: 4, status: 'available', version: 3 })
      // 0 with an open order: available -> pending; then above 0: pending -> available.
      await place(1)
      const zero = await inv.setStock(pet.id, 0, null, NOW)
      assert.equal(zero.status, 'pending')
      assert.equal((await inv.setStock(pet.id, 2, null, NOW)).status, 'available')
      // 0 on a pending or sold pet keeps its status; the same stock still bumps the version.
      await stores.pets.updatePet(pet.id, { status: 'pending' }, null, NOW)
      const kept = await inv.setStock(pet.id, 0, null, NOW)
      assert.equal(kept.status, 'pending')
      const again = await inv.setStock(pet.id, 0, [kept.version], NOW)
      assert.equal(again.version, kept.version + 1)
    })

    // ---- keys and bans ------------------------------------------------------------------------

    test('keys: create, find by hash (revoked included), get and list in keyset pages', async (t) => {
      const { keys } = await open(t)
      const a = await keys.createKey({
        name: 'a', role: 'staff', plan: 'pro', perMinute: null, perDay: null,
        hash: 'hash-a', prefix: 'psk_aaaaaaaa', now: NOW
      })
      const b = await keys.createKey({
        name: null, role: 'admin', plan: 'enterprise', perMinute: 5000, perDay: 1_000_000_000,
        hash: 'hash-b', prefix: 'psk_bbbbbbbb', now: NOW + 1
      })
      const fresh = { expiresAt: null, replaces: null, replacedBy: null, lastUsedAt: null, scopes: null }
      assert.deepEqual(a, {
        id: a.id, name: 'a', role: 'staff', plan: 'pro', perMinute: null, perDay: null,
        prefix: 'psk_aaaaaaaa', createdAt: NOW, revokedAt: null, ...fresh, quotaKeyId: a.id, version: 1
      })
      assert.deepEqual(b, {
        id: b.id, name: null, role: 'admin', plan: 'enterprise', perMinute: 5000, perDay: 1_000_000_000,
        prefix: 'psk_bbbbbbbb', createdAt: NOW + 1, revokedAt: null, ...fresh, quotaKeyId: b.id, version: 1
      })
      assert.equal(typeof b.perDay, 'number')
      assert.deepEqual(await keys.findKeyByHash('hash-b'), b)
      assert.equal(await keys.findKeyByHash('hash-c'), null)
      assert.deepEqual(await keys.getKey(a.id), a)
      assert.equal(await keys.getKey(b.id + 1000), null)
      assert.deepEqual(await keys.listKeys(page(10)), [a, b])
      assert.deepEqual(await keys.listKeys(page(1, a.id)), [b])
      const revoked = await keys.revokeKey(a.id, NOW + 10, null)
      assert.deepEqual(await keys.findKeyByHash('hash-a'), revoked)
    })

    test('keys: update changes what is given (null clears a quota) and refuses missing keys and wrong versions', async (t) => {
      const { keys } = await open(t)
      const k = await keys.createKey({ name: 'a', role: 'customer', plan: 'enterprise', perMinute: 10, perDay: 100, hash: 'h', prefix: 'psk_x', now: NOW })
      await rejectsWith(keys.updateKey(k.id + 1000, { name: 'x' }, null, NOW), 'not_found', `key ${k.id + 1000} not found`)
      await rejectsWith(keys.updateKey(k.id, { name: 'x' }, [2], NOW), 'precondition_failed', PRECONDITION_FAILED)
      const v2 = await keys.updateKey(k.id, { role: 'staff', perMinute: 20 }, [1], NOW)
      assert.deepEqual(v2, { ...k, role: 'staff', perMinute: 20, version: 2 })
      const v3 = await keys.updateKey(k.id, { plan: 'pro', perMinute: null, perDay: null, name: 'b' }, null, NOW)
      assert.deepEqual(v3, { ...k, name: 'b', role: 'staff', plan: 'pro', perMinute: null, perDay: null, version: 3 })
    })

    test('keys: revoke is idempotent (the second keeps the first time and version) and refuses missing keys and wrong versions', async (t) => {
      const { keys } = await open(t)
      const k = await keys.createKey({
        name: 'a', role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'h', prefix: 'psk_x', now: NOW
      })
      await rejectsWith(keys.revokeKey(k.id + 1000, NOW, null), 'not_found', `key ${k.id + 1000} not found`)
      await rejectsWith(keys.revokeKey(k.id, NOW, [2]), 'precondition_failed', PRECONDITION_FAILED)
      const revoked = await keys.revokeKey(k.id, NOW + 5, [1])
      assert.deepEqual(revoked, { ...k, revokedAt: NOW + 5, version: 2 })
      assert.deepEqual(await keys.revokeKey(k.id, NOW + 9, null), revoked)
    })

    test('bans: record, the active ban (latest ending), lift (only those in force) and the lifts since a time', async (t) => {
      const { keys } = await open(t)
      const k = await keys.createKey({
        name: 'a', role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'h1', prefix: 'psk_1', now: NOW
      })
      const j = await keys.createKey({
        name: 'b', role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'h2', prefix: 'psk_2', now: NOW
      })
      const MIN = 60_000
      const old = await keys.recordBan({
        keyId: k.id, subject: `key:${k.id}`, startedAt: NOW - 60 * MIN, endsAt: NOW - 45 * MIN, reason: 'first'
      })
      assert.deepEqual(old, {
        id: old.id, keyId: k.id, subject: `key:${k.id}`, startedAt: NOW - 60 * MIN, endsAt: NOW - 45 * MIN,
        reason: 'first', liftedAt: null
      })
      assert.equal(typeof old.id, 'number')
      assert.equal(await keys.activeBan(k.id, NOW), null, 'an ended ban is not active')
      const short = await keys.recordBan({
        keyId: k.id, subject: `key:${k.id}`, startedAt: NOW, endsAt: NOW + 15 * MIN, reason: 'second'
      })
      const long = await keys.recordBan({
        keyId: k.id, subject: `key:${k.id}`, startedAt: NOW, endsAt: NOW + 30 * MIN, reason: 'third'
      })
      const others = await keys.recordBan({
        keyId: j.id, subject: `key:${j.id}`, startedAt: NOW, endsAt: NOW + 15 * MIN, reason: 'other'
      })
      assert.deepEqual(await keys.activeBan(k.id, NOW + MIN), long)
      assert.deepEqual(await keys.activeBan(k.id, NOW + 20 * MIN), long)
      assert.equal(await keys.activeBan(k.id, NOW + 30 * MIN), null, 'a ban ends at ends_at')
      assert.equal(await keys.liftBans(k.id, NOW + MIN), 2, 'only the bans in force are lifted')
      assert.equal(await keys.activeBan(k.id, NOW + 2 * MIN), null)
      assert.deepEqual(await keys.activeBan(j.id, NOW + 2 * MIN), others, "another key's ban stays")
      assert.equal(await keys.liftBans(k.id, NOW + 2 * MIN), 0)
      assert.equal(await keys.liftBans(j.id, NOW + 3 * MIN), 1)
      const lifted = await keys.bansLiftedSince(NOW)
      for (let i = 1; i < lifted.length; i++) assert.ok(lifted[i - 1]!.liftedAt! <= lifted[i]!.liftedAt!, 'in lift order')
      assert.deepEqual(
        lifted.map((b) => [b.id, b.liftedAt]).sort((x, y) => x[1]! - y[1]! || x[0]! - y[0]!),
        [[short.id, NOW + MIN], [long.id, NOW + MIN], [others.id, NOW + 3 * MIN]]
          .sort((x, y) => x[1]! - y[1]! || x[0]! - y[0]!)
      )
      assert.deepEqual((await keys.bansLiftedSince(NOW + MIN)).map((b) => b.id), [others.id], 'strictly after')
      assert.equal((await keys.bansLiftedSince(NOW + 3 * MIN)).length, 0)
      assert.equal(lifted.find((b) => b.id === old.id), undefined, 'an ended ban is never lifted')
    })

    // ---- key lifecycle: expiry, rotation, usage -----------------------------------------------

    test('keys: createKey stores expiresAt; a key made without it never expires', async (t) => {
      const { keys } = await open(t)
      const k = await keys.createKey({
        name: 'x', role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'h', prefix: 'psk_x', now: NOW, expiresAt: NOW + 90_000
      })
      assert.equal(k.expiresAt, NOW + 90_000)
      assert.deepEqual(await keys.getKey(k.id), k)
      const never = await keys.createKey({
        name: 'y', role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'h2', prefix: 'psk_y', now: NOW
      })
      assert.equal(never.expiresAt, null)
    })

    test('keys: rotateKey makes a successor with the same settings and quota identity, and ends the old key after the grace period', async (t) => {
      const { keys } = await open(t)
      const a = await keys.createKey({
        name: 'partner', role: 'staff', plan: 'enterprise', perMinute: 50, perDay: 5000,
        hash: 'ha', prefix: 'psk_a', now: NOW, scopes: ['orders:read', 'catalog:write']
      })
      assert.deepEqual(a.scopes, ['catalog:write', 'orders:read'], 'stored in canonical order')
      const { old, created } = await keys.rotateKey(a.id, {
        hash: 'hb', prefix: 'psk_b', now: NOW + 10, graceEndsAt: NOW + 3_600_010
      })
      assert.deepEqual(created, {
        id: created.id, name: 'partner', role: 'staff', plan: 'enterprise', perMinute: 50, perDay: 5000,
        prefix: 'psk_b', createdAt: NOW + 10, revokedAt: null, expiresAt: null, replaces: a.id, replacedBy: null,
        quotaKeyId: a.id, lastUsedAt: null, version: 1, scopes: ['catalog:write', 'orders:read']
      })
      assert.deepEqual(old, { ...a, expiresAt: NOW + 3_600_010, replacedBy: created.id, version: 2 })
      assert.deepEqual(await keys.findKeyByHash('hb'), created)
      assert.deepEqual(await keys.getKey(a.id), old)
      // The successor's successor still shares the first key's identity.
      const second = await keys.rotateKey(created.id, { hash: 'hc', prefix: 'psk_c', now: NOW + 20, graceEndsAt: NOW + 20 })
      assert.equal(second.created.quotaKeyId, a.id)
      assert.equal(second.created.replaces, created.id)
      assert.equal(second.old.expiresAt, NOW + 20)
    })

    test('keys: rotateKey keeps an earlier expiry and refuses revoked, expired, already rotated and missing keys', async (t) => {
      const { keys } = await open(t)
      const make = (n: number, expiresAt: number | null = null) => keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: `h${n}`, prefix: `psk_${n}`, now: NOW, expiresAt
      })
      const soon = await make(1, NOW + 60_000)
      const { old } = await keys.rotateKey(soon.id, { hash: 'h1b', prefix: 'psk_1b', now: NOW, graceEndsAt: NOW + 86_400_000 })
      assert.equal(old.expiresAt, NOW + 60_000, 'rotation never lengthens a key\'s life')
      await rejectsWith(
        keys.rotateKey(soon.id, { hash: 'h1c', prefix: 'psk_1c', now: NOW, graceEndsAt: NOW + 1000 }),
        'api_key_not_rotatable',
        `key ${soon.id} was already rotated: key ${old.replacedBy} replaces it; rotate key ${old.replacedBy} instead`
      )
      const revoked = await make(2)
      await keys.revokeKey(revoked.id, NOW, null)
      await rejectsWith(
        keys.rotateKey(revoked.id, { hash: 'h2b', prefix: 'psk_2b', now: NOW + 1, graceEndsAt: NOW + 1000 }),
        'api_key_not_rotatable',
        `key ${revoked.id} was revoked at 2026-11-21T12:00:00.000Z; only a live key can be rotated`
      )
      const expired = await make(3, NOW + 1000)
      await rejectsWith(
        keys.rotateKey(expired.id, { hash: 'h3b', prefix: 'psk_3b', now: NOW + 1000, graceEndsAt: NOW + 5000 }),
        'api_key_not_rotatable',
        `key ${expired.id} expired at 2026-11-21T12:00:01.000Z; only a live key can be rotated`
      )
      await rejectsWith(
        keys.rotateKey(expired.id + 1000, { hash: 'h4b', prefix: 'psk_4b', now: NOW, graceEndsAt: NOW }),
        'not_found',
        `key ${expired.id + 1000} not found`
      )
      assert.equal(await keys.findKeyByHash('h2b'), null, 'a refused rotation makes no key')
      assert.equal(await keys.findKeyByHash('h3b'), null)
    })

    test('keys: two rotations of one key at once make one successor; the other is api_key_not_rotatable', async (t) => {
      const { keys } = await open(t)
      const a = await keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'ha', prefix: 'psk_a', now: NOW
      })
      const results = await Promise.allSettled([1, 2].map((n) =>
        keys.rotateKey(a.id, { hash: `h${n}`, prefix: `psk_${n}`, now: NOW, graceEndsAt: NOW + 1000 })))
      const made = results.filter((r) => r.status === 'fulfilled')
      const refused = results.filter((r) => r.status === 'rejected')
      assert.equal(made.length, 1)
      assert.equal(refused.length, 1)
      assert.equal((refused[0] as PromiseRejectedResult).reason.code, 'api_key_not_rotatable')
      assert.equal(
        (await keys.getKey(a.id))!.replacedBy,
        (made[0] as PromiseFulfilledResult<{ created: { id: number } }>).value.created.id
      )
      assert.equal((await keys.listKeys(page(10))).length, 2)
    })

    test('bans: a ban started through any key of a rotation chain is the ban of every key in it, and lifting through one lifts it for all', async (t) => {
      const { keys } = await open(t)
      const a = await keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'ha', prefix: 'psk_a', now: NOW
      })
      const other = await keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'hx', prefix: 'psk_x', now: NOW
      })
      const { created: b } = await keys.rotateKey(a.id, { hash: 'hb', prefix: 'psk_b', now: NOW, graceEndsAt: NOW + 3_600_000 })
      const ban = await keys.recordBan({ keyId: b.id, subject: `key:${a.id}`, startedAt: NOW, endsAt: NOW + 900_000, reason: 'r' })
      assert.deepEqual(await keys.activeBan(a.id, NOW + 1), ban)
      assert.deepEqual(await keys.activeBan(b.id, NOW + 1), ban)
      assert.equal(await keys.activeBan(other.id, NOW + 1), null)
      assert.equal(await keys.liftBans(a.id, NOW + 2), 1)
      assert.equal(await keys.activeBan(b.id, NOW + 3), null)
    })

    test('usage: recordUsage adds counts per key and day and moves lastUsedAt only forward; usage reads from a day on, oldest first', async (t) => {
      const { keys } = await open(t)
      const a = await keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'ha', prefix: 'psk_a', now: NOW
      })
      const b = await keys.createKey({
        name: null, role: 'customer', plan: 'free', perMinute: null, perDay: null,
        hash: 'hb', prefix: 'psk_b', now: NOW
      })
      await keys.recordUsage({ counts: [], lastUsed: [] })
      await keys.recordUsage({
        counts: [
          { keyId: b.id, day: '2026-11-21', allowed: 5, limited: 1, banned: 0 },
          { keyId: a.id, day: '2026-11-21', allowed: 3, limited: 0, banned: 2 },
          { keyId: a.id, day: '2026-11-19', allowed: 1, limited: 0, banned: 0 }
        ],
        lastUsed: [{ keyId: a.id, at: NOW + 500 }, { keyId: b.id, at: NOW + 100 }]
      })
      await keys.recordUsage({
        counts: [{ keyId: a.id, day: '2026-11-21', allowed: 10, limited: 4, banned: 1, mcp: 2 }],
        // Another instance's older use arrives later: lastUsedAt stays.
        lastUsed: [{ keyId: a.id, at: NOW + 200 }, { keyId: b.id, at: NOW + 900 }]
      })
      assert.deepEqual(await keys.usage(a.id, '2026-11-01'), [
        { keyId: a.id, day: '2026-11-19', allowed: 1, limited: 0, banned: 0, mcp: 0, other4xx: 0 },
        { keyId: a.id, day: '2026-11-21', allowed: 13, limited: 4, banned: 3, mcp: 2, other4xx: 0 }
      ])
      assert.deepEqual(await keys.usage(a.id, '2026-11-20'), [
        { keyId: a.id, day: '2026-11-21', allowed: 13, limited: 4, banned: 3, mcp: 2, other4xx: 0 }
      ])
      assert.deepEqual(await keys.usage(b.id, '2026-11-21'), [
        { keyId: b.id, day: '2026-11-21', allowed: 5, limited: 1, banned: 0, mcp: 0, other4xx: 0 }
      ])
      assert.equal((await keys.getKey(a.id))!.lastUsedAt, NOW + 500)
      const bNow = (await keys.getKey(b.id))!
      assert.equal(bNow.lastUsedAt, NOW + 900)
      assert.equal(bNow.version, 1, 'use is not a change of the key: its ETag stays')
    })

    // ---- webhook claims -----------------------------------------------------------------------

    test('webhooks: claimDue takes at most each endpoint\'s room counting this instance\'s in-flight, oldest due first, never a disabled endpoint or what is not yet due', async (t) => {
      const { stores, owner, endpoints: [a, b, c], queue, claim } = await withEndpoints(t, 3)
      const aEvents = await queue(a!, 4, NOW)
      const bEvents = await queue(b!, 3, NOW + 10)
      await queue(a!, 1, NOW + 5000)
      await queue(c!, 2, NOW)
      await stores.webhooks.updateWebhook(c!, { status: 'disabled' }, NOW, disabledEvent('manual'))
      const now = NOW + 100
      // A is at its room (2 of 2 in flight here): nothing more of it; B gets its 2 oldest.
      const first = await claim({ now, perEndpoint: 2, inFlight: { [a!]: 2 } })
      assert.deepEqual(first.map((d) => [d.webhookId, d.event.id]), [[b, bEvents[0]], [b, bEvents[1]]])
      assert.deepEqual({ ...first[0]!, event: first[0]!.event.type }, {
        id: first[0]!.id, webhookId: b, ownerKeyId: owner.id, url: 'http://127.0.0.1:9/1', secrets: ['whsec_contract'],
        attempts: 0, event: 'webhook.test', testType: null, kind: 'first', requestBody: null
      })
      // One slot of A left: its oldest due; B is full now; the one due at NOW + 5000 waits.
      const second = await claim({ now, perEndpoint: 2, inFlight: { [a!]: 1, [b!]: 2 } })
      assert.deepEqual(second.map((d) => d.event.id), [aEvents[0]])
      // The rest, in due order across endpoints; C is disabled and keeps its deliveries.
      const third = await claim({ now })
      assert.deepEqual(third.map((d) => d.event.id), [aEvents[1], aEvents[2], aEvents[3], bEvents[2]])
      assert.deepEqual(await claim({ now }), [])
      assert.deepEqual(await claim({ now, limit: 0 }), [])
    })

    test('webhooks: with a small limit, endpoints take turns: three with 10 due each are all served within three claims', async (t) => {
      const { endpoints, queue, claim, settle } = await withEndpoints(t, 3)
      // A's backlog is the oldest, then B's, then C's: oldest-first alone would serve only A.
      for (const [i, id] of endpoints.entries()) await queue(id, 10, NOW + i * 10)
      const served: string[][] = []
      for (let round = 0; round < 3; round++) {
        const now = NOW + 1000 + round
        const claimed = await claim({ now, limit: 2, perEndpoint: 2 })
        assert.equal(claimed.length, 2, 'the limit is used')
        served.push(claimed.map((d) => d.webhookId))
        await settle(claimed, now)
      }
      assert.deepEqual(new Set(served.flat()), new Set(endpoints), `every endpoint served: ${JSON.stringify(served)}`)
    })

    test('webhooks: claimDue skips a delivery another owner leased until its lease has expired, then takes it', async (t) => {
      const { endpoints: [a], queue, claim } = await withEndpoints(t, 1)
      const events = await queue(a!, 3, NOW)
      const leasedAt = NOW + 100
      const held = await claim({ now: leasedAt, leaseOwner: 'instance-a', leaseUntil: leasedAt + 1000, limit: 1 })
      assert.deepEqual(held.map((d) => d.event.id), [events[0]])
      // Another instance, with its own room: the two others, never the leased one.
      const other = await claim({ now: leasedAt + 500, leaseOwner: 'instance-b', leaseUntil: leasedAt + 5000 })
      assert.deepEqual(other.map((d) => d.event.id), [events[1], events[2]])
      assert.deepEqual(await claim({ now: leasedAt + 1000, leaseOwner: 'instance-b' }), [], 'a lease holds up to its last instant')
      const taken = await claim({ now: leasedAt + 1001, leaseOwner: 'instance-b' })
      assert.deepEqual(taken.map((d) => [d.id, d.event.id]), [[held[0]!.id, events[0]]], 'an expired lease is taken over')
    })

    test('webhooks: an attempt that ends after its endpoint was deleted is dropped, not an error', async (t) => {
      // Fault caught: the attempt's insert failing its foreign key (the dispatcher logged a
      // warning for each attempt in flight when an endpoint was deleted).
      const { stores, endpoints: [a], queue, claim } = await withEndpoints(t, 1)
      await queue(a!, 1, NOW)
      const [claimed] = await claim({ now: NOW + 100 })
      assert.equal(await stores.webhooks.deleteWebhook(a!, NOW + 200), true)
      await stores.webhooks.recordAttempt({
        deliveryId: claimed!.id, webhookId: a!, leaseOwner: 'instance-a', attempt: 1, at: NOW + 300,
        outcome: 'succeeded', status: 204, error: null, durationMs: 1, nextAttemptAt: null, disableIfFailingSince: NOW,
        disabledEvent: () => { throw new Error('not disabled') }
      })
      assert.equal(await stores.webhooks.getWebhook(a!), null)
    })
  })
}
