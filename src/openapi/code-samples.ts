// Client usage in the reference docs: every operation gets an `x-codeSamples` entry (Scalar and
// Redoc render it beside the operation) showing the call with petstore-client, the typed client in
// clients/typescript that keeps the rate-limit contract for its users (docs/product.md section 9).
// Kept apart from openapi.ts, which only calls addCodeSamples once the document is finished.

/** The lines every sample starts with: they work as written once PETSTORE_API_KEY is set. */
export const CLIENT_SETUP = `import { createPetstoreClient } from 'petstore-client'

const petstore = createPetstoreClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: process.env.PETSTORE_API_KEY! })`

/** The call of each operation, by operationId. */
export const CLIENT_CALLS: Record<string, string> = {
  listPets: `const page = await petstore.pets.list({ status: 'available', limit: 20 })
// every page, following Link rel="next":
for await (const pet of petstore.pets.all({ status: 'available' })) console.log(pet.id, pet.name)`,
  createPet: `// Always sends an Idempotency-Key (yours or a random one), so a retried create creates one pet.
const pet = await petstore.pets.create({ name: 'Rex', categoryId: 1 })`,
  getPet: `// Deprecated: the client reads a pet through GET /pets?id=, its successor.
const pet = await petstore.pets.get(1)`,
  replacePet: `const pet = await petstore.pets.replace(1, { name: 'Rex', categoryId: 1 })`,
  updatePet: `const pet = await petstore.pets.update(1, { status: 'sold' })`,
  deletePet: `await petstore.pets.delete(1)`,
  listCategories: `const page = await petstore.categories.list({ limit: 20 })
for await (const category of petstore.categories.all()) console.log(category.name)`,
  createCategory: `const category = await petstore.categories.create({ name: 'Dogs' })`,
  getCategory: `const category = await petstore.categories.get(1)`,
  replaceCategory: `const category = await petstore.categories.replace(1, { name: 'Dogs' })`,
  deleteCategory: `await petstore.categories.delete(1)`,
  listOrders: `const page = await petstore.orders.list({ complete: false })
for await (const order of petstore.orders.all({ petId: 1 })) console.log(order.id)`,
  placeOrder: `// Retried after a lost answer with the same Idempotency-Key: never two orders.
const order = await petstore.orders.place({ petId: 1, quantity: 1 })`,
  getOrder: `const order = await petstore.orders.get(1)`,
  updateOrder: `const order = await petstore.orders.complete(1)`,
  cancelOrder: `await petstore.orders.cancel(1)`,
  getInventory: `const { quantity, status } = await petstore.inventory.get(1)`,
  setInventory: `const item = await petstore.inventory.set(1, 5)`,
  createApiKey: `// Admin operations go through the typed request(): any path and method of the document.
const { key } = await petstore.request('post', '/admin/keys', { body: { role: 'customer', plan: 'free', name: 'Partner app' } })`,
  updateApiKey: `const apiKey = await petstore.request('patch', '/admin/keys/{keyId}', { path: { keyId: 1 }, body: { plan: 'pro' } })`,
  getRateLimit: `const { windows, ban } = await petstore.rateLimit()
// the X-RateLimit-* of the last response, after any call:
console.log(petstore.lastRateLimit)`
}

type Media = {
  example?: unknown
  examples?: Record<string, { value?: unknown }>
  schema?: { example?: unknown; examples?: unknown[] }
}
type Operation = {
  operationId?: string
  parameters?: { in: string; name: string }[]
  requestBody?: { content?: Record<string, Media> }
  [key: string]: unknown
}

/** The document's own example of a request body, when it has one. */
function bodyExample (operation: Operation): unknown {
  const media = operation.requestBody?.content?.['application/json']
  if (media === undefined) return undefined
  return media.example
    ?? Object.values(media.examples ?? {})[0]?.value
    ?? media.schema?.example
    ?? media.schema?.examples?.[0]
}

/** Any other operation, through the client's typed request(). */
function genericCall (method: string, path: string, operation: Operation): string {
  const pathParams = (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => `${p.name}: 1`)
  const init = [
    ...(pathParams.length > 0 ? [`path: { ${pathParams.join(', ')} }`] : []),
    ...(operation.requestBody !== undefined ? [`body: ${JSON.stringify(bodyExample(operation) ?? {})}`] : [])
  ]
  return `const result = await petstore.request('${method}', '${path}'${init.length > 0 ? `, { ${init.join(', ')} }` : ''})`
}

/** Adds `x-codeSamples` (TypeScript, petstore-client) to every operation of the document. */
export function addCodeSamples (doc: { paths: Record<string, Record<string, Operation>> }): void {
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const call = CLIENT_CALLS[operation.operationId ?? ''] ?? genericCall(method, path, operation)
      operation['x-codeSamples'] = [{ lang: 'TypeScript', label: 'petstore-client', source: `${CLIENT_SETUP}\n\n${call}\n` }]
    }
  }
}
