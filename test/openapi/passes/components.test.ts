// hoistComponents (src/openapi/passes/components.ts): titled schemas become named components.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { hoistComponents } from '../../../src/openapi/passes/components.ts'
import type { OpenApiDocument } from '../../../src/openapi/types.ts'

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })

test('a titled schema becomes a component without its title, and every occurrence a $ref to it', () => {
  const pet = { title: 'Pet', type: 'object', properties: { id: { type: 'integer' } } }
  const doc: OpenApiDocument = {
    paths: {
      '/pets/{petId}': {
        get: { responses: { 200: json({ ...pet }) } },
        put: { requestBody: json({ ...pet }), responses: { 200: json({ ...pet }) } }
      }
    },
    components: {}
  }
  hoistComponents(doc)
  const ref = json({ $ref: '#/components/schemas/Pet' })
  assert.deepEqual(doc, {
    paths: { '/pets/{petId}': { get: { responses: { 200: ref } }, put: { requestBody: ref, responses: { 200: ref } } } },
    components: { schemas: { Pet: { type: 'object', properties: { id: { type: 'integer' } } } } }
  })
})

test('titled schemas inside a titled schema are hoisted first: the outer component refers to the inner one', () => {
  const doc: OpenApiDocument = {
    paths: {
      '/pets': {
        get: {
          responses: {
            200: json({ title: 'PetPage', type: 'object', properties: { items: { type: 'array', items: { title: 'Pet', type: 'object' } } } })
          }
        }
      }
    },
    components: {}
  }
  hoistComponents(doc)
  assert.deepEqual(doc, {
    paths: { '/pets': { get: { responses: { 200: json({ $ref: '#/components/schemas/PetPage' }) } } } },
    components: {
      schemas: {
        Pet: { type: 'object' },
        PetPage: { type: 'object', properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Pet' } } } }
      }
    }
  })
})

test('an enum with a title is hoisted; a titled node that is no schema (no type, no enum) stays in place', () => {
  const doc: OpenApiDocument = {
    paths: {
      '/pets': {
        get: {
          responses: {
            200: json({ type: 'object', properties: { status: { title: 'PetStatus', enum: ['available', 'sold'] }, note: { title: 'just a title' } } })
          }
        }
      }
    },
    components: {}
  }
  hoistComponents(doc)
  assert.deepEqual(doc, {
    paths: {
      '/pets': {
        get: {
          responses: {
            200: json({ type: 'object', properties: { status: { $ref: '#/components/schemas/PetStatus' }, note: { title: 'just a title' } } })
          }
        }
      }
    },
    components: { schemas: { PetStatus: { enum: ['available', 'sold'] } } }
  })
})

test('components keep those already there and come out sorted by name', () => {
  const doc: OpenApiDocument = {
    paths: {
      '/z': { get: { responses: { 200: json({ title: 'Zebra', type: 'string' }) } } },
      '/a': { get: { responses: { 200: json({ title: 'Ant', type: 'string' }) } } }
    },
    components: { schemas: { Moth: { type: 'string' } } }
  }
  hoistComponents(doc)
  assert.deepEqual(Object.keys(doc.components.schemas!), ['Ant', 'Moth', 'Zebra'])
})
