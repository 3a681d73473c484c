// Pets over HTTP: schema, one service call, status code.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { etagOf, idempotencyClaimOf, ifMatchOf, setNextLink } from '../routing/conditional.ts'
import type { Lifecycle } from '../routing/lifecycle.ts'
import type { Clock } from '../shared/clock.ts'
import type { Page } from '../shared/pagination.ts'
import {
  Reply,
  ETagHeader,
  IfMatchHeaders,
  LinkHeader,
  LocationHeader,
  NoContent,
  NoQuery,
  idempotencyKeyHeaders
} from '../shared/schemas.ts'
import {
  type Pet,
  DeletePetIdParams,
  NewPetSchema,
  PetIdParams,
  PetListQuery,
  PetPatchSchema,
  PetSchema,
  PetsSchema
} from './pets.schema.ts'
import type { PetService } from './pets.service.ts'
import type { PetRecord } from './pets.store.ts'
import { toPublicPet } from './pets.view.ts'

export interface PetRoutesOptions { pets: PetService; clock: Clock; getPetLifecycle: Lifecycle }

const JSON_TYPE = 'application/json; charset=utf-8'

// The reads answer with the pet's JSON made once per record: the SQLite pet cache hands out the
// same frozen record until the row changes, so a cached read serializes nothing
// (docs/performance.md). The text is what the PetSchema serializer writes: the four fields in
// the schema's order, no version.
const bodies = new WeakMap<PetRecord, string>()

/** Sends JSON text as it is (Fastify serializes objects only). */
function sendJson (
  reply: { header (name: string, value: string): unknown; send (payload: never): unknown },
  body: string
): void {
  reply.header('content-type', JSON_TYPE)
  ;(reply.send as (payload: string) => unknown).call(reply, body)
}
/** The pet with its ETag. */
function sendPet (reply: Parameters<typeof sendJson>[0], pet: PetRecord): void {
  reply.header('etag', etagOf(pet))
  sendJson(reply, petJson(pet))
}
/** A page of pets, with the next page's link. */
function sendPage (request: FastifyRequest, reply: FastifyReply, page: Page<PetRecord>): void {
  setNextLink(request, reply, page.nextCursor)
  sendJson(reply, `[${page.items.map(petJson).join(',')}]`)
}
function petJson (pet: PetRecord): string {
  let body = bodies.get(pet)
  if (body === undefined) {
    body = JSON.stringify({ id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status } satisfies Pet)
    bodies.set(pet, body)
  }
  return body
}

export async function petRoutes (
  fastify: FastifyInstance,
  { pets, clock, getPetLifecycle }: PetRoutesOptions
): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Pet catalogue']

  app.get('/pets', {
    schema: {
      operationId: 'listPets', tags, summary: 'List pets',
      description: 'Pets in id order, filtered by `id` (repeatable, at most 100), `status`, `categoryId` and a case-insensitive substring of `name`. `GET /pets?id={petId}` replaces the deprecated `GET /pets/{petId}`. The next page, if any, is in the `Link: <…>; rel="next"` header.',
      querystring: PetListQuery,
      response: { 200: Reply('A page of pets.', PetsSchema, LinkHeader) }
    },
    config: { role: 'customer', scope: 'catalog:read', errors: ['validation_failed'] }
  }, (request, reply) => {
    // Not async, as getPet below: SQLite answers a page in this turn.
    const page = pets.list(request.query)
    if (page instanceof Promise) return page.then((p) => { sendPage(request, reply, p) })
    sendPage(request, reply, page)
    return undefined
  })

  app.post('/pets', {
    schema: {
      operationId: 'createPet', tags, summary: 'Create a pet',
      description: 'Creates a pet and its inventory entry (stock 1). Honours `Idempotency-Key`: a retry with the same key and body returns the first result and creates nothing; the same key with another body is `409 idempotency_key_reused`. Keys are remembered for 24 hours, per API key.',
      querystring: NoQuery,
      headers: idempotencyKeyHeaders('5f2b9c1e-8d4a-4e7b-b6c3-1a9e0d7f2c48'),
      body: NewPetSchema,
      response: { 201: Reply('The pet, as created (also on a replay).', PetSchema, { ...LocationHeader, ...ETagHeader }) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'category_not_found', 'idempotency_key_reused'] }
  }, async (request, reply) => {
    const { record } = await pets.create(request.body, idempotencyClaimOf(request, clock.now()))
    reply.code(201).header('location', `/v1/pets/${record.id}`).header('etag', etagOf(record))
    return toPublicPet(record)
  })

  app.get('/pets/:petId', {
    schema: {
      operationId: 'getPet', tags, summary: 'Get a pet',
      description: 'The pet, with its `ETag`.',
      params: PetIdParams, querystring: NoQuery,
      response: { 200: Reply('The pet.', PetSchema, ETagHeader) }
    },
    config: { role: 'customer', scope: 'catalog:read', errors: ['validation_failed', 'not_found'], lifecycle: getPetLifecycle }
  }, (request, reply) => {
    // Not async: a store that reads at once (SQLite's pet cache) answers in this turn, with no
    // promise; a not_found thrown here goes to the error handler as from an async handler.
    const pet = pets.read(request.params.petId)
    if (pet instanceof Promise) return pet.then((p) => { sendPet(reply, p) })
    sendPet(reply, pet)
    return undefined
  })

  app.put('/pets/:petId', {
    schema: {
      operationId: 'replacePet', tags, summary: 'Replace a pet',
      description: 'Replaces name and category (and status when given). Honours `If-Match`.',
      params: PetIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: NewPetSchema,
      response: { 200: Reply('The updated pet.', PetSchema, ETagHeader) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'category_not_found'] }
  }, async (request, reply) => {
    const pet = await pets.replace(request.params.petId, request.body, ifMatchOf(request))
    reply.header('etag', etagOf(pet))
    return toPublicPet(pet)
  })

  app.patch('/pets/:petId', {
    schema: {
      operationId: 'updatePet', tags, summary: 'Update a pet',
      description: 'Changes the fields given. Setting `status` directly is allowed; the stock rules apply from then on. Honours `If-Match`.',
      params: PetIdParams, querystring: NoQuery, headers: IfMatchHeaders, body: PetPatchSchema,
      response: { 200: Reply('The updated pet.', PetSchema, ETagHeader) }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'category_not_found'] }
  }, async (request, reply) => {
    const pet = await pets.patch(request.params.petId, request.body, ifMatchOf(request))
    reply.header('etag', etagOf(pet))
    return toPublicPet(pet)
  })

  app.delete('/pets/:petId', {
    schema: {
      operationId: 'deletePet', tags, summary: 'Delete a pet',
      description: 'Deletes the pet and its inventory entry. A pet with open orders cannot be deleted. Honours `If-Match`.',
      params: DeletePetIdParams, querystring: NoQuery, headers: IfMatchHeaders,
      response: { 204: NoContent('The pet is deleted.') }
    },
    config: { role: 'staff', scope: 'catalog:write', errors: ['validation_failed', 'not_found', 'precondition_failed', 'pet_has_open_orders'] }
  }, async (request, reply) => {
    await pets.remove(request.params.petId, ifMatchOf(request))
    return reply.code(204).send(null)
  })
}
