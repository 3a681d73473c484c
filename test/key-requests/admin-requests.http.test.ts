// An operator's reading of any key's request log (GET /v1/admin/keys/{keyId}/requests, docs/product.md
// 9.13), and the partner portal's own refusal in it. Faults caught: a revoked key's refusals that
// nobody can read any more (its holder is refused, and no admin read existed); an admin read that
// shows another key's entries, drops the filters or the cursor, answers an unknown key with an
// empty page instead of 404, is open to a non-admin or costs nothing; a portal change refused for
// its CSRF token logged with no rule (refusal null).
// Runs on SQLite and, with PETSTORE_TEST_ENGINE=postgres, on PostgreSQL.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp, listenTestApp, T0, type TestApp } from '../helpers/app.ts'

interface Item {
  id: number
  status: number
  code: string | null
  route: string
  via: string
  requestId: string
  refusal: Record<string, unknown> | null
}

async function adminLog (h: TestApp, keyId: number, query = ''): Promise<Item[]> {
  const res = await h.call({ method: 'GET', url: `/v1/admin/keys/${keyId}/requests${query}` })
  assert.equal(res.statusCode, 200, res.body)
  assert.equal(res.headers['cache-control'], 'no-store')
  return res.json()
}

test('an admin reads a revoked key\'s log, which its holder no longer can: the same entries, filters and pages; 404 for an unknown key', async (t) => {
  const h = await buildTestApp(t)
  const holder = await h.makeKey('customer')
  const other = await h.makeKey('customer')
  const served = await h.call({ method: 'GET', url: '/v1/pets?limit=2', key: holder.key })
  assert.equal(served.statusCode, 200)
  const refused = await h.call({ method: 'GET', url: '/v1/admin/keys', key: holder.key })
  assert.equal(refused.statusCode, 403)
  assert.equal((await h.call({ method: 'GET', url: '/v1/pets', key: other.key })).statusCode, 200)
  // What the holder sees of its own log while its key works: the admin read shows the same items.
  const own = await h.call({ method: 'GET', url: '/v1/keys/me/requests', key: holder.key })
  assert.equal(own.statusCode, 200)
  assert.deepEqual(await adminLog(h, holder.id), own.json())

  h.clock.advance(1000)
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${holder.id}` })).statusCode, 204)
  const revoked = await h.call({ method: 'GET', url: '/v1/pets', key: holder.key })
  assert.equal(revoked.statusCode, 401)
  const denied = await h.call({ method: 'GET', url: '/v1/keys/me/requests', key: holder.key })
  assert.equal(denied.statusCode, 401, 'the holder cannot read it')

  // Its successful read of its own log is not logged; the refused one is.
  const log = await adminLog(h, holder.id)
  assert.deepEqual(log.map((e) => [e.requestId, e.status, e.code]), [
    [denied.headers['request-id'], 401, denied.json().code],
    [revoked.headers['request-id'], 401, revoked.json().code],
    [refused.headers['request-id'], 403, 'forbidden'],
    [served.headers['request-id'], 200, null]
  ], 'the key\'s requests only, newest first')
  const revokedAt = new Date(T0 + 1000).toISOString()
  assert.deepEqual(log[1]!.refusal, {
    rule: 'key',
    message: `key ${holder.id} was revoked at ${revokedAt}: every request made with it is refused`,
    state: 'revoked',
    since: revokedAt,
    replacedBy: null
  })
  assert.deepEqual(log[2]!.refusal, { rule: 'role', message: refused.json().message, needed: 'admin' })

  // The filters of the holder's read, and the cursor, which keeps them.
  assert.deepEqual((await adminLog(h, holder.id, `?requestId=${String(served.headers['request-id'])}`)).map((e) => e.status), [200])
  assert.deepEqual((await adminLog(h, holder.id, '?status=4xx')).map((e) => e.status), [401, 401, 403])
  assert.deepEqual((await adminLog(h, holder.id, '?code=forbidden')).map((e) => e.status), [403])
  assert.deepEqual((await adminLog(h, holder.id, '?operationId=listPets')).map((e) => e.status), [401, 200])
  const first = await h.call({ method: 'GET', url: `/v1/admin/keys/${holder.id}/requests?status=4xx&limit=2` })
  assert.deepEqual(first.json<Item[]>().map((e) => e.status), [401, 401])
  const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1]
  assert.ok(next !== undefined, 'a next page')
  const second = await h.call({ method: 'GET', url: next.slice(next.indexOf('/v1/')) })
  assert.equal(second.statusCode, 200)
  assert.deepEqual(second.json<Item[]>().map((e) => e.status), [403], 'the filter kept across pages')
  assert.equal(second.headers.link, undefined)

  // A key without requests has an empty log; an id no key has is 404.
  const quiet = await h.makeKey('staff')
  assert.deepEqual(await adminLog(h, quiet.id), [])
  const unknown = await h.call({ method: 'GET', url: '/v1/admin/keys/999999/requests' })
  assert.equal(unknown.statusCode, 404)
  assert.equal(unknown.json().code, 'not_found')
  assert.equal((await h.call({ method: 'GET', url: `/v1/admin/keys/${other.id}/requests?colour=red` })).statusCode, 400)
})

test('the admin read is the admin\'s: a staff key is 403 forbidden, an admin key without keys:admin 403 insufficient_scope; each read is charged', async (t) => {
  const h = await buildTestApp(t)
  const holder = await h.makeKey('customer')
  const staff = await h.call({ method: 'GET', url: `/v1/admin/keys/${holder.id}/requests`, role: 'staff' })
  assert.equal(staff.statusCode, 403)
  assert.equal(staff.json().code, 'forbidden')
  const made = await h.call({ method: 'POST', url: '/v1/admin/keys', payload: { role: 'admin', plan: 'pro', scopes: ['catalog:read'] } })
  assert.equal(made.statusCode, 201, made.body)
  const narrow = await h.call({ method: 'GET', url: `/v1/admin/keys/${holder.id}/requests`, key: made.json().key })
  assert.equal(narrow.statusCode, 403)
  assert.equal(narrow.json().code, 'insufficient_scope')

  const admin = await h.makeKey('admin', 'enterprise', { perMinute: 2, perDay: 1000 })
  const url = `/v1/admin/keys/${holder.id}/requests`
  const reads = [await h.call({ method: 'GET', url, key: admin.key }), await h.call({ method: 'GET', url, key: admin.key })]
  assert.deepEqual(reads.map((r) => [r.statusCode, r.headers['x-ratelimit-remaining']]), [[200, '1'], [200, '0']])
  const third = await h.call({ method: 'GET', url, key: admin.key })
  assert.equal(third.statusCode, 429)
  assert.equal(third.json().code, 'rate_limited')
})

test('a portal change refused for its CSRF token is in the key\'s log with rule portal and its code; a session ended by revocation with rule key', async (t) => {
  const h = await listenTestApp(t)
  const origin = h.baseUrl.slice(0, -'/v1'.length)
  const holder = await h.makeKey('customer')
  const made = await h.call({ method: 'POST', url: `/v1/admin/keys/${holder.id}/portal` })
  assert.equal(made.statusCode, 201, made.body)
  const url: string = made.json().url
  const opened = await fetch(`${origin}/portal/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ link: decodeURIComponent(url.slice(url.indexOf('#link=') + 6)) })
  })
  assert.equal(opened.status, 201)
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!
  const csrf = ((await opened.json()) as { csrfToken: string }).csrfToken

  const order = (token: string | null): Promise<Response> => fetch(`${origin}/portal/api/v1/store/orders`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', ...(token !== null && { 'x-csrf-token': token }) },
    body: JSON.stringify({ petId: 1, quantity: 1 })
  })
  const without = await order(null)
  assert.equal(without.status, 403)
  const withoutBody = (await without.json()) as { code: string; message: string }
  assert.equal(withoutBody.code, 'csrf_token_invalid')
  const wrong = await order('x'.repeat(csrf.length))
  assert.equal(wrong.status, 403)

  // The holder's own read finds it by its Request-Id; the operator's read too.
  const requestId = without.headers.get('request-id')!
  const own = await h.call({ method: 'GET', url: `/v1/keys/me/requests?requestId=${requestId}`, key: holder.key })
  const [entry] = own.json<Item[]>()
  assert.ok(entry !== undefined, 'the refusal is in the key\'s log')
  assert.deepEqual([entry.route, entry.status, entry.code, entry.via], ['/v1/store/orders', 403, 'csrf_token_invalid', 'portal'])
  assert.deepEqual(entry.refusal, { rule: 'portal', message: withoutBody.message, code: 'csrf_token_invalid' })
  assert.deepEqual((await adminLog(h, holder.id, '?code=csrf_token_invalid')).map((e) => e.refusal?.rule), ['portal', 'portal'])

  // Revoked: the session's 401 portal_session_ended is the key's refusal, read by the operator alone.
  assert.equal((await h.call({ method: 'DELETE', url: `/v1/admin/keys/${holder.id}` })).statusCode, 204)
  const ended = await fetch(`${origin}/portal/api/v1/keys/me`, { headers: { cookie } })
  assert.equal(ended.status, 401)
  assert.equal(((await ended.json()) as { code: string }).code, 'portal_session_ended')
  const [gone] = await adminLog(h, holder.id, `?requestId=${ended.headers.get('request-id')!}`)
  assert.deepEqual([gone?.code, gone?.via, gone?.refusal?.rule, gone?.refusal?.state], ['portal_session_ended', 'portal', 'key', 'revoked'])
})
