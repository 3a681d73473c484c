// Type tests: `npm run typecheck` compiles this file; every @ts-expect-error must meet an error,
// so misuse that starts compiling fails the check. Never run, only compiled.
import { createPetstoreClient, type components, type operations } from '../src/index.ts'

const client = createPetstoreClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: 'psk_example' })

export async function misuse (): Promise<void> {
  // @ts-expect-error a pet's name is a string (and categoryId is required)
  await client.pets.create({ name: 1 })
  // @ts-expect-error a pet's name is a string
  await client.pets.create({ name: 1, categoryId: 1 })
  // @ts-expect-error status is one of available, pending, sold
  await client.pets.update(1, { status: 'lost' })
  // @ts-expect-error unknown fields are refused by the server and by the types
  await client.pets.create({ name: 'Rex', categoryId: 1, colour: 'brown' })
  // @ts-expect-error an order's quantity is a number
  await client.orders.place({ petId: 1, quantity: '2' })
  // @ts-expect-error pets.list takes no unknown filter
  await client.pets.list({ colour: 'brown' })
  // @ts-expect-error the escape hatch knows the paths of the document
  await client.request('get', '/pet')
  // @ts-expect-error and the parameters of each operation
  await client.request('get', '/pets/{petId}', { path: { id: 1 } })
}

export async function use (): Promise<void> {
  const pet = await client.pets.create({ name: 'Rex', categoryId: 1 })
  const name: string = pet.name
  const pages: number[] = (await client.pets.list({ status: 'available', limit: 10 })).map((p) => p.id)
  const stock: number = (await client.inventory.get(pet.id)).quantity
  const minute: number = (await client.rateLimit()).windows.minute.remaining
  const old: string = (await client.request('get', '/pets/{petId}', { path: { petId: pet.id } })).name
  // The document's fixes of issue 21 part 3, as generated types see them: rotateApiKey's body is
  // optional, and every error body has its requestId.
  const rotated: number = (await client.request('post', '/admin/keys/{keyId}/rotate', { path: { keyId: 1 } })).id
  const requestId: string = ({} as components['schemas']['Error']).requestId
  void [name, pages, stock, minute, old, rotated, requestId]
}

// @ts-expect-error a required body would make this assignment fail: rotateApiKey's body is optional
export const rotateBodyRequired: undefined extends operations['rotateApiKey']['requestBody'] ? never : true = true
