// A small, believable catalogue for `serve --sample-data` on a new database. The examples of
// the OpenAPI document name these records (pet 1 Rex, category 1 Dogs, orders 1 and 2, keys 1
// to 3), so a test generated from the document runs against such a server: keep them in step
// (test/openapi/examples.test.ts walks every operation with its examples on this data).
import { createKeyAdmin } from './keys/keys.service.ts'
import type { Role } from './accounts/plans.ts'
import { DEFAULT_ORDER_HOLD_MS } from './orders/orders.store.ts'
import { systemClock, type Clock } from './shared/clock.ts'
import type { Stores } from './storage/stores.ts'
import { newSecret } from './webhooks/signature.ts'
import { disabledEvent } from './webhooks/webhooks.view.ts'

const CATALOGUE: { name: string; description: string; pets: [string, 'available' | 'pending' | 'sold', number?][] }[] = [
  { name: 'Dogs', description: 'Loyal companions of every size.', pets: [['Rex', 'available'], ['Bella', 'available'], ['Max', 'pending'], ['Luna', 'available']] },
  { name: 'Cats', description: 'Independent, curious and fond of naps.', pets: [['Milo', 'available'], ['Nala', 'sold'], ['Oliver', 'available']] },
  { name: 'Birds', description: 'Songbirds and talkers.', pets: [['Kiwi', 'available'], ['Rio', 'available']] },
  // Fish are sold by the dozen: the sample orders take some.
  { name: 'Fish', description: 'Freshwater aquarium fish.', pets: [['Bubbles', 'available', 12], ['Nemo', 'available', 8]] },
  { name: 'Reptiles', description: 'Lizards and tortoises for calm homes.', pets: [['Spike', 'available'], ['Shelly', 'pending']] },
  // A category without pets yet (the only one a delete succeeds on).
  { name: 'Rabbits', description: 'Coming in spring.', pets: [] }
]

/** Loads the sample catalogue when the database has no category yet; returns whether it did. */
export async function loadSampleData (stores: Stores, clock: Clock = systemClock): Promise<boolean> {
  if ((await stores.categories.listCategories({ afterId: null, limit: 1 })).length > 0) return false
  for (const category of CATALOGUE) {
    const { id } = await stores.categories.createCategory(
      { name: category.name, description: category.description },
      clock.now()
    )
    for (const [name, status, stock] of category.pets) {
      const { record } = await stores.pets.createPet({ name, categoryId: id, status }, null, clock.now())
      // A new pet has stock 1 (rule 1); a reserved or sold one has none left. Setting 0 keeps
      // a pending or sold pet as it is (rule 6 only changes an available one).
      if (status !== 'available') await stores.inventory.setStock(record.id, 0, null, Date.now())
      else if (stock !== undefined) await stores.inventory.setStock(record.id, stock, null, Date.now())
    }
  }
  return true
}

/**
 * After loadSampleData: one key per role, shown once by the caller (customer and staff on the free
 * plan; admin on pro, because one page of the operator console at /console makes about five
 * requests and 60 a minute would throttle an operator clicking through it) and two open
 * orders of the customer (order 1: two of Bubbles, order 2: one Nemo).
 */
export async function loadSampleKeysAndOrders (
  stores: Stores,
  clock: Clock
): Promise<{ role: Role; id: number; key: string }[]> {
  const admin = createKeyAdmin(stores.keys, clock)
  const keys: { role: Role; id: number; key: string }[] = []
  for (const role of ['customer', 'staff', 'admin'] as const) {
    const { record, key } = await admin.create({ role, plan: role === 'admin' ? 'pro' : 'free', name: `sample ${role}` })
    keys.push({ role, id: record.id, key })
  }
  const ownerKeyId = keys[0]!.id
  const pets = await stores.pets.listPets({}, { afterId: null, limit: 100 })
  const petId = (name: string) => pets.find((p) => p.name === name)!.id
  // Placed as the service would place them with the default hold (rule 10).
  const now = clock.now()
  const expiresAt = now + DEFAULT_ORDER_HOLD_MS
  await stores.orders.placeOrder({
    petId: petId('Bubbles'),
    quantity: 2,
    shipDate: Date.parse('2026-12-01T10:00:00Z'),
    ownerKeyId,
    now,
    expiresAt
  }, null)
  await stores.orders.placeOrder({ petId: petId('Nemo'), quantity: 1, shipDate: null, ownerKeyId, now, expiresAt }, null)
  await loadSampleWebhooks(stores, ownerKeyId, clock)
  return keys
}

/**
 * The sample customer's webhook endpoint, which the document's examples name. Its host,
 * hooks.partner.example, is a reserved example name that receives nothing, so it is disabled
 * (manual: one webhook.disabled event in the customer's feed, carrying this description) and no
 * attempt is made; its description says what it is and what to do with it.
 */
export const SAMPLE_WEBHOOK_ID = 'wh_5f0c6b1e8d2a4c7b9e3f1a20'

async function loadSampleWebhooks (stores: Stores, ownerKeyId: number, clock: Clock): Promise<void> {
  await stores.webhooks.createWebhook({
    id: SAMPLE_WEBHOOK_ID,
    ownerKeyId,
    url: 'https://hooks.partner.example/petstore',
    types: ['order.*'],
    description: 'Sample endpoint of `serve --sample-data`: hooks.partner.example receives nothing, so it is disabled. '
      + 'Point its url at your receiver and enable it, or delete it.',
    secret: newSecret(),
    now: clock.now()
  }, 10)
  await stores.webhooks.updateWebhook(SAMPLE_WEBHOOK_ID, { status: 'disabled' }, clock.now(), disabledEvent('manual'))
}
