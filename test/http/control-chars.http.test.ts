// No control characters in stored or searched text (docs/product.md 5.11, issue 19 item 3, issue 30
// item 9): U+0000, the other C0 controls (U+0001 to U+001F), DEL (U+007F) and the C1 controls
// (U+0080 to U+009F) are 400 validation_failed, with the error object,
// in every string parameter and field, the same on both engines; descriptions allow tab, line
// feed and carriage return. Faults caught:
// - `GET /v1/pets?name=%00` answered 500 on PostgreSQL (it refuses U+0000 in text) and a NUL in
//   a pet, category or key name was a 500 there too, while SQLite stored it;
// - a control character reaching the database through any other string field;
// - DEL or a C1 control (U+009B is an escape to an 8-bit terminal) accepted and stored.
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/** Every C0 control, DEL and every C1 control. */
const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f,
  ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i)
].map((c) => String.fromCharCode(c))
const isControl = (ch: string) => ch < ' ' || (ch >= '\u007f' && ch <= '\u009f')
const ALLOWED_IN_DESCRIPTIONS = new Set(['\t', '\n', '\r'])
const hex = (c: string) => `U+${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`

const NAME = 'must not be blank, and must not contain control characters (U+0000 to U+001F, U+007F to U+009F)'
const NO_CONTROLS = 'must not contain control characters (U+0000 to U+001F, U+007F to U+009F)'
const MULTILINE = 'must not contain control characters (U+0000 to U+001F, U+007F to U+009F) other than tab, line feed and carriage return'
const HEADER = 'must not contain control characters (U+0000 to U+001F, U+007F to U+009F) other than tab'

const refused = (where: string, path: string, message: string) => ({
  code: 'validation_failed',
  message: `invalid ${where}: ${path} ${message}`,
  status: 400,
  details: [{ path, message }]
})

const withoutRequestId = (body: Record<string, unknown>) => {
  const { requestId, ...rest } = body
  assert.equal(typeof requestId, 'string')
  return rest
}

async function shop (t: Parameters<typeof buildTestApp>[0]): Promise<TestApp> {
  const h = await buildTestApp(t)
  assert.equal((await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Dogs', description: 'Good' } })).statusCode, 201)
  assert.equal((await h.call({ method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } })).statusCode, 201)
  return h
}

test('GET /v1/pets?name= with any C0 control (%00 included), DEL or C1 control is 400 validation_failed, never a 500', async (t) => {
  const h = await shop(t)
  for (const c of CONTROLS) {
    for (const name of [c, `re${c}`, `${c}x`]) {
      const url = `/v1/pets?name=${encodeURIComponent(name)}`
      const res = await h.call({ method: 'GET', url })
      assert.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 200)}`)
      assert.deepEqual(withoutRequestId(res.json()), refused('query', 'name', NO_CONTROLS), url)
    }
  }
  // A cursor too, and a plain filter still works.
  assert.deepEqual(withoutRequestId((await h.call({ method: 'GET', url: '/v1/pets?cursor=%00' })).json()), refused('query', 'cursor', NO_CONTROLS))
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/pets?name=re' })).json().map((p: { name: string }) => p.name), ['Rex'])
})

test('pet and category names with a C0, DEL or C1 control are 400 on create, replace and patch, and nothing is stored', async (t) => {
  const h = await shop(t)
  for (const c of CONTROLS) {
    const name = `Fi${c}do`
    const cases = [
      { method: 'POST', url: '/v1/pets', payload: { name, categoryId: 1 } },
      { method: 'PUT', url: '/v1/pets/1', payload: { name, categoryId: 1 } },
      { method: 'PATCH', url: '/v1/pets/1', payload: { name } },
      { method: 'POST', url: '/v1/categories', payload: { name } },
      { method: 'PUT', url: '/v1/categories/1', payload: { name } }
    ] as const
    for (const { method, url, payload } of cases) {
      const res = await h.call({ method, url, payload })
      assert.equal(res.statusCode, 400, `${method} ${url} ${hex(c)}: ${res.body.slice(0, 200)}`)
      assert.deepEqual(withoutRequestId(res.json()), refused('body', '/name', NAME), `${method} ${url} ${hex(c)}`)
    }
  }
  // The rows are as they were.
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/pets' })).json(), [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }])
  assert.deepEqual((await h.call({ method: 'GET', url: '/v1/categories' })).json(), [{ id: 1, name: 'Dogs', description: 'Good' }])
  // A blank name is still refused, a name with other scripts and spaces is fine.
  assert.equal((await h.call({ method: 'POST', url: '/v1/pets', payload: { name: ' \u3000 ', categoryId: 1 } })).statusCode, 400)
  assert.equal((await h.call({ method: 'POST', url: '/v1/pets', payload: { name: 'Mi Gato 猫 😀', categoryId: 1 } })).statusCode, 201)
})

test('category descriptions: tab, line feed and carriage return are kept; every other control (C0, DEL, C1) is 400', async (t) => {
  const h = await shop(t)
  for (const c of CONTROLS) {
    const description = `line one${c}line two`
    const res = await h.call({ method: 'PUT', url: '/v1/categories/1', payload: { name: 'Dogs', description } })
    if (ALLOWED_IN_DESCRIPTIONS.has(c)) {
      assert.equal(res.statusCode, 200, hex(c))
      assert.equal((await h.call({ method: 'GET', url: '/v1/categories/1' })).json().description, description, hex(c))
    } else {
      assert.equal(res.statusCode, 400, hex(c))
      assert.deepEqual(withoutRequestId(res.json()), refused('body', '/description', MULTILINE), hex(c))
      const created = await h.call({ method: 'POST', url: '/v1/categories', payload: { name: 'Cats', description } })
      assert.equal(created.statusCode, 400, hex(c))
    }
  }
  assert.equal((await h.call({ method: 'GET', url: '/v1/categories' })).json().length, 1)
})

test('key names with a C0, DEL or C1 control are 400 on create and patch (admin), and no key is made', async (t) => {
  const h = await shop(t)
  const before = (await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json().length
  for (const c of CONTROLS) {
    const name = `Partner${c}shop`
    const created = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { name, role: 'customer', plan: 'free' } })
    assert.equal(created.statusCode, 400, hex(c))
    assert.deepEqual(withoutRequestId(created.json()), refused('body', '/name', NO_CONTROLS), hex(c))
    const patched = await h.call({ method: 'PATCH', url: '/v1/admin/keys/1', payload: { name } })
    assert.equal(patched.statusCode, 400, hex(c))
    assert.deepEqual(withoutRequestId(patched.json()), refused('body', '/name', NO_CONTROLS), hex(c))
  }
  const after = (await h.call({ method: 'GET', url: '/v1/admin/keys?limit=100' })).json() as { id: number; name: string | null }[]
  assert.equal(after.length, before)
  assert.ok(after.every((k) => k.name === null || ![...k.name].some(isControl)))
})

test('an If-Match with a control character other than tab is 400; the Idempotency-Key already takes visible ASCII only', async (t) => {
  const h = await shop(t)
  const res = await h.call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': '"1"\u0001' }, payload: { name: 'Max' } })
  assert.equal(res.statusCode, 400)
  assert.deepEqual(withoutRequestId(res.json()), refused('headers', 'if-match', HEADER))
  // A C1 control arrives as the byte 0x85 (Node reads header bytes as Latin-1): refused too.
  const c1 = await h.call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': '"1"\u0085' }, payload: { name: 'Max' } })
  assert.equal(c1.statusCode, 400)
  assert.deepEqual(withoutRequestId(c1.json()), refused('headers', 'if-match', HEADER))
  const tab = await h.call({ method: 'PATCH', url: '/v1/pets/1', headers: { 'if-match': '"1",\t"2"' }, payload: { name: 'Max' } })
  assert.equal(tab.statusCode, 200)
  const key = await h.call({ method: 'POST', url: '/v1/pets', headers: { 'idempotency-key': 'k\u0000' }, payload: { name: 'Fido', categoryId: 1 } })
  assert.equal(key.statusCode, 400)
  assert.equal(key.json().code, 'validation_failed')
})

test('the document: every string a request can carry (parameter or body field) refuses U+0000, DEL and U+009B by its pattern, or is a format or an enumeration', async (t) => {
  const h = await buildTestApp(t)
  type S = Record<string, unknown>
  const doc = h.app.swagger() as unknown as {
    paths: Record<string, Record<string, {
      parameters?: { in: string; name: string; schema: S }[]
      requestBody?: { content: Record<string, { schema: S }> }
    }>>
    components: { schemas: Record<string, S> }
  }
  const resolve = (s: S): S => typeof s.$ref === 'string' ? resolve(doc.components.schemas[s.$ref.split('/').pop()!]!) : s
  const loose: string[] = []
  let strings = 0
  const walk = (raw: S, where: string, depth: number): void => {
    const s = resolve(raw)
    if (depth > 6) return
    for (const k of ['oneOf', 'anyOf', 'allOf']) for (const b of (s[k] ?? []) as S[]) walk(b, where, depth + 1)
    if (s.type === 'string') {
      strings++
      const refuses = (text: string) => !new RegExp(s.pattern as string, 'u').test(text)
      const safe = s.enum !== undefined || s.format !== undefined || (typeof s.pattern === 'string' && ['\u0000', 'a\u0000b', 'a\u007fb', 'a\u009bb'].every(refuses))
      if (!safe) loose.push(where)
    }
    for (const [n, p] of Object.entries((s.properties ?? {}) as Record<string, S>)) walk(p, `${where}/${n}`, depth + 1)
    if (s.items !== undefined) walk(s.items as S, `${where}/*`, depth + 1)
  }
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      for (const p of operation.parameters ?? []) walk(p.schema, `${method} ${path} ${p.in} ${p.name}`, 0)
      const body = operation.requestBody?.content['application/json']?.schema
      if (body !== undefined) walk(body, `${method} ${path} body`, 0)
    }
  }
  assert.deepEqual(loose, [], 'strings a request can carry that a NUL, DEL or C1 control would pass')
  assert.ok(strings >= 10, `only ${strings} strings seen`)
})
