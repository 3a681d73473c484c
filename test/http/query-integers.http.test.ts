// Integers in the query, the path and the headers follow one rule (docs/product.md 5.10): decimal
// digits only, no sign, no leading zero, nothing around them, within the documented bounds;
// anything else is 400 validation_failed with the error object. Issue 18 items 8 and 9.
// Faults caught:
// - `?limit=Infinity`, `-Infinity` and `1e400` answered 500 on every list (Ajv's coercion made
//   ±Infinity, which passed `type: integer` and the bounds, then the database refused it);
// - `?limit=0x10` returned a page of 16, `?days=0x5a` covered 90 days: Number() syntax (hex,
//   octal, binary, exponents, signs, `1.0`, `01`, padding) was taken as an integer;
// - a path id or an id filter read with a looser rule than the one documented.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DECIMAL_MESSAGE } from '../../src/http/validation.ts'
import { DECIMAL_RULE } from '../../src/shared/schemas.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** Values that Number() or Ajv's coercion would take as a number, and that the rule refuses. */
export const BAD_INTEGERS = [
  'Infinity', '-Infinity', '+Infinity', '1e400', '-1e400', 'NaN', '-0', '0x10', '0X10', '0o1', '0b1', '1e1', '1E1', '1e+1', '+1', '-1', '1.0', '1.', '.5', '01', '00', '007',
  ' 1', '1 ', '\t1', '1\t', '\n1', '1\n', '\r1', '\v1', '\f1', '\u00a01', '1\u00a0', '\u30001', '\ufeff1', '\u20281', '\u20031', '1\u0000',
  '\uff11', '\u0661', '\u0967', '1_0', '1,0', '10abc', '', ' ', 'true', '[1]'
]

const LISTS = ['/v1/pets', '/v1/categories', '/v1/store/orders', '/v1/store/inventory', '/v1/admin/keys']

const refused = (where: string, path: string) => ({
  code: 'validation_failed',
  message: `invalid ${where}: ${path} ${DECIMAL_MESSAGE}`,
  status: 400,
  details: [{ path, message: DECIMAL_MESSAGE }]
})

const withoutRequestId = (body: Record<string, unknown>) => {
  const { requestId, ...rest } = body
  assert.equal(typeof requestId, 'string')
  return rest
}

async function shop (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp> {
  const h = await buildTestApp(t)
  const category = await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs' } })
  assert.equal(category.statusCode, 201)
  for (const name of ['Rex', 'Bella', 'Max']) {
    assert.equal((await h.call({ method: 'POST', url: '/v1/pets', payload: { name, categoryId: category.json().id } })).statusCode, 201)
  }
  assert.equal((await h.call({ method: 'POST', url: '/v1/store/orders', payload: { petId: 1, quantity: 1 } })).statusCode, 201)
  return h
}

test('every list × every non-decimal limit (Infinity, 1e400, hex, signs, padding, Unicode digits…) is 400 validation_failed with the error object', async (t) => {
  const h = await shop(t)
  for (const list of LISTS) {
    for (const value of BAD_INTEGERS) {
      const url = `${list}?limit=${encodeURIComponent(value)}`
      const res = await h.call({ method: 'GET', url })
      assert.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 200)}`)
      assert.deepEqual(withoutRequestId(res.json()), refused('query', 'limit'), url)
    }
  }
})

test('a customer gets the same 400 for ?limit=Infinity on the lists it may read (no 500 for any caller)', async (t) => {
  const h = await shop(t)
  for (const list of LISTS.filter((l) => !l.includes('admin'))) {
    for (const value of ['Infinity', '-Infinity', '1e400']) {
      const res = await h.call({ method: 'GET', url: `${list}?limit=${value}`, role: 'customer' })
      assert.equal(res.statusCode, 400, `${list} ${value}`)
      assert.deepEqual(withoutRequestId(res.json()), refused('query', 'limit'))
    }
  }
})

test('decimal limits still work, read from the decoded value: 1 and 100 are served, %32 is 2, 0 and 101 are out of bounds', async (t) => {
  const h = await shop(t)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets?limit=1' })).json().length, 1)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets?limit=100' })).json().length, 3)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets?limit=%32' })).json().length, 2)
  for (const [value, message] of [['0', 'must be >= 1'], ['101', 'must be <= 100'], ['1' + '0'.repeat(400), 'must be <= 100']] as const) {
    const res = await h.call({ method: 'GET', url: `/v1/pets?limit=${value}` })
    assert.equal(res.statusCode, 400, value)
    assert.deepEqual(res.json().details, [{ path: 'limit', message }])
  }
})

test('?days on key usage follows the same rule: 0x5a is not 90 days', async (t) => {
  const h = await shop(t)
  const id = (await h.makeKey('customer')).id
  for (const value of BAD_INTEGERS) {
    const url = `/v1/admin/keys/${id}/usage?days=${encodeURIComponent(value)}`
    const res = await h.call({ method: 'GET', url })
    assert.equal(res.statusCode, 400, url)
    assert.deepEqual(withoutRequestId(res.json()), refused('query', 'days'), url)
  }
  assert.equal((await h.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=0x5a` })).statusCode, 400)
  assert.equal((await h.call({ method: 'GET', url: `/v1/admin/keys/${id}/usage?days=90` })).statusCode, 200)
})

test('id filters (petId, categoryId, each repeated id) and path ids follow the same rule', async (t) => {
  const h = await shop(t)
  for (const value of BAD_INTEGERS) {
    const v = encodeURIComponent(value)
    for (const [url, where, path] of [
      [`/v1/pets?categoryId=${v}`, 'query', 'categoryId'],
      [`/v1/store/orders?petId=${v}`, 'query', 'petId'],
      [`/v1/pets?id=1&id=${v}`, 'query', 'id/1'],
      ...(value === '' ? [] : [[`/v1/pets/${v}`, 'params', 'petId'], [`/v1/store/inventory/${v}`, 'params', 'petId'], [`/v1/admin/keys/${v}/usage`, 'params', 'keyId']])
    ] as const) {
      const res = await h.call({ method: 'GET', url })
      assert.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 200)}`)
      assert.deepEqual(withoutRequestId(res.json()), refused(where, path), url)
    }
  }
  // The decoded value is what counts: %31 is 1.
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets/%31' })).json().name, 'Rex')
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/pets?id=%31&id=2' })).json().map((p: { id: number }) => p.id), [1, 2])
})

test('the document states the rule on every integer parameter, and bounds each one', async (t) => {
  const h = await buildTestApp(t)
  const doc = h.app.swagger() as unknown as {
    paths: Record<string, Record<string, {
      parameters?: { in: string; name: string; description?: string; schema: Record<string, unknown> }[]
    }>>
  }
  let seen = 0
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      for (const p of operation.parameters ?? []) {
        const schema = (p.schema.type === 'array' ? p.schema.items : p.schema) as Record<string, unknown>
        if (schema.type !== 'integer') continue
        seen++
        const where = `${method} ${path} ${p.in} ${p.name}`
        assert.ok(p.description?.endsWith(DECIMAL_RULE), `${where}: the description does not state the decimal rule`)
        assert.equal(typeof schema.minimum, 'number', where)
        assert.ok(typeof schema.maximum === 'number' && schema.maximum <= Number.MAX_SAFE_INTEGER, `${where}: no safe maximum`)
      }
    }
  }
  assert.ok(seen >= 10, `only ${seen} integer parameters seen`)
})
