// The pet cache of the SQLite engine (src/storage/sqlite/pet-cache.ts): exact for this process's
// writes, another connection's commits seen within the check interval, bounded in size.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test, type TestContext } from 'node:test'
import { DEFAULT_ORDER_HOLD_MS as HOLD } from '../../../src/orders/orders.store.ts'
import { createPetService } from '../../../src/pets/pets.service.ts'
import { systemClock } from '../../../src/shared/clock.ts'
import { createSqliteStores } from '../../../src/storage/sqlite/index.ts'
import { tempDir } from '../../helpers/temp.ts'

function tempFile (t: TestContext): string {
  const dir = tempDir(t, 'petstore-cache-')
  return join(dir, 'petstore.db')
}

test('pet cache: every write of this process (pet, stock, order, cancel, delete) is seen by the next read', async (t) => {
  const stores = createSqliteStores(tempFile(t))
  t.after(() => stores.close())
  await stores.keys.createKey({ name: 'owner', role: 'customer', plan: 'pro', perMinute: null, perDay: null, hash: 'h', prefix: 'psk_', now: 0 })
  const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  const { record } = await stores.pets.createPet({ name: 'Rex', categoryId: dogs.id, status: 'available' }, null, Date.now())
  const id = record.id
  const read = async () => {
    const [one, listed] = await Promise.all([
      stores.pets.getPet(id),
      stores.pets.listPets({ ids: [id] }, { limit: 20, afterId: null })
    ])
    assert.deepEqual(listed, one === null ? [] : [one])
    return one
  }
  assert.deepEqual(await read(), { id, name: 'Rex', categoryId: dogs.id, status: 'available', version: 1 })

  assert.equal((await stores.pets.updatePet(id, { name: 'Max' }, null, Date.now())).name, 'Max')
  assert.deepEqual(await read(), { id, name: 'Max', categoryId: dogs.id, status: 'available', version: 2 })

  await stores.inventory.setStock(id, 2, null, 0)
  assert.equal((await read())?.version, 3)

  const { record: order } = await stores.orders.placeOrder(
    { petId: id, quantity: 2, shipDate: null, ownerKeyId: 1, now: 0, expiresAt: HOLD },
    null
  )
  assert.deepEqual(await read(), { id, name: 'Max', categoryId: dogs.id, status: 'pending', version: 4 })

  await stores.orders.cancelOrder(order.id, null, null, 0)
  assert.deepEqual(await read(), { id, name: 'Max', categoryId: dogs.id, status: 'available', version: 5 })

  const { record: again } = await stores.orders.placeOrder(
    { petId: id, quantity: 2, shipDate: null, ownerKeyId: 1, now: 0, expiresAt: HOLD },
    null
  )
  await stores.orders.updateOrder(again.id, { complete: true, shipDate: 0 }, null, 0)
  assert.equal((await read())?.status, 'sold')

  const other = await stores.pets.createPet({ name: 'Spot', categoryId: dogs.id, status: 'available' }, null, Date.now())
  await stores.pets.getPet(other.record.id)
  await stores.pets.deletePet(other.record.id, null, Date.now())
  assert.equal(await stores.pets.getPet(other.record.id), null)
})

/** Stores with one pet, Rex, read once (so cached), and another connection to the same file. */
async function cachedPetAndAnotherConnection (t: TestContext, checkEveryMs: number) {
  const path = tempFile(t)
  const stores = createSqliteStores(path, { petCache: { checkEveryMs } })
  t.after(() => stores.close())
  const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  const { record } = await stores.pets.createPet({ name: 'Rex', categoryId: dogs.id, status: 'available' }, null, Date.now())
  assert.equal((await stores.pets.getPet(record.id))?.name, 'Rex')
  const other = new DatabaseSync(path)
  t.after(() => other.close())
  return { stores, id: record.id, categoryId: dogs.id, other }
}

test('pet cache: a commit by another connection is seen at the next check (every read here)', async (t) => {
  const { stores, id, categoryId, other } = await cachedPetAndAnotherConnection(t, 0)
  other.prepare("UPDATE pets SET name = 'Changed elsewhere', version = version + 1 WHERE id = ?").run(id)
  assert.deepEqual(await stores.pets.getPet(id), { id, name: 'Changed elsewhere', categoryId, status: 'available', version: 2 })
  assert.deepEqual(
    await stores.pets.listPets({ ids: [id] }, { limit: 1, afterId: null }),
    [{ id, name: 'Changed elsewhere', categoryId, status: 'available', version: 2 }]
  )
})

test('pet cache: commits by another connection are seen once the check interval has passed, again and again', async (t) => {
  // Fault caught: the check armed once only (the second change would never be seen).
  const { stores, id, other } = await cachedPetAndAnotherConnection(t, 40)
  for (const name of ['First', 'Second', 'Third']) {
    other.prepare('UPDATE pets SET name = ?, version = version + 1 WHERE id = ?').run(name, id)
    await new Promise((resolve) => setTimeout(resolve, 60))
    assert.equal((await stores.pets.getPet(id))?.name, name)
  }
})

test('pet cache: ?id= reads keep id order, the cursor and the limit, and skip missing ids', async (t) => {
  const stores = createSqliteStores(tempFile(t), { petCache: { maxEntries: 2 } })
  t.after(() => stores.close())
  const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  const ids: number[] = []
  for (const name of ['a', 'b', 'c', 'd']) {
    ids.push((await stores.pets.createPet({ name, categoryId: dogs.id, status: 'available' }, null, Date.now())).record.id)
  }
  const names = async (filterIds: number[], page: { limit: number; afterId: number | null }) =>
    (await stores.pets.listPets({ ids: filterIds }, page)).map((p) => p.name)
  assert.deepEqual(await names([ids[3]!, ids[0]!, 999, ids[2]!], { limit: 20, afterId: null }), ['a', 'c', 'd'])
  assert.deepEqual(await names([ids[3]!, ids[0]!, 999, ids[2]!], { limit: 2, afterId: null }), ['a', 'c'])
  assert.deepEqual(await names([ids[3]!, ids[0]!, 999, ids[2]!], { limit: 2, afterId: ids[0]! }), ['c', 'd'])
  // Bounded at two entries: still right after evictions.
  for (const id of [...ids, ...ids]) assert.equal((await stores.pets.getPet(id))?.id, id)
})

test('pet service on SQLite: a page is answered in the same turn, as the store answers it, and a bad cursor throws at once', async (t) => {
  const stores = createSqliteStores(tempFile(t))
  t.after(() => stores.close())
  const service = createPetService(stores.pets, systemClock)
  const dogs = await stores.categories.createCategory({ name: 'Dogs' }, Date.now())
  const ids: number[] = []
  for (const name of ['Rex', 'Max', 'Ada']) {
    ids.push((await stores.pets.createPet({ name, categoryId: dogs.id, status: 'available' }, null, Date.now())).record.id)
  }
  for (const query of [{ id: [ids[2]!, ids[0]!] }, { limit: 2 }, { status: 'available' as const, limit: 1 }]) {
    const page = service.list(query)
    assert.ok(!(page instanceof Promise), `${JSON.stringify(query)}: no promise`)
    const rows = await stores.pets.listPets({
      ...(query.id !== undefined && { ids: query.id }),
      ...(query.status !== undefined && { status: query.status })
    }, { afterId: null, limit: (query.limit ?? 20) + 1 })
    assert.deepEqual(page.items, rows.slice(0, query.limit ?? 20), JSON.stringify(query))
    assert.equal(page.nextCursor === null, rows.length <= (query.limit ?? 20))
  }
  assert.throws(() => service.list({ cursor: 'nope' }), (error: Error & { code?: string }) => error.code === 'validation_failed')
})
