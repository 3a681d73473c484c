// A tool call's arguments against the tool's inputSchema (src/mcp/arguments.ts), output for
// input: each problem names the argument or the body's field an agent must fix, an enumeration
// lists its values, path and query values are coerced as REST coerces them, a body never is.
// Through /mcp with the tools made from the routes: mcp-tools.http.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { argumentProblems } from '../../src/mcp/arguments.ts'
import type { Tool } from '../../src/mcp/tools.ts'

/** A tool as argumentProblems reads it: its name and inputSchema. */
function tool (name: string, inputSchema: object): Tool {
  return { name, inputSchema } as unknown as Tool
}

const updatePet = tool('updatePet', {
  type: 'object',
  properties: {
    petId: { type: 'integer' },
    status: { enum: ['available', 'pending', 'sold'] },
    body: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        quantity: { type: 'integer', minimum: 1 },
        kind: { const: 'dog' },
        tags: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false } },
        'a/b': { type: 'integer' },
        'm~n': { type: 'integer' }
      },
      required: ['name'],
      additionalProperties: false
    }
  },
  required: ['petId', 'body'],
  additionalProperties: false
})

test('valid arguments have no problem, and path and query values are coerced in place as REST coerces them', () => {
  const args: Record<string, unknown> = { petId: '5', status: 'sold', body: { name: 'Rex' } }
  assert.deepEqual(argumentProblems(updatePet, args), [])
  assert.equal(args.petId, 5)
})

test('a missing argument, an unknown one and an enumeration\'s wrong value are each named, the values listed', () => {
  assert.deepEqual(argumentProblems(updatePet, { status: 'lost', color: 'red' }), [
    { path: 'petId', message: 'is required' },
    { path: 'body', message: 'is required' },
    { path: 'color', message: 'is not an argument of updatePet (its arguments: petId, status, body)' },
    { path: 'status', message: 'must be one of: "available", "pending", "sold"' }
  ])
  assert.deepEqual(argumentProblems(tool('listCategories', { type: 'object', additionalProperties: false }), { page: 2 }), [
    { path: 'page', message: 'is not an argument of listCategories (it takes none)' }
  ])
  assert.deepEqual(argumentProblems(updatePet, { petId: 'five', body: { name: 'Rex' } }), [
    { path: 'petId', message: 'must be integer' }
  ])
})

test('the body is checked as REST checks it, never coerced, each problem under body.', () => {
  const body = { quantity: '2', kind: 'cat', extra: 1, tags: [{ name: 'a' }, { name: 'b', x: 1 }], 'a/b': 'x', 'm~n': 'y' }
  assert.deepEqual(argumentProblems(updatePet, { petId: 1, body }), [
    { path: 'body.name', message: 'is required' },
    { path: 'body.extra', message: 'is not a field here' },
    { path: 'body.quantity', message: 'must be integer' },
    { path: 'body.kind', message: 'must be "dog"' },
    { path: 'body.tags[1].x', message: 'is not a field here' },
    { path: 'body.a/b', message: 'must be integer' },
    { path: 'body.m~n', message: 'must be integer' }
  ])
  assert.equal(body.quantity, '2', 'the body is not coerced')
})

test('a problem of the arguments as a whole is (arguments); at most 20 problems, each name cut to 100 characters', () => {
  assert.deepEqual(argumentProblems(tool('anyOne', { type: 'object', minProperties: 1 }), {}), [
    { path: '(arguments)', message: 'must NOT have fewer than 1 properties' }
  ])
  const many = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`extra${i}`, i]))
  const problems = argumentProblems(tool('none', { type: 'object', additionalProperties: false }), many)
  assert.equal(problems.length, 20)
  const long = argumentProblems(tool('none', { type: 'object', additionalProperties: false }), { ['x'.repeat(200)]: 1 })
  assert.equal(long[0]!.path, `${'x'.repeat(99)}…`)
  const nested = argumentProblems(updatePet, { petId: 1, body: { name: 'Rex', ['y'.repeat(200)]: 1 } })
  assert.equal(nested[0]!.path, `body.${'y'.repeat(94)}…`)
})

test('the route schemas\' annotations are allowed, their defaults are not added, and their formats are checked', () => {
  const listEvents = tool('listEvents', {
    type: 'object',
    properties: {
      since: { type: 'string', format: 'date-time', example: '2026-11-20T10:00:00Z' },
      limit: { type: 'integer', default: 20, 'x-order': 1 }
    },
    additionalProperties: false
  })
  const args: Record<string, unknown> = { since: '2026-11-20T10:00:00Z' }
  assert.deepEqual(argumentProblems(listEvents, args), [])
  assert.deepEqual(args, { since: '2026-11-20T10:00:00Z' }, 'REST applies its own defaults')
  assert.deepEqual(argumentProblems(listEvents, { since: 'yesterday' }), [
    { path: 'since', message: 'must match format "date-time"' }
  ])
})

test('a tool without a body refuses a body argument as any unknown one', () => {
  const getPet = tool('getPet', { type: 'object', properties: { petId: { type: 'integer' } }, additionalProperties: false })
  assert.deepEqual(argumentProblems(getPet, { petId: 1, body: { name: 'Rex' } }), [
    { path: 'body', message: 'is not an argument of getPet (its arguments: petId)' }
  ])
})

test('an item\'s index is written [n], whatever its digits, and a field whose name has digits is a field', () => {
  const items = tool('bulk', {
    type: 'object',
    properties: {
      body: {
        type: 'object',
        properties: {
          items: { type: 'array', items: { type: 'integer' } },
          a1: { type: 'integer' },
          '1a': { type: 'integer' }
        }
      }
    }
  })
  const body = { items: [...new Array<number>(10).fill(0), 'x'], a1: 'x', '1a': 'x' }
  assert.deepEqual(argumentProblems(items, { body }).map((problem) => problem.path), ['body.items[10]', 'body.a1', 'body.1a'])
})

test('a body that is one of several shapes keyed by a property is checked against the shape its key names', () => {
  const createKey = tool('createKey', {
    type: 'object',
    properties: {
      body: {
        type: 'object',
        discriminator: { propertyName: 'plan' },
        required: ['plan'],
        oneOf: [
          { properties: { plan: { const: 'free' } }, required: ['plan'] },
          { properties: { plan: { const: 'pro' }, seats: { type: 'integer' } }, required: ['plan', 'seats'] }
        ]
      }
    }
  })
  // One problem, the named shape's: not one per shape it is not, nor "must match exactly one".
  assert.deepEqual(argumentProblems(createKey, { body: { plan: 'pro' } }), [{ path: 'body.seats', message: 'is required' }])
})
