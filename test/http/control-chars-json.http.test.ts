// What JSON.parse lets through and the body parser refuses (issue 30 item 9): a lone surrogate
// (`"\ud800"`, which both engines stored as U+FFFD) and a field given twice in one object, at any
// depth (`{"quantity":1,"quantity":50}` ordered 50, while a proxy reading the first field saw 1).
// Both are 400 validation_failed naming the field, and nothing is stored. Faults caught:
// - the surrogate check skipped, or done on the raw text only (a valid pair `\ud83d\ude00`, or an
//   escaped backslash `\\ud800`, refused; a lone one as a field name let through);
// - the duplicate check skipped, or comparing raw names (`q\u0075antity` is `quantity`), or only
//   at the top level;
// - the order of 50 placed all the same.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

const LONE = 'must not contain a lone surrogate (U+D800 to U+DFFF outside a pair)'
const TWICE = 'is given more than once in its object; send each field once'

async function shop (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp> {
  const h = await buildTestApp(t)
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })).statusCode, 201)
  assert.equal((await h.call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })).statusCode, 201)
  assert.equal((await h.call({ method: 'PUT', url: '/v1/store/inventory/1', payload: { quantity: 100 } })).statusCode, 200)
  return h
}

const send = (h: TestApp, method: 'POST' | 'PUT' | 'PATCH', url: string, text: string, role: 'customer' | 'staff' | 'admin' = 'staff') =>
  h.call({ method, url, role, headers: { 'content-type': 'application/json' }, payload: text })

function assertRefused (
  res: { statusCode: number; json: () => Record<string, unknown> },
  path: string,
  message: string,
  what: string
): void {
  assert.equal(res.statusCode, 400, what)
  const { requestId: _, ...body } = res.json()
  assert.deepEqual(body, { code: 'validation_failed', message: `invalid body: ${path} ${message}`, status: 400, details: [{ path, message }] }, what)
}

test('a lone surrogate anywhere in a body (value or field name, high or low, any case) is 400, and nothing is stored', async (t) => {
  const h = await shop(t)
  const cases: [string, string, 'POST' | 'PUT' | 'PATCH', string][] = [
    ['/v1/pets', '{"name":"Fi\\ud800do","categoryId":1}', 'POST', '/name'],
    ['/v1/pets', '{"name":"\\uDFFF","categoryId":1}', 'POST', '/name'],
    ['/v1/pets/1', '{"name":"x\\udc00"}', 'PATCH', '/name'],
    // A low surrogate before a high one is no pair.
    ['/v1/categories', '{"name":"\\udc00\\ud800"}', 'POST', '/name'],
    ['/v1/categories/1', '{"name":"Dogs","description":"ok \\uDbFF"}', 'PUT', '/description'],
    // As a field name: the name is refused as the path says (unknown fields come after).
    ['/v1/pets', '{"name":"Fido","categoryId":1,"\\ud800":1}', 'POST', '/\ufffd']
  ]
  for (const [url, text, method, path] of cases) {
    assertRefused(await send(h, method, url, text), path, LONE, `${method} ${url} ${text}`)
  }
  const admin = await send(h, 'POST', '/v1/admin/keys', '{"name":"Partner\\ud83d","role":"customer","plan":"free"}', 'admin')
  assertRefused(admin, '/name', LONE, 'key name')
  // Nothing stored: the pet and category are as they were, no key was made.
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/pets' })).json(), [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }])
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/categories' })).json(), [{ id: 1, name: 'Dogs' }])
  assert.equal((await h.call({ method: 'GET', url: '/v1/admin/keys?q=Partner', role: 'admin' })).json().length, 0)
  // A pair escaped is a character like any other; an escaped backslash before "ud800" is text.
  const pair = await send(h, 'POST', '/v1/pets', '{"name":"Smile \\ud83d\\ude00","categoryId":1}')
  assert.equal(pair.statusCode, 201, pair.body)
  assert.equal((await h.call({ method: 'GET', url: `/v1/pets/${pair.json().id}`, role: 'staff' })).json().name, 'Smile 😀')
  const backslash = await send(h, 'POST', '/v1/pets', '{"name":"back\\\\ud800","categoryId":1}')
  assert.equal(backslash.statusCode, 201, backslash.body)
  assert.equal(backslash.json().name, 'back\\ud800')
})

test('a field given twice in one object, at any depth and however escaped, is 400; the order of 50 is not placed', async (t) => {
  const h = await shop(t)
  const order = await send(h, 'POST', '/v1/store/orders', '{"petId":1,"quantity":1,"quantity":50}', 'customer')
  assertRefused(order, '/quantity', TWICE, 'quantity twice')
  const escaped = await send(h, 'POST', '/v1/store/orders', '{"petId":1,"q\\u0075antity":50,"quantity":1}', 'customer')
  assertRefused(escaped, '/quantity', TWICE, 'quantity twice, once escaped')
  const spaced = await send(h, 'POST', '/v1/store/orders', '{ "petId" : 1 , "quantity" : 1 , "petId" : 1 }', 'customer')
  assertRefused(spaced, '/petId', TWICE, 'white space around the colons')
  // Nested: refused for the repeat itself, before the schema would refuse the unknown field.
  const nested = await send(h, 'POST', '/v1/pets', '{"name":"Fido","categoryId":1,"x":[{"a":1},{"a":1,"a":2}]}')
  assertRefused(nested, '/x/1/a', TWICE, 'nested')
  // No order exists and the stock is whole.
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/store/orders', role: 'staff' })).json(), [])
  assert.equal((await h.call({ method: 'GET', url: '/v1/store/inventory/1', role: 'staff' })).json().quantity, 100)
  // The same name in two objects is no repeat, and a value that looks like a field is text.
  const fine = await send(h, 'POST', '/v1/store/orders', '{"petId":1,"quantity":2}', 'customer')
  assert.equal(fine.statusCode, 201, fine.body)
  const quoted = await send(h, 'POST', '/v1/categories', '{"name":"a\\":b","description":"\\"name\\": twice"}')
  assert.equal(quoted.statusCode, 201, quoted.body)
  assert.deepEqual([quoted.json().name, quoted.json().description], ['a":b', '"name": twice'])
})
