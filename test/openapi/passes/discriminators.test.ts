// addDiscriminatorMappings (src/openapi/passes/discriminators.ts): a discriminator's mapping
// from the enums of its oneOf branches.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addDiscriminatorMappings } from '../../../src/openapi/passes/discriminators.ts'
import type { OpenApiDocument } from '../../../src/openapi/types.ts'

const schemas = () => ({
  FreeKey: { type: 'object', properties: { plan: { type: 'string', enum: ['free'] } } },
  PaidKey: { type: 'object', properties: { plan: { type: 'string', enum: ['pro', 'enterprise'] } } }
})
const union = () => ({ oneOf: [{ $ref: '#/components/schemas/FreeKey' }, { $ref: '#/components/schemas/PaidKey' }], discriminator: { propertyName: 'plan' } })

test('a discriminator in an operation maps each value of each branch\'s enum to that branch\'s $ref', () => {
  const doc: OpenApiDocument = {
    paths: { '/admin/keys': { post: { responses: { 201: { content: { 'application/json': { schema: union() } } } } } } },
    components: { schemas: schemas() }
  }
  addDiscriminatorMappings(doc)
  assert.deepEqual(doc.paths['/admin/keys']!.post!.responses['201'], {
    content: {
      'application/json': {
        schema: {
          ...union(),
          discriminator: {
            propertyName: 'plan',
            mapping: { free: '#/components/schemas/FreeKey', pro: '#/components/schemas/PaidKey', enterprise: '#/components/schemas/PaidKey' }
          }
        }
      }
    }
  })
  assert.deepEqual(doc.components.schemas, schemas(), 'the branches are unchanged')
})

test('a discriminator inside a component gets its mapping too', () => {
  const doc: OpenApiDocument = { paths: {}, components: { schemas: { ...schemas(), AnyKey: union() } } }
  addDiscriminatorMappings(doc)
  assert.deepEqual((doc.components.schemas!.AnyKey as { discriminator: unknown }).discriminator, {
    propertyName: 'plan',
    mapping: { free: '#/components/schemas/FreeKey', pro: '#/components/schemas/PaidKey', enterprise: '#/components/schemas/PaidKey' }
  })
})

test('a branch that is inline or has no enum for the property adds nothing to the mapping', () => {
  const doc: OpenApiDocument = {
    paths: {},
    components: {
      schemas: {
        Loose: { type: 'object', properties: { plan: { type: 'string' } } },
        AnyKey: { oneOf: [{ type: 'object' }, { $ref: '#/components/schemas/Loose' }], discriminator: { propertyName: 'plan' } }
      }
    }
  }
  addDiscriminatorMappings(doc)
  assert.deepEqual(
    (doc.components.schemas!.AnyKey as { discriminator: unknown }).discriminator,
    { propertyName: 'plan', mapping: {} }
  )
})

test('a oneOf without a discriminator is left alone', () => {
  const doc: OpenApiDocument = { paths: {}, components: { schemas: { ...schemas(), Either: { oneOf: [{ $ref: '#/components/schemas/FreeKey' }] } } } }
  addDiscriminatorMappings(doc)
  assert.deepEqual(doc.components.schemas!.Either, { oneOf: [{ $ref: '#/components/schemas/FreeKey' }] })
})
